// kube-proxy's CleanStaleEntries: the whole list → match → delete pass runs in Rust in one call;
// only the service/endpoint tables cross the boundary, and Rust checks them.
import { performance } from 'node:perf_hooks';
import { assertString, describe, KubenodeTypeError, outcomeOrThrow } from '../errors.js';
import { Conntrack, handleOf } from './client.js';
import { conntrackError } from './errors.js';
import type { ConntrackMetrics } from './metrics.js';
import {
  type EndpointsTable,
  type IPFamily,
  nativeServices,
  type ServiceEntry,
  validateTables,
} from './tables.js';

/** Options of `cleanStaleEntries`. */
export interface CleanOptions {
  /** Select stale flows but delete nothing (no metrics are recorded). */
  dryRun?: boolean;
  /**
   * Where to record kube-proxy's metrics (`conntrackMetrics(registry)`). Default: none, so
   * nothing lands in prom-client's global registry unless the caller asks for it.
   */
  metrics?: ConntrackMetrics | null;
}

/** What one `cleanStaleEntries` pass did. */
export interface CleanResult {
  /** Entries listed (the kernel-filtered UDP table of this family). */
  listed: number;
  /** Flows selected as stale. */
  stale: number;
  /** Deleted now or already gone (ENOENT), as kube-proxy counts. */
  deleted: number;
  /** Of `deleted`, the flows that were already gone. */
  notFound: number;
  /** Stale flows the kernel refused to delete. */
  failed: number;
  /** The dump stayed interrupted after 5 attempts and the pass used the partial list. */
  partial: boolean;
  /** Dump attempts made (more than 1 when the kernel interrupted a dump). */
  attempts: number;
  /** Wall time of the pass, in seconds (what `sync_duration` records). */
  seconds: number;
  /** The first failed delete's message, when any failed. */
  firstError?: string;
}

/**
 * Deletes the UDP conntrack entries of `family` that point at endpoints no longer serving,
 * with upstream's rules. A listing failure throws (and records no metric, like upstream); a
 * failed delete is counted in `failed` and never stops the rest of the batch.
 */
export async function cleanStaleEntries(
  ct: Conntrack,
  family: IPFamily,
  services: ServiceEntry[],
  endpoints: EndpointsTable,
  options: CleanOptions = {},
): Promise<CleanResult> {
  const start = performance.now();
  if (!(ct instanceof Conntrack)) {
    throw new KubenodeTypeError(`ct must be a Conntrack handle, got ${describe(ct)}`);
  }
  assertString('family', family);
  validateTables(services, endpoints);
  let task: ReturnType<ReturnType<typeof handleOf>['cleanStale']>;
  try {
    task = handleOf(ct).cleanStale(family, nativeServices(services), endpoints, options.dryRun ?? false);
  } catch (e) {
    throw conntrackError(e);
  }
  const o = outcomeOrThrow(await task);
  const seconds = (performance.now() - start) / 1000;
  if (!options.dryRun) {
    const m = options.metrics;
    if (m) {
      m.syncDuration.observe({ ip_family: family }, seconds);
      m.deletedEntries.inc({ ip_family: family }, o.deleted);
    }
  }
  return {
    listed: o.listed,
    stale: o.stale,
    deleted: o.deleted,
    notFound: o.notFound,
    failed: o.failed,
    partial: o.partial,
    attempts: o.attempts,
    seconds,
    ...(o.firstError ? { firstError: o.firstError } : {}),
  };
}
