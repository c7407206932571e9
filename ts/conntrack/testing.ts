// Test and benchmark hooks on a Conntrack handle. Not part of the public API: the package's
// entry points do not export this module; the repository's tests and benches import it directly.
import type { Conntrack as NativeConntrack } from '../binding.js';
import { assertString, describe, KubenodeTypeError, outcomeOrThrow } from '../errors.js';
import { type Conntrack, type Flow, handleOf, toNativeFlow } from './client.js';
import { conntrackError } from './errors.js';
import type { IPFamily } from './tables.js';

/** Fault injection for tests of the recovery paths (see the crate's `Faults`). */
export interface Faults {
  recvEintr?: number;
  recvEnobufs?: number;
  dumpIntr?: number;
  trunc?: number;
}

/** Creates entries; returns how many the kernel accepted. */
export async function createEntries(
  ct: Conntrack,
  family: IPFamily,
  flows: Flow[],
): Promise<{ created: number; failed: number; firstError?: string }> {
  assertString('family', family);
  if (!Array.isArray(flows)) throw new KubenodeTypeError(`flows must be an array, got ${describe(flows)}`);
  const nf = flows.map((f, i) => toNativeFlow(f, i));
  let task: ReturnType<NativeConntrack['create']>;
  try {
    task = handleOf(ct).create(family, nf);
  } catch (e) {
    throw conntrackError(e);
  }
  const o = outcomeOrThrow(await task);
  return {
    created: o.ok,
    failed: o.failed + o.notFound,
    ...(o.firstError ? { firstError: o.firstError } : {}),
  };
}

/** Arms faults on the handle; throws a `KubenodeError` (ERR_KUBENODE_CONFLICT) while an operation runs. */
export function injectFaults(ct: Conntrack, faults: Faults): void {
  let e: ReturnType<NativeConntrack['injectFaults']>;
  try {
    e = handleOf(ct).injectFaults(faults);
  } catch (thrown) {
    throw conntrackError(thrown);
  }
  if (e) throw conntrackError(e);
}
