// The kubelet's sysctl admit handler. TS extracts just the names and host flags; matching is one
// native call per pod, or one per batch with `admitMany`. Names cross as indexes into a name
// table shared with Rust, so a pod crosses as a few integers rather than strings. A single pod
// is written into a staging area shared with Rust and admitted by a zero-argument call (no
// argument conversion at all); the message of a rejected pod is built natively only then.
import type { SysctlAllowlist as NativeAllowlist } from '../binding.js';
import { callNative, describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { HOST_IPC, HOST_NETWORK, podSysctls, sysctlName } from './pod.js';
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
}

/** Host flags of the pod last read by `SysctlAllowlist.#encode` (saves a result object). */
let podFlags = 0;

/**
 * This thread's staging area, shared with Rust, or null where the runtime refuses external
 * buffers (then every pod takes `admitIds`). Module-private: nothing else may hold it.
 */
const stage: Uint32Array | null = (() => {
  try {
    return new Uint32Array(native.sysctlStagingBuffer());
  } catch {
    return null;
  }
})();
// Staging area words: [slot, count, flags, ids…] (see crates/kubenode-node/src/sysctl/staged.rs).
const STAGE_HEADER = stage === null ? 0 : native.SYSCTL_STAGE_HEADER;
/** Most ids a staged pod can have; larger pods take `admitIds`. */
const stageCapacity =
  stage === null ? 0 : Math.min(native.sysctlStagedCapacity(), stage.length - STAGE_HEADER);

/**
 * The kubelet's sysctl admit handler (upstream `sysctl.patternAllowlist`): safe sysctls plus
 * allowed unsafe patterns, matched against each pod's `securityContext.sysctls`. A pod that sets
 * a namespaced sysctl of a namespace it shares with the host (`hostNetwork`, `hostIPC`) is rejected.
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
    this.#slot = this.#n.slot;
  }

  /** `Admit`: the first forbidden sysctl (spec order) rejects the pod with `SysctlForbidden`. */
  admit(attrs: { pod: PodLike }): AdmitResult {
    if (typeof attrs !== 'object' || attrs === null) {
      throw new KubenodeTypeError(`admit attributes must be an object, got ${describe(attrs)}`);
    }
    if (this.#names.size >= MAX_NAMES) this.#resetNames();
    const count = this.#encode(attrs.pod, 0);
    if (count === 0) return ADMITTED;
    const st = stage;
    if (st !== null && count <= stageCapacity) {
      // Staged only now: reading the pod can run getters (even another allowlist's admit), but
      // nothing runs between filling the staging area and the call.
      const ids = this.#ids;
      for (let i = 0; i < count; i++) st[STAGE_HEADER + i] = ids[i]!;
      st[0] = this.#slot;
      st[1] = count;
      st[2] = podFlags;
      if (native.sysctlAdmitStaged() === 0) return ADMITTED;
      // Rejected (or the staged words unreadable, never expected): `admitIds` builds upstream's
      // message from the same ids natively, and throws typed errors for anything invalid.
    }
    // Direct call: with registered indexes the binding has no failure mode to translate.
    const msg = this.#n.admitIds(this.#ids, count, podFlags);
    return msg === null ? ADMITTED : rejected(msg);
  }

  /** Admits many pods in one native call; results are in input order. */
  admitMany(pods: readonly PodLike[]): AdmitResult[] {
    if (!Array.isArray(pods)) throw new KubenodeTypeError(`pods must be an array, got ${describe(pods)}`);
    if (this.#names.size >= MAX_NAMES) this.#resetNames();
    const counts = new Uint32Array(pods.length);
    const flags = new Uint8Array(pods.length);
    let total = 0;
    for (let p = 0; p < pods.length; p++) {
      const c = this.#encode(pods[p], total);
      counts[p] = c;
      flags[p] = podFlags;
      total += c;
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

  /**
   * Writes the pod's sysctl name indexes to `#ids` from `at`, sets `podFlags`, and returns how
   * many. Plain-object pods with string names take the inline path; any other shape goes
   * through `podSysctls`/`sysctlName` for their typed errors.
   */
  #encode(pod: unknown, at: number): number {
    const spec = typeof pod === 'object' && pod !== null ? (pod as { spec?: unknown }).spec : undefined;
    const sc = typeof spec === 'object' && spec !== null ? (spec as PodSpecLike).securityContext : undefined;
    const list = typeof sc === 'object' && sc !== null ? (sc as { sysctls?: unknown }).sysctls : undefined;
    const hn = (spec as PodSpecLike | undefined)?.hostNetwork;
    const hi = (spec as PodSpecLike | undefined)?.hostIPC;
    let names: unknown[];
    let flags: number;
    if (
      Array.isArray(list) &&
      !Array.isArray(pod) &&
      !Array.isArray(spec) &&
      !Array.isArray(sc) &&
      (hn === undefined || typeof hn === 'boolean') &&
      (hi === undefined || typeof hi === 'boolean')
    ) {
      flags = (hn === true ? HOST_NETWORK : 0) | (hi === true ? HOST_IPC : 0);
      names = list;
    } else {
      const r = podSysctls(pod);
      flags = r.flags;
      podFlags = flags;
      if (r.sysctls === null) return 0;
      names = r.sysctls;
    }
    const n = names.length;
    if (at + n > this.#ids.length) {
      const grown = new Uint32Array(Math.max(this.#ids.length * 2, at + n));
      grown.set(this.#ids);
      this.#ids = grown;
    }
    for (let i = 0; i < n; i++) {
      const s: unknown = names[i];
      const v =
        typeof s === 'object' && s !== null && !Array.isArray(s) ? (s as { name?: unknown }).name : undefined;
      this.#ids[at + i] = this.#id(typeof v === 'string' ? v : sysctlName(s, i));
    }
    // Set last: reading a name may run a getter that admits another pod.
    podFlags = flags;
    return n;
  }

  /** The stored entries (normalised keys; prefixes without `*`), sorted by key. */
  entries(): AllowlistEntry[] {
    return this.#n.entries().map((e) => ({ key: e.key, namespace: e.namespace, prefix: e.prefix }));
  }
}

/**
 * `NewAllowlist`: every entry must be a valid pattern with a known namespace. Throws
 * `SysctlAllowlistError` with upstream's message otherwise (a kubelet refuses to start).
 */
export function newAllowlist(patterns: readonly string[]): SysctlAllowlist {
  return new SysctlAllowlist(patterns);
}
