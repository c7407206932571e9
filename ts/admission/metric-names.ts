// Names, buckets and reason labels of the admit chain's metrics: no prom-client here, so the
// admission typings need no optional peer.

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
