// The kubelet's user-namespace manager (pkg/kubelet/userns). Allocation state, files, restore
// and cleanup live in Rust (kubenode-userns); this class resolves configuration, applies the
// checks upstream makes before taking its lock (feature gate, hostUsers, runtime handler), and
// turns results into CRI `UserNamespace` messages. Per-pod calls are coalesced (./calls.ts);
// every other operation is one native call.
import type {
  UsernsAllocation as Allocation,
  UsernsIdMapping as IdMapping,
  UsernsCore,
  UsernsOutcome,
} from '../binding.js';
import {
  assertNumber,
  assertString,
  awaitNative,
  callNative,
  fromNative,
  KubenodeError,
  KubenodeTypeError,
  outcomeOrThrow,
} from '../errors.js';
import type { PodLike } from '../kube/types.js';
import { assertRegistry, type MetricsRegistry } from '../metrics-registry.js';
import { PodCalls } from './calls.js';
import { UsernsError } from './errors.js';
import { type UsernsMetrics, usernsMetrics } from './metrics.js';
import {
  DEFAULT_IDS_PER_POD,
  DEFAULT_MAX_PODS,
  type PoolOptions,
  poolNumbers,
  resolvePool,
} from './pool-options.js';
import type { IdPool } from './subids.js';

export { DEFAULT_IDS_PER_POD, DEFAULT_MAX_PODS };
/** Name of the Kubernetes feature gate user namespaces sit behind. */
export const FEATURE_GATE = 'UserNamespacesSupport';

// CRI `IDMapping` and the manager's allocations: the binding's shapes, documented where the
// binding declares them.
export type { Allocation, IdMapping };

/** CRI `UserNamespace`; only NODE and POD are used for user namespaces. */
export interface UserNamespace {
  /** `NODE` shares the host's user namespace; `POD` gives the pod its own. */
  mode: 'NODE' | 'POD';
  /** UID mappings; empty in `NODE` mode. */
  uids: IdMapping[];
  /** GID mappings; empty in `NODE` mode. */
  gids: IdMapping[];
}

/** The parts of a v1.Pod the manager reads. */
export type { PodLike } from '../kube/types.js';

/** A running pod as the runtime reports it (kubecontainer.Pod), or its ID. */
export type RunningPodLike =
  | {
      /** The pod's UID. */
      id: string;
    }
  | string;

/**
 * Whether the runtime handler supports user namespaces: a constant, or a lookup by handler name
 * that may be async and may throw (the kubelet's `the handler "x" is not known`).
 */
export type HandlerSupport = boolean | ((handler: string) => boolean | Promise<boolean>);

/** Options of `UserNsManager.create`. */
export interface UserNsManagerOptions extends PoolOptions {
  /** The kubelet pods directory (`<root>/pods`). */
  podsDir: string;
  /** `UserNamespacesSupport` (default true: GA and locked on since 1.36). */
  featureGateEnabled?: boolean;
  /** Whether the runtime handler supports user namespaces (default true). A function may
   * throw, as the kubelet's lookup does (`the handler "x" is not known`). */
  runtimeHandlerSupportsUserns?: HandlerSupport;
  /** Seed of the bitmap's random scan, for reproducible tests. */
  seed?: number;
  /**
   * prom-client registry for the kubelet's `kubelet_started_user_namespaced_pods_total` and
   * `kubelet_started_user_namespaced_pods_errors_total`: every mappings call for a pod with
   * `hostUsers: false` is a start (ask once per sandbox, as the kubelet's sandbox creation does),
   * and one that fails an error. Registered only while the feature gate is on, as upstream does;
   * default: none recorded.
   */
  registry?: MetricsRegistry;
}

