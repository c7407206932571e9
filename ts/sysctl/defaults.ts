// The kubelet's `defaultPodSysctls` (alpha in v1.37, feature gate `DefaultPodSysctls`): the
// configuration check and the per-pod merge the kubelet does when it creates the sandbox. The
// rules and messages are the core's; this module checks shapes.
import { callNative, describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import type { Sysctl } from './annotations.js';
import type { KubeletSysctlConfig } from './config.js';
import { kubernetesVersionOf } from './kernel.js';
import { podSysctls, sysctlName, sysctlValue } from './pod.js';
import type { PodLike } from './types.js';

/** The feature gate that enables `defaultPodSysctls`. */
export const DEFAULT_POD_SYSCTLS_GATE = 'DefaultPodSysctls';

/** A kubelet configuration the kubelet would refuse to start with; `errors` are upstream's texts. */
export class KubeletConfigError extends KubenodeError {
  constructor(
    message: string,
    /** Every configuration error, in the order found. */
    readonly errors: readonly string[],
    options?: { cause?: unknown },
  ) {
    super('ERR_KUBENODE_INVALID_ARG', message, options);
    this.name = 'KubeletConfigError';
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `defaultPodSysctls` as name/value pairs, in the object's order; typed errors for bad shapes. */
export function defaultPodSysctlsOf(config: KubeletSysctlConfig): Sysctl[] {
  if (!isObject(config)) throw new KubenodeTypeError(`config must be an object, got ${describe(config)}`);
  const d = config.defaultPodSysctls;
  if (d === undefined || d === null) return [];
  if (!isObject(d)) {
    throw new KubenodeTypeError(`defaultPodSysctls must be an object of strings, got ${describe(d)}`);
  }
  return Object.entries(d).map(([name, value]) => {
    // The kubelet decodes a map[string]string: a number or boolean value is a decoding error.
    if (typeof value !== 'string') {
      throw new KubenodeTypeError(
        `defaultPodSysctls[${JSON.stringify(name)}] must be a string, got ${describe(value)}`,
      );
    }
    return { name, value };
  });
}

/** The `DefaultPodSysctls` feature gate as set in `featureGates`; undefined when unset. */
function gateOf(config: KubeletSysctlConfig): boolean | undefined {
  const gates = config.featureGates;
  if (gates === undefined || gates === null) return undefined;
  if (!isObject(gates)) throw new KubenodeTypeError(`featureGates must be an object, got ${describe(gates)}`);
  const v = gates[DEFAULT_POD_SYSCTLS_GATE];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') {
    throw new KubenodeTypeError(
      `featureGates.${DEFAULT_POD_SYSCTLS_GATE} must be a boolean, got ${describe(v)}`,
    );
  }
  return v;
}

/**
 * The kubelet's configuration errors for `defaultPodSysctls` (v1.37.2
 * `ValidateKubeletConfiguration`: the feature gate, valid names, known to be namespaced, no
 * duplicate after normalisation), with upstream's texts; [] when the kubelet would start. A
 * v1.36 kubelet (`kubernetesVersion: 'v1.36'`) ignores the field and refuses the gate.
 */
export function validateDefaultPodSysctls(config: KubeletSysctlConfig): string[] {
  const names = defaultPodSysctlsOf(config).map((s) => s.name);
  const gate = gateOf(config);
  const k8s = kubernetesVersionOf(config);
  return callNative(() => native.sysctlValidateDefaultPodSysctls(names, gate, k8s));
}

/**
 * The sysctls the kubelet hands the runtime for `pod`'s sandbox (v1.37.2 `applyPodSysctls`):
 * the node's `defaultPodSysctls` that apply to the pod (`net.*` unless hostNetwork, IPC ones
 * unless hostIPC, `user.*` only with `hostUsers: false`, `kernel.domainname` unless
 * hostNetwork; others dropped), under their normalised names, then the pod's own sysctls, which
 * win. Without the feature gate (or before v1.37), the pod's own only.
 * @throws KubeletConfigError when the configuration is one the kubelet refuses.
 */
export function sandboxSysctls(pod: PodLike, config: KubeletSysctlConfig): Sysctl[] {
  const errors = validateDefaultPodSysctls(config);
  if (errors.length > 0) throw new KubeletConfigError(errors.join('; '), errors);
  const defaults = defaultPodSysctlsOf(config);
  const { sysctls, flags } = podSysctls(pod);
  const own = (sysctls ?? []).map((s, i) => ({ name: sysctlName(s, i), value: sysctlValue(s, i) }));
  const gate = gateOf(config);
  const k8s = kubernetesVersionOf(config);
  return callNative(() => native.sysctlSandboxSysctls(defaults, own, flags, gate, k8s)).map((s) => ({
    name: s.name,
    value: s.value,
  }));
}
