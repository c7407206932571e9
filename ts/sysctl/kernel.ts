// Kernel-gated safe sysctl list (pkg/kubelet/sysctl/safe_sysctls.go).
import { assertString, callNative, describe, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';

/** One row of upstream's safe-sysctl table. */
export interface SafeSysctlRow {
  /** Sysctl name. */
  name: string;
  /** Minimum kernel where it is namespaced; undefined = always safe. */
  minKernel?: string;
  /** Kubernetes release that made it safe (`1.<minor>`). */
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

/** Options of the safe list. */
export interface SafeSysctlOptions {
  /**
   * Kubernetes release whose list to use (`v1.36`, `1.37`, `v1.36.3`); default: the newest
   * kubenode knows (v1.37). A v1.36 kubelet lacks two rows v1.37 has, so a node on v1.36
   * must be judged with v1.36's list.
   */
  kubernetesVersion?: string;
}

/** Result of `safeSysctlList`: the safe list and how it was chosen. */
export interface SafeSysctlList {
  /** The safe sysctls for that release and kernel, upstream's order. */
  names: string[];
  /** Kubernetes release the list is for (`v1.<minor>`). */
  kubernetesVersion: string;
  /** Kernel used (dotted numeric components); undefined when detection failed. */
  kernel?: string;
  /** Why detection failed; upstream then keeps only the ungated rows. */
  kernelError?: string;
}

/** The `kubernetesVersion` of an options object, type-checked; undefined when not given. */
export function kubernetesVersionOf(options: SafeSysctlOptions | undefined): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) {
    throw new KubenodeTypeError(`options must be an object, got ${describe(options)}`);
  }
  const v = options.kubernetesVersion;
  if (v !== undefined) assertString('kubernetesVersion', v);
  return v;
}

/** Safe list with details (Kubernetes release and kernel used, detection error). */
export function safeSysctlList(kernelVersion?: string, options?: SafeSysctlOptions): SafeSysctlList {
  if (kernelVersion !== undefined) assertString('kernelVersion', kernelVersion);
  const k8s = kubernetesVersionOf(options);
  const r = callNative(() => native.sysctlSafeAllowlist(kernelVersion, k8s));
  return {
    names: r.names,
    kubernetesVersion: r.kubernetesVersion,
    ...(r.kernel ? { kernel: r.kernel } : {}),
    ...(r.kernelError ? { kernelError: r.kernelError } : {}),
  };
}

/**
 * `SafeSysctlAllowlist()` of a Kubernetes release (default: the newest kubenode knows): for
 * `kernelVersion`, or the running kernel (read from `/proc/sys/kernel/osrelease`; if that fails,
 * only the ungated rows, like upstream). Returns [] on non-Linux platforms, as upstream does.
 */
export function safeSysctlAllowlist(kernelVersion?: string, options?: SafeSysctlOptions): string[] {
  if (kernelVersion === undefined && process.platform !== 'linux') {
    kubernetesVersionOf(options);
    return [];
  }
  return safeSysctlList(kernelVersion, options).names;
}
