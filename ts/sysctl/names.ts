// Name syntax, normalisation and namespaces, computed in Rust with upstream semantics.
import { assertString, callNative } from '../errors.js';
import { native } from '../native.js';
import { kubernetesVersionOf, type SafeSysctlOptions } from './kernel.js';
import type { SysctlNamespace } from './types.js';

export {
  SYSCTL_CONTAIN_SLASH_FMT,
  SYSCTL_CONTAIN_SLASH_PATTERN_FMT,
  SYSCTL_MAX_LENGTH,
} from './name-syntax.js';

/** `IsValidSysctlName`: ≤ 253 bytes and the slash-form regex. */
export function isValidSysctlName(name: string): boolean {
  assertString('name', name);
  return native.sysctlIsValidName(name);
}

/** `IsValidSysctlPattern`: like a name, but may end in `*`. */
export function isValidSysctlPattern(pattern: string): boolean {
  assertString('pattern', pattern);
  return native.sysctlIsValidPattern(pattern);
}

/** `NormalizeName`: slash-first names get `.` and `/` swapped. */
export function normalizeName(name: string): string {
  assertString('name', name);
  return native.sysctlNormalizeName(name);
}

/** Result of `getNamespace`. */
export interface NamespaceInfo {
  /** Namespace of the sysctl, `''` when it is not namespaced. */
  namespace: SysctlNamespace;
  /** Normalised, cut at the first `*` (a trailing dot is kept). */
  name: string;
  /** True when the input was a pattern ending in `*`. */
  prefixed: boolean;
}

/**
 * `GetNamespace` with the namespace tables of a Kubernetes release (`kubernetesVersion`, default:
 * the newest kubenode knows; `kernel.domainname` and `user.*` are namespaced from v1.37).
 */
export function getNamespace(name: string, options?: SafeSysctlOptions): NamespaceInfo {
  assertString('name', name);
  const k8s = kubernetesVersionOf(options);
  const r = callNative(() => native.sysctlGetNamespace(name, k8s));
  return { namespace: r.namespace, name: r.name, prefixed: r.prefixed };
}
