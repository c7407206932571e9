// The kubelet's sysctl admit handler. TS extracts just the names and host flags; matching is one
// native call per pod, or one per batch with `admitMany`. Names cross as indexes into a name
// table shared with Rust, so a pod crosses as a few integers rather than strings. A single pod
// is written into a staging area shared with Rust and admitted by a zero-argument call (no
// argument conversion at all), which returns the verdict: null, or the message of a rejected
// pod, built natively only then.
import type { SysctlAllowlist as NativeAllowlist } from '../binding.js';
import {
  callNative,
  describe,
  fromNative,
  isKubenodeError,
  KubenodeError,
  KubenodeTypeError,
} from '../errors.js';
import { native } from '../native.js';
import { kubernetesVersionOf, type SafeSysctlOptions } from './kernel.js';
import { podFlagBits, podSysctls, sysctlName } from './pod.js';
import type { PodLike, SysctlNamespace } from './types.js';

/** Pod status reason of a rejected pod (`ForbiddenReason`). */
export const FORBIDDEN_REASON = 'SysctlForbidden';

/** The sysctl handler's verdict on one pod. */
export interface AdmitResult {
  /** False when the pod sets a sysctl the allowlist does not allow. */
  admit: boolean;
  /** `SysctlForbidden` on rejection. */
  reason?: string;
  /** Upstream's text naming the forbidden sysctl, on rejection. */
  message?: string;
}

/** One allowed pattern, as `SysctlAllowlist.entries` lists it. */
export interface AllowlistEntry {
  /** Normalised key; for prefixes without the `*`. */
  key: string;
  /** Kernel namespace the sysctl belongs to (`Net`, `IPC`, `UTS`, …). */
  namespace: SysctlNamespace;
  /** True for a pattern ending in `*`: every sysctl under `key` matches. */
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

/** Registered names kept before the name tables are reset (bounds memory under churn). */
const MAX_NAMES = 1 << 16;

interface PodSpecLike {
  securityContext?: unknown;
  hostNetwork?: unknown;
  hostIPC?: unknown;
  hostUsers?: unknown;
}

/** A pod as plain values: its sysctl names (spec order) and host flags. */
interface ReadPod {
  names: readonly string[];
  flags: number;
}

const NO_SYSCTLS: readonly string[] = Object.freeze([]);

/**
 * Reads what admission needs from a pod into plain values. Reading may run getters, and a getter
 * may admit pods on any allowlist, this one included: so a pod is read whole before an allowlist
 * touches its name table, id buffer or the staging area. Plain-object pods with string names
 * take the inline path; any other shape goes through `podSysctls`/`sysctlName` for their typed
 * errors.
 */
function readPod(pod: unknown): ReadPod {
  const spec = typeof pod === 'object' && pod !== null ? (pod as { spec?: unknown }).spec : undefined;
  const sc = typeof spec === 'object' && spec !== null ? (spec as PodSpecLike).securityContext : undefined;
  const list = typeof sc === 'object' && sc !== null ? (sc as { sysctls?: unknown }).sysctls : undefined;
  const hn = (spec as PodSpecLike | undefined)?.hostNetwork;
  const hi = (spec as PodSpecLike | undefined)?.hostIPC;
  const hu = (spec as PodSpecLike | undefined)?.hostUsers;
  let items: unknown[];
  let flags: number;
  if (
    Array.isArray(list) &&
    !Array.isArray(pod) &&
    !Array.isArray(spec) &&
    !Array.isArray(sc) &&
    (hn === undefined || typeof hn === 'boolean') &&
    (hi === undefined || typeof hi === 'boolean') &&
    (hu === undefined || typeof hu === 'boolean')
  ) {
    const b = podFlagBits();
    flags =
      (hn === true ? b.hostNetwork : 0) | (hi === true ? b.hostIpc : 0) | (hu === false ? b.podUserns : 0);
    items = list;
  } else {
    const r = podSysctls(pod);
    if (r.sysctls === null) return { names: NO_SYSCTLS, flags: r.flags };
    flags = r.flags;
    items = r.sysctls;
  }
  const n = items.length;
  if (n === 0) return { names: NO_SYSCTLS, flags };
  const names = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const s: unknown = items[i];
    const v =
      typeof s === 'object' && s !== null && !Array.isArray(s) ? (s as { name?: unknown }).name : undefined;
    names[i] = typeof v === 'string' ? v : sysctlName(s, i);
  }
  return { names, flags };
}

/**
 * This thread's staging area, shared with Rust, with its layout (the binding's), or null where
 * the runtime refuses external buffers (then every pod takes `admitIds`). Module-private:
 * nothing else may hold it.
 */
const stage = (() => {
  try {
    const at = native.sysctlStageLayout();
    const words = new Uint32Array(native.sysctlStagingBuffer());
    return {
      at,
      words,
      capacity: Math.min(at.capacity, words.length - at.ids),
      admit: native.sysctlAdmitStaged,
    };
  } catch {
    return null;
  }
})();

/**
 * Options of `newAllowlist`: `kubernetesVersion`, the kubelet's release (default: the newest
 * kubenode knows), whose namespace tables decide which patterns are known to be namespaced
 * (`user.*` and `kernel.domainname` only from v1.37).
 */
export type AllowlistOptions = SafeSysctlOptions;

/**
 * The kubelet's sysctl admit handler (upstream `sysctl.patternAllowlist`): safe sysctls plus
 * allowed unsafe patterns, matched against each pod's `securityContext.sysctls`. A pod that sets
 * a namespaced sysctl of a namespace it shares with the host (`hostNetwork`, `hostIPC`, and from
 * v1.37 the user namespace unless `hostUsers: false`) is rejected.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) when `patterns` is not an array of strings;
 * SysctlAllowlistError (`ERR_KUBENODE_INVALID_ARG`, upstream's message) for a pattern the kubelet
 * would refuse at startup.
 */
