// Test and benchmark hooks on a Conntrack handle. Not part of the public API: the package's
// entry points do not export this module; the repository's tests and benches import it directly.
import type { Conntrack as NativeConntrack } from '../binding.js';
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