function unsupportedHandler(handler: string, cause: unknown): UsernsError {
  let msg =
    handler === ''
      ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
      : `can't set \`spec.hostUsers: false\`, RuntimeClass handler "${handler}" does not support user namespaces`;
  if (cause !== null) msg += `: ${cause instanceof Error ? cause.message : String(cause)}`;
  return new UsernsError('ERR_KUBENODE_UNSUPPORTED', 'unsupported', msg, { cause });
}

/** A getOrCreate outcome's mappings as the API returns them. */
function podMappings(o: UsernsOutcome): UserNamespace {
  const ns = o.namespace;
  if (!ns) throw new KubenodeError('ERR_KUBENODE_INTERNAL', 'the outcome carries no mappings');
  return { mode: 'POD', uids: ns.uidMappings, gids: ns.gidMappings };
}

function podUidOf(pod: PodLike): string {
  const uid = pod.metadata?.uid;
  if (typeof uid !== 'string') {
    throw new KubenodeTypeError('pod.metadata.uid must be a string');
  }
  return uid;
}

/**
 * The kubelet's user-namespace manager (`pkg/kubelet/userns` `UsernsManager`): hands each pod
 * with `hostUsers: false` a disjoint range of `idsPerPod` host IDs, persisted in
 * `<podsDir>/<podUid>/userns` exactly as the kubelet writes it, under an exclusive lock on the
 * pods directory. Create it with `UserNsManager.create`; errors are `UsernsError`s with a `kind`.
 */
export class UserNsManager {
  /** The kubelet pods directory this manager owns. */
  readonly podsDir: string;
  /** IDs per pod. */
  readonly idsPerPod: number;
  /** Most pods the pool must hold at once. */
  readonly maxPods: number;
  /** False when the feature gate is off: upstream then has no manager at all. */
  readonly enabled: boolean;
  /** The pool in use (null when disabled). */
  readonly pool: IdPool | null;
  /** Pods whose file was restored at creation. */
  readonly restored: number;
  /** Temp files of ours a crash had left behind, removed at creation. */
  readonly staleTempFilesRemoved: number;
  readonly #core: UsernsCore | null;
  readonly #calls: PodCalls | null;
  readonly #handlerSupport: HandlerSupport;
  readonly #metrics: UsernsMetrics | null;

  private constructor(
    opts: Required<Pick<UserNsManagerOptions, 'podsDir' | 'idsPerPod' | 'maxPods'>>,
    calls: PodCalls | null,
    pool: IdPool | null,
    handlerSupport: HandlerSupport,
    outcome: UsernsOutcome | null,
    metrics: UsernsMetrics | null = null,
  ) {
    this.podsDir = opts.podsDir;
    this.idsPerPod = opts.idsPerPod;
    this.maxPods = opts.maxPods;
    this.enabled = calls !== null;
    this.pool = pool;
    this.#calls = calls;
    this.#core = calls?.core ?? null;
    this.#handlerSupport = handlerSupport;
    this.restored = outcome?.restored ?? 0;
    this.staleTempFilesRemoved = outcome?.staleTempFilesRemoved ?? 0;
    this.#metrics = metrics;
  }

  /** `MakeUserNsManager`: validation, pool resolution, checks, lock, restore of every file. */
  static async create(options: UserNsManagerOptions): Promise<UserNsManager> {
    if (options === null || typeof options !== 'object') {
      throw new KubenodeTypeError('options must be an object');
    }
    const podsDir = assertString('podsDir', options.podsDir);
    if (podsDir === '') throw new KubenodeTypeError('podsDir must not be empty');
    // Kubelet configuration validation runs before the manager exists.
    const { idsPerPod, maxPods } = poolNumbers(options);
    const gate = options.featureGateEnabled ?? true;
    const handlerSupport = options.runtimeHandlerSupportsUserns ?? true;
    if (typeof handlerSupport !== 'boolean' && typeof handlerSupport !== 'function') {
      throw new KubenodeTypeError('runtimeHandlerSupportsUserns must be a boolean or a function');
    }
    if (options.registry !== undefined) assertRegistry(options.registry, 'registry');
    const base = { podsDir, idsPerPod, maxPods };
    if (!gate) return new UserNsManager(base, null, null, handlerSupport, null);
    const metrics = options.registry === undefined ? null : usernsMetrics(options.registry);

    const pool = await resolvePool(options, idsPerPod, gate);
    // Whole and in range is the core's rule (kubenode_bitmap::seed), checked before it locks.
    if (options.seed !== undefined) assertNumber('seed', options.seed);
    const calls = callNative(() => new PodCalls());
    const core = calls.core;
    const outcome = outcomeOrThrow(
      await awaitNative(
        callNative(() =>
          core.open(
            { podsDir, idsPerPod, firstId: pool.firstId, length: pool.length, maxPods },
            options.seed,
          ),
        ),
      ),
    );
    return new UserNsManager(base, calls, pool, handlerSupport, outcome, metrics);
  }

