// Read-only views of a pods directory and the kubelet's `userns` file format.
import type { UsernsLayout as Layout } from '../binding.js';
import { assertNumber, assertString, awaitNative, callNative, outcomeValue } from '../errors.js';
import { native } from '../native.js';

// The pool cut into slots: the binding's shape, documented where the binding declares it.
export type { Layout };

/** One pod directory with a `userns` file, as `listPods` reports it. */
export interface ListedPod {
  /** Pod UID (the directory name). */
  pod: string;
  /** First host ID of the pod's range; null when the file is bad. */
  hostId: number | null;
  /** Number of IDs in the range; null when the file is bad. */
  length: number | null;
  /** Upstream's parse error for a bad file. */
  error: string | null;
}

/** Every pod with a `userns` file, sorted by UID, without locking or changing anything. */
export async function listPods(podsDir: string): Promise<ListedPod[]> {
  assertString('podsDir', podsDir);
  const pods = outcomeValue(await awaitNative(native.usernsList(podsDir)));
  return pods.map((p) => ({
    pod: p.pod,
    hostId: p.hostId ?? null,
    length: p.length ?? null,
    error: p.error ?? null,
  }));
}

/** The exact bytes the kubelet writes for a range (Go `json.Marshal`). */
export function encodeFile(hostId: number, length: number): string {
  assertNumber('hostId', hostId);
  assertNumber('length', length);
  return callNative(() => native.usernsEncodeFile(hostId, length));
}

/** Upstream's decode and checks on a file's content; throws upstream's text. */
export function parseFile(content: Uint8Array | string): {
  /** First host ID of the range. */
  hostId: number;
  /** Number of IDs in the range. */
  length: number;
} {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  const [hostId = 0, length = 0] = callNative(() => native.usernsParseFile(bytes));
  return { hostId, length };
}

/** Upstream's configuration checks alone: slots and offset, or the error. */
export function layout(idsPerPod: number, firstId: number, length: number, maxPods: number): Layout {
  for (const [n, v] of [
    ['idsPerPod', idsPerPod],
    ['firstId', firstId],
    ['length', length],
    ['maxPods', maxPods],
  ] as const) {
    assertNumber(n, v);
  }
  return callNative(() => native.usernsLayout({ idsPerPod, firstId, length, maxPods }));
}
