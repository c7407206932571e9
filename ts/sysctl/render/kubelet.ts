// The kubelet side of a rendered policy: the allowlist a node would build (safe list for the
// kernel and Kubernetes version plus `--allowed-unsafe-sysctls`), built by the native code so
// the rendered CEL and the in-process `SysctlAllowlist` come from one source.
import { newAllowlist, type SysctlAllowlist } from '../allowlist.js';
import { safeSysctlAllowlist } from '../kernel.js';

export interface KubeletAllowlistOptions {
  /** Include the kubelet's safe sysctl list (and its hostNetwork/hostIPC rules). */
  includeSafeSysctls?: boolean;
  /** The kubelet's `--allowed-unsafe-sysctls` (names or patterns ending in `*`). */
  allowedUnsafeSysctls?: readonly string[];
  /** Kernel for the safe list (default: the running kernel). */
  kernelVersion?: string;
  /** Kubernetes release for the safe list (default: the newest known). */
  kubernetesVersion?: string;
}

type SafeList = (kernelVersion?: string, options?: { kubernetesVersion?: string }) => string[];

/** The allowlist the options describe, or null when they ask for no kubelet check. */
export function kubeletAllowlist(options: KubeletAllowlistOptions): SysctlAllowlist | null {
  const unsafe = options.allowedUnsafeSysctls ?? [];
  if (!options.includeSafeSysctls && unsafe.length === 0) return null;
  const safe = options.includeSafeSysctls
    ? (safeSysctlAllowlist as SafeList)(
        options.kernelVersion,
        options.kubernetesVersion === undefined
          ? undefined
          : { kubernetesVersion: options.kubernetesVersion },
      )
    : [];
  return newAllowlist([...safe, ...unsafe]);
}
