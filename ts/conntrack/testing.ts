// Test and benchmark hooks on a Conntrack handle. Not part of the public API: the package's
// entry points do not export this module; the repository's tests and benches import it directly.
import type { ConntrackFault, Conntrack as NativeConntrack, NativeError } from '../binding.js';
import { type Conntrack, type Flow, flowBatch, handleOf } from './client.js';
import { conntrackError } from './errors.js';
import type { IPFamily } from './tables.js';

/** Fault injection for tests of the recovery paths (see the crate's `Faults`). */
export interface Faults {
  recvEintr?: number;
  recvEnobufs?: number;
  dumpIntr?: number;
  trunc?: number;
  /** Pins `cleanStaleEntries`' choice: `true` takes the targeted path whenever the handle may. */
  preferTargeted?: boolean;
}

/** Creates entries; returns how many the kernel accepted. */
export async function createEntries(
  ct: Conntrack,
  family: IPFamily,
  flows: Flow[],
): Promise<{ created: number; failed: number; firstError?: string }> {
  const o = await flowBatch(ct, 'create', family, flows);
  return {
    created: o.ok,
    failed: o.failed + o.notFound,
    ...(o.firstError ? { firstError: o.firstError } : {}),
  };
}

/** The fault kinds `Faults` arms, each set (or disarmed) on every call. */
const FAULT_KINDS: readonly `${ConntrackFault}`[] = ['recvEintr', 'recvEnobufs', 'dumpIntr', 'trunc'];

/** Arms faults on the handle; throws a `KubenodeError` (ERR_KUBENODE_CONFLICT) while an operation runs. */
export function injectFaults(ct: Conntrack, faults: Faults): void {
  // The pin goes first: a busy handle refuses it before any count changes.
  const calls: Array<(n: NativeConntrack) => NativeError | null> = [
    (n) => n.pinCostChoice(faults.preferTargeted),
    ...FAULT_KINDS.map((kind) => (n: NativeConntrack) => n.injectFault(kind, faults[kind] ?? 0)),
  ];
  for (const call of calls) {
    let e: NativeError | null;
    try {
      e = call(handleOf(ct));
    } catch (thrown) {
      throw conntrackError(thrown);
    }
    if (e) throw conntrackError(e);
  }
}
