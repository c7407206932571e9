// Pod Security Admission, baseline check `sysctls` (policy/check_sysctls.go): exact-name
// membership in the allowed set of the policy version; no normalisation, no host flags. The
// sets per version come from the core's safe-sysctl table.
import { callNative, describe, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { podSysctls, sysctlNames } from './pod.js';
import type { PodLike } from './types.js';

/** Result of a Pod Security check (`policy.CheckResult`). */
export interface CheckResult {
  /** False when the pod sets a sysctl outside the baseline's allowed set. */
  allowed: boolean;
  /** `forbidden sysctls` when not allowed, as upstream. */
  forbiddenReason?: string;
  /** The forbidden names, comma-separated, in the pod's order. */
  forbiddenDetail?: string;
}

function policyVersion(version: string): string {
  if (typeof version !== 'string') {
    throw new KubenodeTypeError(`policy version must be "latest" or "v1.<minor>", got ${describe(version)}`);
  }
  return version;
}

/** PSA policy version: `latest` or `v1.<minor>`; returns the minor (Infinity for latest). */
export function parsePolicyVersion(version: string): number {
  const v = policyVersion(version);
  // Validated by the core, which owns the format.
  callNative(() => native.sysctlBaselineAllowlist(v));
  return v === 'latest' ? Number.POSITIVE_INFINITY : Number(v.slice(3));
}

/** Sysctls the baseline level allows at `version`. */
export function baselineAllowedSysctls(version: string): string[] {
  const v = policyVersion(version);
  return callNative(() => native.sysctlBaselineAllowlist(v));
}

/** The baseline `sysctls` check of a pod at a policy version. */
export function checkBaseline(pod: PodLike, version: string): CheckResult {
  const allowed = new Set(baselineAllowedSysctls(version));
  const { sysctls } = podSysctls(pod);
  const forbidden = sysctls === null ? [] : sysctlNames(sysctls).filter((n) => !allowed.has(n));
  if (forbidden.length === 0) return { allowed: true };
  return { allowed: false, forbiddenReason: 'forbidden sysctls', forbiddenDetail: forbidden.join(', ') };
}