  /** The runtime handler check: null when it passed at once, a promise when the lookup is
   * async; throws (or the promise rejects) when the handler does not support user namespaces. */
  #handlerGate(handler: string): Promise<void> | null {
    const h = this.#handlerSupport;
    let v: unknown;
    try {
      v = typeof h === 'function' ? h(handler) : h;
    } catch (e) {
      throw unsupportedHandler(handler, e);
    }
    if (v === true) return null;
    if (v !== null && typeof v === 'object' && typeof (v as PromiseLike<unknown>).then === 'function') {
      return Promise.resolve(v as PromiseLike<unknown>).then(
        (s) => {
          if (s !== true) throw unsupportedHandler(handler, null);
        },
        (e: unknown) => {
          throw unsupportedHandler(handler, e);
        },
      );
    }
    throw unsupportedHandler(handler, null);
  }

  /** The checks upstream makes before taking its lock: the answer when no range is needed,
   * otherwise the pod's UID (the handler check comes after). */
  #precheck(pod: PodLike | null | undefined): UserNamespace | null | { uid: string } {
    const hostUsers = pod?.spec?.hostUsers;
    if (pod === null || pod === undefined || hostUsers === undefined || hostUsers === null) {
      return this.enabled ? { mode: 'NODE', uids: [], gids: [] } : null;
    }
    if (typeof hostUsers !== 'boolean') throw new KubenodeTypeError('pod.spec.hostUsers must be a boolean');
    if (!this.enabled) {
      throw new UsernsError(
        'ERR_KUBENODE_UNSUPPORTED',
        'unsupported',
        `the feature gate "${FEATURE_GATE}" is disabled: can't set spec.HostUsers`,
      );
    }
    if (hostUsers) return { mode: 'NODE', uids: [], gids: [] };
    return { uid: podUidOf(pod) };
  }

  /** `GetOrCreateUserNamespaceMappings`: null only when the gate is off and hostUsers unset. */
  async getOrCreateUserNamespaceMappings(
    pod: PodLike | null | undefined,
    runtimeHandler = '',
  ): Promise<UserNamespace | null> {
    assertString('runtimeHandler', runtimeHandler);
    const pre = this.#precheck(pod);
    if (pre === null || !('uid' in pre)) return pre;
    this.#metrics?.started.inc();
    try {
      // Placed in call order now, so that a release called after it runs after it; it runs once
      // the handler check has passed.
      const gate = this.#handlerGate(runtimeHandler);
      const o = outcomeOrThrow(await (this.#calls as PodCalls).run(pre.uid, false, gate));
      return podMappings(o);
    } catch (e) {
      this.#metrics?.errors.inc();
      throw e;
    }
  }

  /**
   * `GetOrCreateUserNamespaceMappings` for several pods of one runtime handler, with one native
   * task for all of them (in order, under the manager's lock: the same results as one call per
   * pod, without a thread-pool round trip per pod). One settled result per pod, in order.
   */
  async getOrCreateUserNamespaceMappingsMany(
    pods: ReadonlyArray<PodLike | null | undefined>,
    runtimeHandler = '',
  ): Promise<Array<PromiseSettledResult<UserNamespace | null>>> {
    if (!Array.isArray(pods)) throw new KubenodeTypeError('pods must be an array');
    assertString('runtimeHandler', runtimeHandler);
    const out: Array<PromiseSettledResult<UserNamespace | null>> = [];
    const pending: Array<[number, string]> = [];
    for (const pod of pods) {
      try {
        const pre = this.#precheck(pod);
        if (pre !== null && 'uid' in pre) pending.push([out.length, pre.uid]);
        out.push({ status: 'fulfilled', value: pre !== null && 'uid' in pre ? null : pre });
      } catch (reason) {
        out.push({ status: 'rejected', reason });
      }
    }
    if (pending.length === 0) return out;
    this.#metrics?.started.inc(pending.length);
    try {
      await this.#handlerGate(runtimeHandler);
    } catch (reason) {
      for (const [i] of pending) out[i] = { status: 'rejected', reason };
      this.#metrics?.errors.inc(pending.length);
      return out;
    }
    const core = this.#core as UsernsCore;
    let outcomes: UsernsOutcome[];
    try {
      outcomes = await awaitNative(core.getOrCreateMany(pending.map(([, uid]) => uid)));
    } catch (e) {
      this.#metrics?.errors.inc(pending.length);
      throw e;
    }
    pending.forEach(([i], k) => {
      const o = outcomes[k];
      out[i] = !o
        ? { status: 'rejected', reason: new KubenodeError('ERR_KUBENODE_INTERNAL', 'missing outcome') }
        : o.error
          ? { status: 'rejected', reason: fromNative(o.error) }
          : { status: 'fulfilled', value: podMappings(o) };
      if (out[i]?.status === 'rejected') this.#metrics?.errors.inc();
    });
    return out;
  }

  /** `Release`: frees the pod's range and removes its file; unknown pods are a no-op. */
  async release(podUid: string): Promise<void> {
    assertString('podUid', podUid);
    if (!this.#calls) return;
    outcomeOrThrow(await this.#calls.run(podUid, true));
  }

  /** `Release` for several pods in one native task (in order; unknown pods are a no-op). */
  async releaseMany(podUids: readonly string[]): Promise<void> {
    if (!Array.isArray(podUids)) throw new KubenodeTypeError('podUids must be an array');
    for (const [i, u] of podUids.entries()) assertString(`podUids[${i}]`, u);
    if (!this.#core) return;
    outcomeOrThrow(await awaitNative(this.#core.releaseMany([...podUids])));
  }

  /** `CleanupOrphanedPodUsernsAllocations`. */
  async cleanupOrphanedPodUsernsAllocations(
    pods: ReadonlyArray<PodLike | string>,
    runningPods: ReadonlyArray<RunningPodLike>,
  ): Promise<void> {
    if (!Array.isArray(pods) || !Array.isArray(runningPods)) {
      throw new KubenodeTypeError('pods and runningPods must be arrays');
    }
    const known = pods.map((p) => (typeof p === 'string' ? p : String(p?.metadata?.uid ?? '')));
    const running = runningPods.map((p) => (typeof p === 'string' ? p : String(p?.id ?? '')));
    if (!this.#core) return;
    outcomeOrThrow(await awaitNative(this.#core.cleanup(known, running)));
  }

  /** Every allocation, sorted by pod UID, as of the last finished call (never waits for a
   * running one). */
  allocations(): Allocation[] {
    return this.#core ? this.#core.allocations() : [];
  }

  /** Releases the pods-directory lock; the manager is unusable afterwards. Returns at once: if a
   * call is running, the lock goes as soon as that call finishes, and calls not yet started
   * fail as not open. */
  close(): void {
    this.#core?.close();
  }
}
