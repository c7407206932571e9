// Pod Security Admission, baseline check `sysctls` (policy/check_sysctls.go): exact-name
// membership in the allowed set of the policy version; no normalisation, no host flags.
import { describe, KubenodeTypeError } from '../errors.js';
import { podSysctls, sysctlNames } from './pod.js';
import type { PodLike } from './types.js';

const ADDED: ReadonlyArray<readonly [number, readonly string[]]> = [
  [
    0,
    [
      'kernel.shm_rmid_forced',
      'net.ipv4.ip_local_port_range',
      'net.ipv4.tcp_syncookies',
      'net.ipv4.ping_group_range',
      'net.ipv4.ip_unprivileged_port_start',
    ],
  ],
  [27, ['net.ipv4.ip_local_reserved_ports']],
  [
    29,
    [
      'net.ipv4.tcp_keepalive_time',
      'net.ipv4.tcp_fin_timeout',
      'net.ipv4.tcp_keepalive_intvl',
      'net.ipv4.tcp_keepalive_probes',
    ],
  ],
  [32, ['net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem']],
  [37, ['net.ipv4.tcp_slow_start_after_idle', 'net.ipv4.tcp_notsent_lowat']],
];

export interface CheckResult {
  allowed: boolean;
  forbiddenReason?: string;
  forbiddenDetail?: string;
}

/** PSA policy version: `latest` or `v1.<minor>`; returns the minor (Infinity for latest). */
export function parsePolicyVersion(version: string): number {
  if (version === 'latest') return Number.POSITIVE_INFINITY;
  const m = typeof version === 'string' ? /^v1\.(0|[1-9][0-9]*)$/.exec(version) : null;
  if (!m)
    throw new KubenodeTypeError(`policy version must be "latest" or "v1.<minor>", got ${describe(version)}`);
  return Number(m[1]);
}

/** Sysctls the baseline level allows at `version`. */
export function baselineAllowedSysctls(version: string): string[] {
  const minor = parsePolicyVersion(version);
  return ADDED.filter(([v]) => v <= minor).flatMap(([, names]) => names);
}

/** The baseline `sysctls` check of a pod at a policy version. */
export function checkBaseline(pod: PodLike, version: string): CheckResult {
  const allowed = new Set(baselineAllowedSysctls(version));
  const { sysctls } = podSysctls(pod);
  const forbidden = sysctls === null ? [] : sysctlNames(sysctls).filter((n) => !allowed.has(n));
  if (forbidden.length === 0) return { allowed: true };
  return { allowed: false, forbiddenReason: 'forbidden sysctls', forbiddenDetail: forbidden.join(', ') };
}
