// The kubelet's admission rejection counter (pkg/kubelet/metrics `admission_rejections_total`,
// recorded by `recordAdmissionRejection`) under its own name, plus the admit chain's latency.
import type { Counter, Histogram, Registry } from 'prom-client';
import { type MetricsRegistry, perRegistry } from '../metrics-registry.js';
import { promClient } from '../peers.js';
import {
  ADMISSION_REJECTIONS_TOTAL,
  ADMIT_BUCKETS,
  ADMIT_DURATION,
  rejectionReasonLabel,
} from './metric-names.js';

/** The admit chain's metrics in one registry. */
export interface AdmitMetrics {
  /** Rejected pods by `reason` (`ADMISSION_REJECTIONS_TOTAL`). */
  rejections: Counter<'reason'>;
  /** Seconds the chain took per pod, by `result` (`admitted` or `rejected`) (`ADMIT_DURATION`). */
  duration: Histogram<'result'>;
  /** Records one verdict's time and, for a rejection (`rejection` given), its reason. */
  record(seconds: number, rejection?: { reason?: string | undefined }): void;
}

const make = perRegistry((registry: Registry): AdmitMetrics => {
  const { Counter, Histogram } = promClient();
  const rejections = new Counter({
    name: ADMISSION_REJECTIONS_TOTAL,
    help: '[ALPHA] Cumulative number pod admission rejections by the Kubelet.',
    labelNames: ['reason'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: ADMIT_DURATION,
    help: 'Time the pod admit chain took to decide on one pod, in seconds, by result (admitted, rejected)',
    labelNames: ['result'],
    buckets: [...ADMIT_BUCKETS],
    registers: [registry],
  });
  // Label children resolved once: a label lookup per observation nearly doubled an admit's cost.
  const admitted = duration.labels('admitted');
  const rejected = duration.labels('rejected');
  const byReason = new Map<string, Counter.Internal>();
  const record = (seconds: number, rejection?: { reason?: string | undefined }) => {
    if (rejection === undefined) {
      admitted.observe(seconds);
      return;
    }
    rejected.observe(seconds);
    const label = rejectionReasonLabel(rejection.reason);
    let c = byReason.get(label);
    if (c === undefined) {
      c = rejections.labels(label);
      byReason.set(label, c);
    }
    c.inc();
  };
  return { rejections, duration, record };
});

/**
 * The admit chain's metrics in `registry`, registered once per registry (chains sharing a
 * registry share them).
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `registry` is not a prom-client Registry.
 */
export function admitMetrics(registry: MetricsRegistry): AdmitMetrics {
  return make(registry, 'registry');
}
