// Pod Security Admission, baseline check `sysctls` (policy/check_sysctls.go): exact-name
// membership in the allowed set of the policy version; no normalisation, no host flags. The
// check, its texts and the sets per version are the core's (`baseline.rs`, `safe.rs`).
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
  return callNative(() => native.sysctlParsePolicyVersion(v)) ?? Number.POSITIVE_INFINITY;
}

/** Sysctls the baseline level allows at `version`. */
export function baselineAllowedSysctls(version: string): string[] {
  const v = policyVersion(version);
  return callNative(() => native.sysctlBaselineAllowlist(v));
}

/** The baseline `sysctls` check of a pod at a policy version. */
export function checkBaseline(pod: PodLike, version: string): CheckResult {
  const v = policyVersion(version);
  let names: string[];
  try {
    const { sysctls } = podSysctls(pod);
    names = sysctls === null ? [] : sysctlNames(sysctls);
  } catch (e) {
    // A bad policy version is reported before a malformed pod.
    callNative(() => native.sysctlParsePolicyVersion(v));
    throw e;
  }
  const r = callNative(() => native.sysctlCheckBaseline(names, v));
  if (r.allowed) return { allowed: true };
  return {
    allowed: false,
    ...(r.forbiddenReason != null ? { forbiddenReason: r.forbiddenReason } : {}),
    ...(r.forbiddenDetail != null ? { forbiddenDetail: r.forbiddenDetail } : {}),
  };
}
