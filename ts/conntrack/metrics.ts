// kube-proxy's conntrack reconciler metrics (pkg/proxy/metrics) with the same help texts (with
// component-base's stability prefix), labels and buckets, under kubenode's own prefix: a node
// running kube-proxy too would otherwise export two series of one name. Then what kube-proxy
// has no metric for: the path each pass took and the passes that failed.
import type { Counter, Histogram, Registry } from 'prom-client';
import { describe, KubenodeTypeError } from '../errors.js';
import { restartCounter } from '../kube/restart-metric.js';
import { promClient } from '../peers.js';

/** Name of the histogram of pass durations (kube-proxy's `ReconcileConntrackFlowsLatency`). */
export const SYNC_DURATION = 'kubenode_conntrack_reconciler_sync_duration_seconds';
/** Name of the counter of deleted flows (kube-proxy's `ReconcileConntrackFlowsDeletedEntriesTotal`). */
export const DELETED_TOTAL = 'kubenode_conntrack_reconciler_deleted_entries_total';
/**
 * Name of the counter of passes by the path they took (`full`, `targeted`, `unchanged`,
 * `indexed`).
 */
export const PASSES_TOTAL = 'kubenode_conntrack_reconciler_passes_total';
/** Name of the counter of passes that failed (and are retried at the next period). */
export const FAILED_PASSES_TOTAL = 'kubenode_conntrack_reconciler_failed_passes_total';
/** Name of the counter of pod IPs the opt-in purge ran for (failures included). */
export const PURGED_POD_IPS_TOTAL = 'kubenode_conntrack_reconciler_purged_pod_ips_total';
/** Name of the counter of flows the opt-in pod-IP purge deleted. */
export const PURGED_ENTRIES_TOTAL = 'kubenode_conntrack_reconciler_purged_entries_total';

/** `metrics.ExponentialBuckets(0.001, 2, 15)`: 0.001 … 16.384 s. */
export const SYNC_BUCKETS: readonly number[] = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);

/** The conntrack reconciler's metrics, labelled by `ip_family` (`IPv4`/`IPv6`). */
export interface ConntrackMetrics {
  /** Duration of each cleanup pass, in seconds (`SYNC_DURATION`). */
  syncDuration: Histogram<'ip_family'>;
  /** Flows deleted by cleanup passes (`DELETED_TOTAL`). */
  deletedEntries: Counter<'ip_family'>;
  /** Cleanup passes by the path they took (`PASSES_TOTAL`); the reconciler records them. */
  passes?: Counter<'ip_family' | 'path'>;
  /** Cleanup passes that failed (`FAILED_PASSES_TOTAL`); the reconciler records them. */
  failedPasses?: Counter<'ip_family'>;
  /**
   * Pod IPs the opt-in purge ran for (`PURGED_POD_IPS_TOTAL`), a purge with failures included;
   * the reconciler records them.
   */
  purgedPodIps?: Counter<'ip_family'>;
  /**
   * Flows the opt-in pod-IP purge deleted, not counting those already gone
   * (`PURGED_ENTRIES_TOTAL`); the reconciler records them.
   */
  purgedEntries?: Counter<'ip_family'>;
}

const byRegistry = new WeakMap<Registry, ConntrackMetrics>();

/**
 * The metrics, registered once per registry. There is no default: an embedding agent's
 * registry is its own, so kubenode registers nothing until told where (pass prom-client's
 * global `register` to get upstream's process-wide behaviour).
 */
export function conntrackMetrics(registry: Registry): ConntrackMetrics {
  if (typeof registry !== 'object' || registry === null || typeof registry.registerMetric !== 'function') {
    throw new KubenodeTypeError(`registry must be a prom-client Registry, got ${describe(registry)}`);
  }
  const { Counter, Histogram } = promClient();
  const existing = byRegistry.get(registry);
  if (existing) return existing;
  const m: ConntrackMetrics = {
    syncDuration: new Histogram({
      name: SYNC_DURATION,
      help: '[ALPHA] ReconcileConntrackFlowsLatency latency in seconds',
      labelNames: ['ip_family'],
      buckets: [...SYNC_BUCKETS],
      registers: [registry],
    }),
    deletedEntries: new Counter({
      name: DELETED_TOTAL,
      help: '[ALPHA] Cumulative conntrack flows deleted by conntrack reconciler',
      labelNames: ['ip_family'],
      registers: [registry],
    }),
    passes: new Counter({
      name: PASSES_TOTAL,
      help:
        'Cleanup passes of the conntrack reconciler by the path they took ' +
        '(full, targeted, unchanged, indexed)',
      labelNames: ['ip_family', 'path'],
      registers: [registry],
    }),
    failedPasses: new Counter({
      name: FAILED_PASSES_TOTAL,
      help: 'Cleanup passes of the conntrack reconciler that failed (retried at the next period)',
      labelNames: ['ip_family'],
      registers: [registry],
    }),
    purgedPodIps: new Counter({
      name: PURGED_POD_IPS_TOTAL,
      help: 'Pod IPs gone from every EndpointSlice the opt-in purge ran for, failures included',
      labelNames: ['ip_family'],
      registers: [registry],
    }),
    purgedEntries: new Counter({
      name: PURGED_ENTRIES_TOTAL,
      help:
        'Flows the opt-in pod-IP purge deleted, in any protocol, not counting flows already gone ' +
        '(nor a kernel-side flush, which reports no count)',
      labelNames: ['ip_family'],
      registers: [registry],
    }),
  };
  byRegistry.set(registry, m);
  return m;
}

/** Name of the counter of watch restarts (a Services or EndpointSlices watch that failed). */
export const WATCH_RESTARTS_TOTAL = 'kubenode_conntrack_reconciler_watch_restarts_total';

/** Registers the watch restart counter on `registry`, read from `restarts()` at scrape time. */
export function watchRestartsMetric(registry: Registry, restarts: () => number): void {
  restartCounter(
    registry,
    WATCH_RESTARTS_TOTAL,
    'Restarts of failed Service and EndpointSlice watches of the conntrack reconciler',
    restarts,
  );
}
