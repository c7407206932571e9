// The kubelet's admission rejection counter (pkg/kubelet/metrics `admission_rejections_total`,
// recorded by `recordAdmissionRejection`) under its own name, plus the admit chain's latency.
import type { Counter, Histogram, Registry } from 'prom-client';
import { perRegistry } from '../metrics-registry.js';
import { promClient } from '../peers.js';

/** Name of the counter of rejected pods by reason (the kubelet's own name). */
export const ADMISSION_REJECTIONS_TOTAL = 'kubelet_admission_rejections_total';
/** Name of the histogram of the admit chain's time per pod. */
export const ADMIT_DURATION = 'kubenode_pod_admit_duration_seconds';

/** Buckets from 1 µs (an in-process sysctl check) to 1 s (a slow async handler). */
export const ADMIT_BUCKETS: readonly number[] = [
  0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
  0.01, 0.025, 0.1, 1,
];

/**
 * The reasons the kubelet records as they are (its `admissionRejectionReasons`); any other
 * reason is `OutOfExtendedResources` when it starts with `OutOf`, else `Other`, which keeps the
 * label's values few whatever handlers report.
 */
export const ADMISSION_REJECTION_REASONS: ReadonlySet<string> = new Set([
  'AppArmor',
  'PodOSSelectorNodeLabelDoesNotMatch',
  'PodOSNotSupported',
  'InvalidNodeInfo',
  'InitContainerRestartPolicyForbidden',
  'SupplementalGroupsPolicyNotSupported',
  'UnexpectedAdmissionError',
  'UnknownReason',
  'UnexpectedPredicateFailureType',
  'OutOfcpu',
  'OutOfmemory',
  'OutOfephemeral-storage',
  'OutOfpods',
  'PodLevelResourcesNotSupported',
  'PodFeatureUnsupported',
  "node(s) had taints that the pod didn't tolerate",
  'Evicted',
  'SysctlForbidden',
  'TopologyAffinityError',
  'NodeShutdown',
  'VolumeAttachmentLimitExceeded',
]);

/** The `reason` label the kubelet records for a rejection's reason. */
export function rejectionReasonLabel(reason: string | undefined): string {
  const r = reason ?? '';
  if (ADMISSION_REJECTION_REASONS.has(r)) return r;
  return r.startsWith('OutOf') ? 'OutOfExtendedResources' : 'Other';
}

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
export function admitMetrics(registry: Registry): AdmitMetrics {
  return make(registry, 'registry');
}
