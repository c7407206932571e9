// Reads what the sysctl checks need from a Pod, with typed errors for shapes the API server's
// JSON decoding would refuse. A missing or null name reads as "" (Go's zero value).
import { describe, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import type { V1Sysctl } from './types.js';

/** A pod's host-flag bits as the binding numbers them. */
export interface PodFlagBits {
  readonly hostNetwork: number;
  readonly hostIpc: number;
  /** The pod has its own user namespace (`hostUsers: false`); unset means the host's. */
  readonly podUserns: number;
}

function readBits(): PodFlagBits {
  const { hostNetwork, hostIpc, podUserns } = native.sysctlStageLayout();
  return Object.freeze({ hostNetwork, hostIpc, podUserns });
}

// Read at load, so no pod pays the crossing; without a binding, on first use (which throws its
// typed error).
let bits: PodFlagBits | undefined = (() => {
  try {
    return readBits();
  } catch {
    return undefined;
  }
})();

/** The host-flag bits, defined once in Rust (`sysctlStageLayout`). */
export function podFlagBits(): PodFlagBits {
  if (bits === undefined) bits = readBits();
  return bits;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function flag(
  spec: Record<string, unknown>,
  key: 'hostNetwork' | 'hostIPC' | 'hostUsers',
  unset = false,
): boolean {
  const v = spec[key];
  if (v === undefined || v === null) return unset;
  if (typeof v !== 'boolean')
    throw new KubenodeTypeError(`spec.${key} must be a boolean, got ${describe(v)}`);
  return v;
}

export interface PodSysctls {
  /** Raw sysctl list (null when the pod has no security context or no sysctls). */
  sysctls: V1Sysctl[] | null;
  /** Host-flag bits (`podFlagBits`). */
  flags: number;
}

/** The pod's `spec.securityContext.sysctls` and host flags. */
export function podSysctls(pod: unknown): PodSysctls {
  if (!isObject(pod)) throw new KubenodeTypeError(`pod must be an object, got ${describe(pod)}`);
  const spec = pod['spec'];
  if (spec === undefined || spec === null) return { sysctls: null, flags: 0 };
  if (!isObject(spec)) throw new KubenodeTypeError(`pod.spec must be an object, got ${describe(spec)}`);
  const hostNetwork = flag(spec, 'hostNetwork');
  const hostIpc = flag(spec, 'hostIPC');
  // `hostUsers` defaults to true: only an explicit false gives the pod its own namespace.
  const podUserns = !flag(spec, 'hostUsers', true);
  const b = podFlagBits();
  const flags = (hostNetwork ? b.hostNetwork : 0) | (hostIpc ? b.hostIpc : 0) | (podUserns ? b.podUserns : 0);
  const sc = spec['securityContext'];
  if (sc === undefined || sc === null) return { sysctls: null, flags };
  if (!isObject(sc))
    throw new KubenodeTypeError(`spec.securityContext must be an object, got ${describe(sc)}`);
  const list = sc['sysctls'];
  if (list === undefined || list === null) return { sysctls: null, flags };
  if (!Array.isArray(list)) {
    throw new KubenodeTypeError(`spec.securityContext.sysctls must be an array, got ${describe(list)}`);
  }
  return { sysctls: list as V1Sysctl[], flags };
}

/** The name of sysctl `i`; throws on non-string names. */
export function sysctlName(s: unknown, i: number): string {
  if (!isObject(s)) {
    throw new KubenodeTypeError(`spec.securityContext.sysctls[${i}] must be an object, got ${describe(s)}`);
  }
  const n = s['name'];
  if (typeof n === 'string') return n;
  if (n === undefined || n === null) return '';
  throw new KubenodeTypeError(`spec.securityContext.sysctls[${i}].name must be a string, got ${describe(n)}`);
}

/** The value of sysctl `i` as text (IntOrString); missing reads as "". */
export function sysctlValue(s: V1Sysctl, i: number): string {
  const v = s.value;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (v === undefined || v === null) return '';
  throw new KubenodeTypeError(
    `spec.securityContext.sysctls[${i}].value must be a string or number, got ${describe(v)}`,
  );
}

export function sysctlNames(list: V1Sysctl[]): string[] {
  const out = new Array<string>(list.length);
  for (let i = 0; i < list.length; i++) out[i] = sysctlName(list[i], i);
  return out;
}

/**
 * Throws the typed error the sysctl checks would raise on a malformed pod (a spec that is not a
 * mapping, a non-boolean host flag, a sysctl entry of the wrong type), so a caller can refuse
 * the pod as bad input before any check runs.
 */
export function assertPodShape(pod: unknown): void {
  const { sysctls } = podSysctls(pod);
  if (sysctls === null) return;
  for (let i = 0; i < sysctls.length; i++) {
    sysctlName(sysctls[i], i);
    sysctlValue(sysctls[i] as V1Sysctl, i);
  }
}
