// Kernel proof of a mapping: a process in a new user namespace with the pod's range, uid 0
// inside checked against the host view.
import type { UsernsVerifyReport } from '../binding.js';
import { assertNumber, assertString, awaitNative, callNative, outcomeValue } from '../errors.js';
import { native } from '../native.js';

/** What `verifyMapping`/`verifyRange` saw: the mapping the kernel reports for the new user namespace. */
export type VerifyReport = UsernsVerifyReport;

/** Verifies `<podsDir>/<podUid>/userns` (read with upstream's checks). Needs root. */
export async function verifyMapping(podsDir: string, podUid: string): Promise<VerifyReport> {
  assertString('podsDir', podsDir);
  assertString('podUid', podUid);
  const o = await awaitNative(native.usernsVerifyPod(podsDir, podUid));
  return outcomeValue(o);
}

/** Verifies a raw range `0 → hostId` of `length` IDs. Needs root. */
export async function verifyRange(hostId: number, length: number): Promise<VerifyReport> {
  assertNumber('hostId', hostId);
  assertNumber('length', length);
  const o = await awaitNative(callNative(() => native.usernsVerifyMapping(hostId, length)));
  return outcomeValue(o);
}
