// The opt-in pod-IP purge (Calico's approach): when an address leaves every EndpointSlice, all
// its flows go, in any protocol. Upstream kube-proxy deletes only UDP flows to stale endpoints
// and leaves TCP flows to time out on purpose, so this is off unless asked for. Which
// addresses are gone is the Rust core's rule; this module feeds it and keeps the last state.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { native } from '../native.js';
import type { Conntrack, FilterDeleteResult } from './client.js';
import { conntrackError } from './errors.js';
import type { IPFamily } from './tables.js';

/** What one purge found and did. */
export interface PurgeResult {
  /** Addresses that left every EndpointSlice since the last sync. */
  ips: string[];
  /** The deletion; absent in a dry run. */
  result?: FilterDeleteResult;
}

/** Every endpoint address of the `family` slices, whatever its port or conditions. */
export function sliceAddresses(slices: Iterable<V1EndpointSlice>, family: IPFamily): string[] {
  const out: string[] = [];
  for (const s of slices) {
    if (s.addressType !== family) continue;
    for (const e of s.endpoints ?? []) for (const a of e.addresses ?? []) out.push(a);
  }
  return out;
}

/** The addresses of `family` in `previous` that are in no endpoint of `current` (the core's rule). */
export function goneIps(family: IPFamily, previous: string[], current: string[]): string[] {
  try {
    return native.conntrackGoneIps(family, previous, current);
  } catch (e) {
    throw conntrackError(e);
  }
}

/** Remembers each family's endpoint addresses between syncs and purges the ones that left. */
export class PodIpPurge {
  readonly #last = new Map<IPFamily, string[]>();

  /**
   * Purges the flows of the addresses gone since the last call for `family`. The first call
   * only records (what left before it is unknown). A failed purge keeps the old addresses, so
   * the next call retries it.
   */
  async run(
    ct: Conntrack,
    family: IPFamily,
    slices: Iterable<V1EndpointSlice>,
    dryRun: boolean,
  ): Promise<PurgeResult | undefined> {
    const current = sliceAddresses(slices, family);
    const previous = this.#last.get(family);
    if (previous === undefined) {
      this.#last.set(family, current);
      return undefined;
    }
    const ips = goneIps(family, previous, current);
    if (ips.length === 0) {
      this.#last.set(family, current);
      return undefined;
    }
    const result = dryRun ? undefined : await ct.purgeIps(family, ips);
    this.#last.set(family, current);
    return { ips, ...(result ? { result } : {}) };
  }
}
