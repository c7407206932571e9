// The kubelet's sysctl admit handler. TS extracts just the names and host flags; matching is one
// native call per pod (names NUL-joined in one string), or one per batch with `admitMany`.
import type { SysctlAllowlist as NativeAllowlist } from '../binding.js';
import { callNative, describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { podSysctls, sysctlName } from './pod.js';
import type { PodLike, SysctlNamespace, V1Sysctl } from './types.js';

/** Pod status reason of a rejected pod (`ForbiddenReason`). */
export const FORBIDDEN_REASON = 'SysctlForbidden';

export interface AdmitResult {
  admit: boolean;
  reason?: string;
  message?: string;
}

export interface AllowlistEntry {
  /** Normalised key; for prefixes without the `*`. */
  key: string;
  namespace: SysctlNamespace;
  prefix: boolean;
}

/** A pattern the kubelet would refuse at startup; `message` is upstream's text. */
export class SysctlAllowlistError extends KubenodeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_KUBENODE_INVALID_ARG', message, options);
    this.name = 'SysctlAllowlistError';
  }
}

const ADMITTED: AdmitResult = Object.freeze({ admit: true });

function rejected(message: string): AdmitResult {
  return { admit: false, reason: FORBIDDEN_REASON, message };
}

/** NUL-joins the names of a non-empty list. */
function joinNames(list: V1Sysctl[]): string {
  let joined = sysctlName(list[0], 0);
  for (let i = 1; i < list.length; i++) joined += `\0${sysctlName(list[i], i)}`;
  return joined;
}

export class SysctlAllowlist {
  /** Handler name in a `PodAdmitChain`. */
  readonly name = 'sysctl';
  readonly #n: NativeAllowlist;

  /** Prefer `newAllowlist`. */
  constructor(patterns: readonly string[]) {
    if (!Array.isArray(patterns)) {
      throw new KubenodeTypeError(`patterns must be an array of strings, got ${describe(patterns)}`);
    }
    for (let i = 0; i < patterns.length; i++) {
      if (typeof patterns[i] !== 'string') {
        throw new KubenodeTypeError(`patterns[${i}] must be a string, got ${describe(patterns[i])}`);
      }
    }
    try {
      this.#n = new native.SysctlAllowlist(patterns as string[]);
    } catch (e) {
      throw new SysctlAllowlistError((e as Error).message, { cause: e });
    }
  }

  /** `Admit`: the first forbidden sysctl (spec order) rejects the pod with `SysctlForbidden`. */
  admit(attrs: { pod: PodLike }): AdmitResult {
    if (typeof attrs !== 'object' || attrs === null) {
      throw new KubenodeTypeError(`admit attributes must be an object, got ${describe(attrs)}`);
    }
    const { sysctls, flags } = podSysctls(attrs.pod);
    if (sysctls === null || sysctls.length === 0) return ADMITTED;
    const joined = joinNames(sysctls);
    let msg: string | null;
    try {
      msg = this.#n.admitJoined(joined, sysctls.length, flags);
    } catch (e) {
      // A name contained NUL: send the list as an array instead.
      if ((e as { code?: string }).code !== 'ERR_KUBENODE_CONFLICT') throw e;
      msg = callNative(() => this.#n.admitList(namesOf(sysctls), flags));
    }
    return msg === null ? ADMITTED : rejected(msg);
  }

  /** Admits many pods in one native call; results are in input order. */
  admitMany(pods: readonly PodLike[]): AdmitResult[] {
    if (!Array.isArray(pods)) throw new KubenodeTypeError(`pods must be an array, got ${describe(pods)}`);
    const counts = new Uint32Array(pods.length);
    const flags = new Uint8Array(pods.length);
    const parts: string[] = [];
    for (let p = 0; p < pods.length; p++) {
      const { sysctls, flags: f } = podSysctls(pods[p]);
      flags[p] = f;
      if (sysctls === null || sysctls.length === 0) continue;
      counts[p] = sysctls.length;
      for (let i = 0; i < sysctls.length; i++) parts.push(sysctlName(sysctls[i], i));
    }
    const out = new Array<AdmitResult>(pods.length).fill(ADMITTED);
    let r: { indexes: number[]; messages: string[] };
    try {
      r = this.#n.admitMany(parts.join('\0'), counts, flags);
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_KUBENODE_CONFLICT') throw e;
      return pods.map((pod) => this.admit({ pod }));
    }
    for (let k = 0; k < r.indexes.length; k++) out[r.indexes[k]!] = rejected(r.messages[k]!);
    return out;
  }

  /** The stored entries (normalised keys; prefixes without `*`), sorted by key. */
  entries(): AllowlistEntry[] {
    return this.#n
      .entries()
      .map((e) => ({ key: e.key, namespace: e.namespace as SysctlNamespace, prefix: e.prefix }));
  }
}

function namesOf(list: V1Sysctl[]): string[] {
  return list.map((s, i) => sysctlName(s, i));
}

/**
 * `NewAllowlist`: every entry must be a valid pattern with a known namespace. Throws
 * `SysctlAllowlistError` with upstream's message otherwise (a kubelet refuses to start).
 */
export function newAllowlist(patterns: readonly string[]): SysctlAllowlist {
  return new SysctlAllowlist(patterns);
}
