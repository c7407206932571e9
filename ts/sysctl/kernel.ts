// Kernel-gated safe sysctl list (pkg/kubelet/sysctl/safe_sysctls.go).
import { assertString, callNative } from '../errors.js';
import { native } from '../native.js';

export interface SafeSysctlRow {
  name: string;
  /** Minimum kernel where it is namespaced; undefined = always safe. */
  minKernel?: string;
  /** Kubernetes release that made it safe. */
  since: string;
}

/** The whole table, in upstream order, with its kernel gates. */
export function safeSysctlTable(): SafeSysctlRow[] {
  return native.sysctlSafeTable().map((r) => ({
    name: r.name,
    ...(r.minKernel ? { minKernel: r.minKernel } : {}),
    since: r.since,
  }));
}

/**
 * `ParseGeneric` components of a kernel release (`5.15.0-75-generic` → [5, 15, 0]). Throws
 * `ERR_KUBENODE_PARSE` with upstream's text for strings it cannot parse.
 */
export function parseKernelVersion(version: string): number[] {
  assertString('kernelVersion', version);
  return callNative(() => native.sysctlParseKernelVersion(version));
}

export interface SafeSysctlList {
  names: string[];
  /** Kernel used (dotted numeric components); undefined when detection failed. */
  kernel?: string;
  /** Why detection failed; upstream then keeps only the ungated rows. */
  kernelError?: string;
}

/** Safe list with details (kernel used, detection error). */
export function safeSysctlList(kernelVersion?: string): SafeSysctlList {
  if (kernelVersion !== undefined) assertString('kernelVersion', kernelVersion);
  const r = callNative(() => native.sysctlSafeAllowlist(kernelVersion));
  return {
    names: r.names,
    ...(r.kernel ? { kernel: r.kernel } : {}),
    ...(r.kernelError ? { kernelError: r.kernelError } : {}),
  };
}

/**
 * `SafeSysctlAllowlist()`: for `kernelVersion`, or the running kernel (read from
 * `/proc/sys/kernel/osrelease`; if that fails, only the ungated rows, like upstream).
 * Returns [] on non-Linux platforms, as upstream does.
 */
export function safeSysctlAllowlist(kernelVersion?: string): string[] {
  if (kernelVersion === undefined && process.platform !== 'linux') return [];
  return safeSysctlList(kernelVersion).names;
}
