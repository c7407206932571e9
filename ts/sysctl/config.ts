// Kubelet startup configuration: `--allowed-unsafe-sysctls` joined with the safe list, as
// NewMainKubelet does; a bad entry is a startup error.
import { assertString } from '../errors.js';
import { newAllowlist, type SysctlAllowlist, SysctlAllowlistError } from './allowlist.js';
import { safeSysctlAllowlist } from './kernel.js';

/** Splits a comma list like pflag's string slice; "" is the empty list. Spaces are kept. */
export function parseAllowedUnsafeSysctls(flagValue: string): string[] {
  assertString('--allowed-unsafe-sysctls', flagValue);
  return flagValue === '' ? [] : flagValue.split(',');
}

/** The kubelet settings `allowlistFromKubeletConfig` reads. */
export interface KubeletSysctlConfig {
  /** `--allowed-unsafe-sysctls` value or the KubeletConfiguration list. */
  allowedUnsafeSysctls?: string | readonly string[];
  /** Kernel version for the safe list; default: the running kernel. */
  kernelVersion?: string;
  /**
   * Kubernetes release of the kubelet, for the safe list and the namespace tables; default: the
   * newest kubenode knows.
   */
  kubernetesVersion?: string;
  /** `defaultPodSysctls` (v1.37, alpha): sysctls the kubelet adds to every pod's sandbox. */
  defaultPodSysctls?: Record<string, string> | null;
  /** `featureGates`; `DefaultPodSysctls` must be true for `defaultPodSysctls`. */
  featureGates?: Record<string, boolean> | null;
}

/** Safe list + allowed unsafe sysctls → allowlist, or a `SysctlAllowlistError` naming the flag. */
export function allowlistFromKubeletConfig(config: KubeletSysctlConfig = {}): SysctlAllowlist {
  const raw = config.allowedUnsafeSysctls ?? [];
  const unsafe = typeof raw === 'string' ? parseAllowedUnsafeSysctls(raw) : [...raw];
  const safe = safeSysctlAllowlist(config.kernelVersion, { kubernetesVersion: config.kubernetesVersion });
  try {
    return newAllowlist([...safe, ...unsafe], { kubernetesVersion: config.kubernetesVersion });
  } catch (e) {
    if (e instanceof SysctlAllowlistError) {
      throw new SysctlAllowlistError(`invalid --allowed-unsafe-sysctls: ${e.message}`, { cause: e });
    }
    throw e;
  }
}