export class SysctlAllowlist {
  /** Handler name in a `PodAdmitChain`. */
  readonly name = 'sysctl';
  readonly #n: NativeAllowlist;
  readonly #slot: number;

  /** Prefer `newAllowlist`. */
  constructor(patterns: readonly string[], options: AllowlistOptions = {}) {
    if (!Array.isArray(patterns)) {
      throw new KubenodeTypeError(`patterns must be an array of strings, got ${describe(patterns)}`);
    }
    for (let i = 0; i < patterns.length; i++) {
      if (typeof patterns[i] !== 'string') {
        throw new KubenodeTypeError(`patterns[${i}] must be a string, got ${describe(patterns[i])}`);
      }
    }
    const version = kubernetesVersionOf(options);
    try {
      this.#n = new native.SysctlAllowlist(patterns as string[], version);
    } catch (e) {
      const typed = fromNative(e);
      if (isKubenodeError(typed) && typed.kind === 'kubernetes-version') throw typed;
      throw new SysctlAllowlistError((e as Error).message, { cause: e });
    }
    this.#slot = this.#n.slot;
  }

  /** `Admit`: the first forbidden sysctl (spec order) rejects the pod with `SysctlForbidden`. */
  admit(attrs: { pod: PodLike }): AdmitResult {
    if (typeof attrs !== 'object' || attrs === null) {
      throw new KubenodeTypeError(`admit attributes must be an object, got ${describe(attrs)}`);
    }
    // Every getter of the pod runs here, before any state of this allowlist is touched.
    const { names, flags } = readPod(attrs.pod);
    const count = names.length;
    if (count === 0) return ADMITTED;
    if (this.#names.size >= MAX_NAMES) this.#resetNames();
    const ids = this.#encode(names, 0);
    const st = stage;
    if (st !== null && count <= st.capacity) {
      const { at, words } = st;
      for (let i = 0; i < count; i++) words[at.ids + i] = ids[i]!;
      words[at.slot] = this.#slot;
      words[at.count] = count;
      words[at.flags] = flags;
      const r = st.admit();
      if (r === null) return ADMITTED;
      if (typeof r === 'string') return rejected(r);
      // The staged words unreadable (never expected): `admitIds` reads the same ids as
      // arguments, and throws typed errors for anything invalid.
    }
    // Direct call: with registered indexes the binding has no failure mode to translate.
    const msg = this.#n.admitIds(ids, count, flags);
    return msg === null ? ADMITTED : rejected(msg);
  }

  /** Admits many pods in one native call; results are in input order. */
  admitMany(pods: readonly PodLike[]): AdmitResult[] {
    if (!Array.isArray(pods)) throw new KubenodeTypeError(`pods must be an array, got ${describe(pods)}`);
    // Read every pod first (see `readPod`).
    const read = new Array<ReadPod>(pods.length);
    for (let p = 0; p < pods.length; p++) read[p] = readPod(pods[p]);
    if (this.#names.size >= MAX_NAMES) this.#resetNames();
    const counts = new Uint32Array(pods.length);
    const flags = new Uint8Array(pods.length);
    let total = 0;
    for (let p = 0; p < read.length; p++) {
      const r = read[p]!;
      this.#encode(r.names, total);
      counts[p] = r.names.length;
      flags[p] = r.flags;
      total += r.names.length;
    }
    const r = callNative(() => this.#n.admitManyIds(this.#ids.subarray(0, total), counts, flags));
    const out = new Array<AdmitResult>(pods.length).fill(ADMITTED);
    for (let k = 0; k < r.indexes.length; k++) out[r.indexes[k]!] = rejected(r.messages[k]!);
    return out;
  }

  // Names cross as indexes into a table both sides share: each distinct name crosses as a
  // string once (and is classified in Rust then); afterwards a pod is a few integers.
  readonly #names = new Map<string, number>();
  #ids = new Uint32Array(64);

  #id(name: string): number {
    let id = this.#names.get(name);
    if (id === undefined) {
      id = this.#n.intern(name);
      this.#names.set(name, id);
    }
    return id;
  }

  #resetNames(): void {
    this.#names.clear();
    this.#n.resetNames();
  }

  /** Writes the indexes of `names` to `#ids` from `at` and returns the buffer. Runs no JS. */
  #encode(names: readonly string[], at: number): Uint32Array {
    const n = names.length;
    if (at + n > this.#ids.length) {
      const grown = new Uint32Array(Math.max(this.#ids.length * 2, at + n));
      grown.set(this.#ids);
      this.#ids = grown;
    }
    const ids = this.#ids;
    for (let i = 0; i < n; i++) ids[at + i] = this.#id(names[i]!);
    return ids;
  }

  /** The stored entries (normalised keys; prefixes without `*`), sorted by key. */
  entries(): AllowlistEntry[] {
    return this.#n.entries().map((e) => ({ key: e.key, namespace: e.namespace, prefix: e.prefix }));
  }
}

/**
 * `NewAllowlist` of a Kubernetes release (default: the newest kubenode knows): every entry must
 * be a valid pattern with a namespace that release knows. Throws `SysctlAllowlistError` with
 * upstream's message otherwise (a kubelet refuses to start).
 */
export function newAllowlist(patterns: readonly string[], options: AllowlistOptions = {}): SysctlAllowlist {
  return new SysctlAllowlist(patterns, options);
}
