// kube-proxy's conntrack reconciler metrics (pkg/proxy/metrics), same names, help texts (with
// component-base's stability prefix), label and buckets.
import type { Counter, Histogram, Registry } from 'prom-client';
import { describe, KubenodeTypeError } from '../errors.js';
import { promClient } from '../peers.js';

/** Name of the histogram of pass durations (kube-proxy's `ReconcileConntrackFlowsLatency`). */
export const SYNC_DURATION = 'kubeproxy_conntrack_reconciler_sync_duration_seconds';
/** Name of the counter of deleted flows (kube-proxy's `ReconcileConntrackFlowsDeletedEntriesTotal`). */
export const DELETED_TOTAL = 'kubeproxy_conntrack_reconciler_deleted_entries_total';

/** `metrics.ExponentialBuckets(0.001, 2, 15)`: 0.001 … 16.384 s. */
export const SYNC_BUCKETS: readonly number[] = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);

/** kube-proxy's conntrack reconciler metrics, labelled by `ip_family` (`IPv4`/`IPv6`). */
export interface ConntrackMetrics {
  /** Duration of each cleanup pass, in seconds (`SYNC_DURATION`). */
  syncDuration: Histogram<'ip_family'>;
  /** Flows deleted by cleanup passes (`DELETED_TOTAL`). */
  deletedEntries: Counter<'ip_family'>;
}

const byRegistry = new WeakMap<Registry, ConntrackMetrics>();

/**
 * The two metrics, registered once per registry. There is no default: an embedding agent's
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
  };
  byRegistry.set(registry, m);
  return m;
}
