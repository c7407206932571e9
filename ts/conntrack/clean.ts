// kube-proxy's CleanStaleEntries: the whole pass (full, or targeted at what changed since the
// handle's last successful pass) runs in Rust in one call; only the service/endpoint tables
// cross the boundary, and Rust checks them and chooses the path.
import { performance } from 'node:perf_hooks';
import { assertString, describe, KubenodeTypeError, outcomeValue } from '../errors.js';
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
  /** Select stale flows but delete nothing (no metrics are recorded). Always a full pass. */
  dryRun?: boolean;
  /**
   * Run upstream's full pass even when the handle could take the targeted path (what a
   * periodic resync does, to catch flows that became stale between passes).
   */
  full?: boolean;
  /**
   * Where to record kube-proxy's metrics (`conntrackMetrics(registry)`). Default: none, so
   * nothing lands in prom-client's global registry unless the caller asks for it.
   */
  metrics?: ConntrackMetrics | null;
  /**
   * Kubernetes release whose rules apply (`v1.36`, `v1.37`; default: the newest kubenode knows,
   * v1.37). From v1.37 a UDP service port without serving endpoints loses every flow to its
   * cluster, load-balancer and external IPs (not its node port), and so does a service deleted
   * since the handle's last pass (ahead of upstream); v1.36 keeps both.
   */
  kubernetesVersion?: string;
}

/**
 * Which path a pass took: `full` (upstream's whole-table pass), `targeted` (only what the
 * endpoint diff since the handle's last successful pass made stale), `unchanged` (nothing
 * could have become stale; no request sent) or `indexed` (the stale flows taken from the
 * handle's event index, `enableEventIndex`: no dump, exact deletes).
 */
export type CleanPath = 'full' | 'targeted' | 'unchanged' | 'indexed';

/**
 * Why a full pass ran: `first` pass of the family on the handle, `requested` (`full: true`),
 * `dryRun`, `previousIncomplete` (the last pass failed, was partial or left flows it could not
 * delete), `unsupported` (no filtered flush on this kernel), `cost` (the costs measured on
 * this kernel favour one full pass) or `indexResync` (the event index must be rebuilt: events
 * were lost, or it is over its cap; the pass rebuilds it).
 */
export type FullReason =
  | 'first'
  | 'requested'
  | 'dryRun'
  | 'previousIncomplete'
  | 'unsupported'
  | 'cost'
  | 'indexResync';

/**
 * The estimates (seconds) a cost decision compared: one walk of the table per flush or
 * frontend dump, against the last full pass, both measured on this handle.
 */
export interface CleanEstimate {
  /** The targeted pass. */
  targetedSeconds: number;
  /** One full pass. */
  fullSeconds: number;
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
  /** Which path ran. */
  path: CleanPath;
  /** Why a full pass ran (only when `path` is `full`). */
  fullReason?: FullReason;
  /** The estimates a cost decision compared. */
  estimate?: CleanEstimate;
  /**
   * Removed (frontend, backend) pairs walked on the targeted path, one kernel-filtered dump
   * each; on the indexed path, the pairs found stale in the index.
   */
  pairs: number;
}

/**
 * Deletes the UDP conntrack entries of `family` that point at endpoints no longer serving,
 * with the rules of upstream's release `options.kubernetesVersion`. The first call on a handle runs upstream's full pass; later calls on
 * the same handle delete only what changed since its last successful pass, when that is
 * cheaper on this kernel (see {@link CleanResult.path}). A listing failure throws (and records
 * no metric, like upstream); a failed delete is counted in `failed` and never stops the rest
 * of the batch.
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
  for (const k of ['dryRun', 'full'] as const) {
    const v = options[k];
    if (v !== undefined && typeof v !== 'boolean')
      throw new KubenodeTypeError(`options.${k} must be a boolean, got ${describe(v)}`);
  }
  if (options.kubernetesVersion !== undefined)
    assertString('options.kubernetesVersion', options.kubernetesVersion);
  validateTables(services, endpoints);
  let task: ReturnType<ReturnType<typeof handleOf>['cleanStale']>;
  try {
    task = handleOf(ct).cleanStale(
      family,
      nativeServices(services),
      endpoints,
      options.dryRun ?? false,
      options.full ?? false,
      options.kubernetesVersion,
    );
  } catch (e) {
    throw conntrackError(e);
  }
  const o = outcomeValue(await task, 'conntrack');
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
    // The binding's string enums carry exactly these values.
    path: `${o.path}` as const,
    ...(o.fullReason ? { fullReason: `${o.fullReason}` as const } : {}),
    ...(o.estimate ? { estimate: o.estimate } : {}),
    pairs: o.pairs,
  };
}
