// The ServiceCIDRs controller of kube-controller-manager (pkg/controller/servicecidrs): adds the
// protection finalizer and the Ready condition to every ServiceCIDR, and on deletion removes the
// finalizer only when no IPAddress would be left outside every ServiceCIDR, and only after a
// grace period, so allocators have seen the deletion before the range disappears.
// It talks to the API server through the lean transport (ts/kube/rest.ts): the daemon loads
// @kubernetes/client-node only for a kubeconfig user with an exec or auth-provider plugin.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { KubenodeTypeError } from '../errors.js';
import { apiCode, describeError } from '../kube/api-error.js';
import { EventRecorder } from '../kube/events.js';
import { ResilientInformer } from '../kube/informer.js';
import {
  type KubeConnection,
  type KubeRest,
  PATCH_APPLY,
  PATCH_STRATEGIC,
  type RestLimits,
} from '../kube/rest.js';
import { promClient } from '../peers.js';
import { allocatorIPs } from './allocator-ips.js';
import { CIDRIndex } from './cidr.js';
import { controllerRest } from './client.js';
import {
  attachHandlers,
  deletionTimestamp,
  type IPAddressObject,
  type ServiceCIDRObject,
  trimObject,
} from './index-sync.js';
import { type LeaderElectionOptions, LeaderElector } from './leader-election.js';
import { klogLogger, type Logger } from './logger.js';
import { WorkqueueMetrics } from './metrics.js';
import type { RateLimiter } from './ratelimit.js';
import { RateLimitingQueue } from './workqueue.js';

export { IPALLOCATOR_CONTROLLER_NAME, LABEL_IP_FAMILY, LABEL_MANAGED_BY } from './labels.js';

/** Upstream's controller name: the Event source component and log name. */
export const CONTROLLER_NAME = 'service-cidr-controller';
/** User agent and field manager of every write but the status apply (which is upstream's). */
export const FIELD_MANAGER = 'kubenode-servicecidr-controller';
/** Finalizer that keeps a ServiceCIDR until no IPAddress depends on it alone. */
export const SERVICE_CIDR_PROTECTION_FINALIZER = 'networking.k8s.io/service-cidr-finalizer';
/** Type of the condition the controller sets on every ServiceCIDR. */
export const CONDITION_READY = 'Ready';
/** Ready condition reason while a deletion is blocked by IPAddresses. */
export const REASON_TERMINATING = 'Terminating';
/** Ready condition message of a usable ServiceCIDR. */
export const MESSAGE_READY = 'Kubernetes Service CIDR is ready';
/** Ready condition message while a deletion is blocked by IPAddresses. */
export const MESSAGE_TERMINATING =
  'There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR';
/** Upstream's queue name (sic), kept so metrics line up with kube-controller-manager's. */
export const QUEUE_NAME = 'ipaddresses';

/** Options of `ServiceCIDRController`. */
export interface ServiceCIDRControllerOptions {
  /**
   * Cluster access as a client-node `KubeConfig` (embedders); its current context is read once,
   * at `run()`. Give this or `connection`; requests carry the user agent `FIELD_MANAGER`.
   */
  kubeConfig?: KubeConfig;
  /** Cluster access as a lean connection (`loadKubeConfig().connection`, ts/kube/config.ts). */
  connection?: KubeConnection;
  /**
   * Client-side rate limit of every request and watch (client-go's `--kube-api-qps`,
   * `--kube-api-burst`); default none.
   */
  clientLimits?: RestLimits;
  /** Parallel workers (upstream runs 5). */
  workers?: number;
  /** Wait after the deletion timestamp before the finalizer goes (upstream: 10 s). */
  deletionGracePeriodMs?: number;
  /** Rate-limited retries before a key is dropped (upstream: 15). */
  maxRetries?: number;
  /** `true` or options: act only while holding a coordination.k8s.io/v1 Lease. */
  leaderElection?: boolean | LeaderElectionOptions;
  /** prom-client registry for the workqueue metrics (default: a private registry). */
  registry?: Registry;
  /** Where logs go (default: klog-style lines on stderr at verbosity 0). */
  logger?: Logger;
  /** Replaces client-go's default controller rate limiter (tests). */
  rateLimiter?: RateLimiter<string>;
}

interface Condition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
}

function positiveInt(what: string, v: number, min: number): number {
  if (!Number.isInteger(v) || v < min)
    throw new KubenodeTypeError(`${what} must be an integer ≥ ${min}, got ${v}`);
  return v;
}

/**
 * kube-controller-manager's ServiceCIDRs controller (`pkg/controller/servicecidrs`): keeps the
 * protection finalizer and Ready condition on every ServiceCIDR and removes the finalizer of a
 * deleted one only when no IPAddress would be orphaned, after `deletionGracePeriodMs`.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) for a missing `kubeConfig` or a bad
 * `workers`/`deletionGracePeriodMs`/`maxRetries`.
 */
export class ServiceCIDRController {
  #index = new CIDRIndex();
  /** Registry holding the workqueue metrics. */
  readonly registry: Registry;
  /** Parallel workers. */
  readonly workers: number;
  /** Wait after the deletion timestamp before the finalizer goes, in ms. */
  readonly deletionGracePeriodMs: number;
  /** Rate-limited retries before a key is dropped. */
  readonly maxRetries: number;
  /** The Lease elector, when leader election is on. */
  readonly elector: LeaderElector | undefined;
  /** The client of the Events and the Lease (and of everything without leader election). */
  readonly #rest: KubeRest;
  /** Makes the client of one leadership term. */
  readonly #newClient: () => KubeRest;
  /** The current term's client: its informers and writes. */
  #termRest: KubeRest;
  readonly #events: EventRecorder;
  readonly #log: Logger;
  readonly #metrics: WorkqueueMetrics;
  readonly #rateLimiter: RateLimiter<string> | undefined;
  #queue: RateLimitingQueue<string> | undefined;
  #cidrs: ResilientInformer<ServiceCIDRObject> | undefined;
  #ips: ResilientInformer<IPAddressObject> | undefined;
  /** Watch restarts of the informers of past leadership terms. */
  #pastRestarts = 0;
  /** Whether #cidrs and #ips belong to a term still running (their restarts not yet counted). */
  #termInformers = false;
  /** This term's own writes, until the informer has caught up with them. */
  #written = new WriteCache();
  #running = false;

  constructor(o: ServiceCIDRControllerOptions) {
    const kc = typeof o?.kubeConfig?.getCurrentCluster === 'function' ? o.kubeConfig : undefined;
    const conn =
      typeof o?.connection?.server === 'string' && typeof o.connection.credentials === 'function'
        ? o.connection
        : undefined;
    if (!kc && !conn) {
      throw new KubenodeTypeError('kubeConfig must be a KubeConfig, or connection a KubeConnection');
    }
    this.#newClient = () => controllerRest(conn ?? (kc as KubeConfig), FIELD_MANAGER, o.clientLimits);
    this.#rest = this.#newClient();
    this.#termRest = this.#rest;
    this.workers = positiveInt('workers', o.workers ?? 5, 1);
    this.deletionGracePeriodMs = positiveInt('deletionGracePeriodMs', o.deletionGracePeriodMs ?? 10_000, 0);
    this.maxRetries = positiveInt('maxRetries', o.maxRetries ?? 15, 0);
    this.registry = o.registry ?? new (promClient().Registry)();
    this.#log = o.logger ?? klogLogger(0);
    this.#metrics = new WorkqueueMetrics(this.registry);
    this.#rateLimiter = o.rateLimiter;
    this.#events = new EventRecorder({
      rest: this.#rest,
      source: { component: CONTROLLER_NAME },
      fieldManager: FIELD_MANAGER,
      log: this.#log,
    });
    if (o.leaderElection) {
      const opts = o.leaderElection === true ? {} : o.leaderElection;
      this.elector = new LeaderElector(this.#rest, this.#log, {
        fieldManager: FIELD_MANAGER,
        ...opts,
      });
    }
  }

  /**
   * The current leadership term's index of ServiceCIDRs, fed only by that term's informer.
   * A new term starts from an empty index: events missed while following never reach it.
   */
  get index(): CIDRIndex {
    return this.#index;
  }

  /** True while this instance's workers are running (always false for a non-leader). */
  get active(): boolean {
    return this.#running;
  }

  /**
   * For `/readyz`: a follower is ready (it has nothing to sync); the leader once both
   * informers have synced and its workers run.
   */
  get ready(): boolean {
    return this.elector && !this.elector.isLeader ? true : this.#running;
  }

  /** Restart attempts of failed ServiceCIDR and IPAddress watches so far, all terms together. */
  get watchRestarts(): number {
    const current = this.#termInformers ? (this.#cidrs?.restarts ?? 0) + (this.#ips?.restarts ?? 0) : 0;
    return this.#pastRestarts + current;
  }

  /** Runs until `signal` aborts (with leader election: only while holding the lease). */
  async run(signal: AbortSignal): Promise<void> {
    if (this.elector) {
      await this.elector.run(signal, (leading) => this.#runLoop(leading));
    } else {
      await this.#runLoop(signal);
    }
  }

  async #runLoop(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.#log.info(0, 'Starting', { controller: CONTROLLER_NAME });
    // Fresh per term: a ServiceCIDR deleted while this instance followed sends no delete event,
    // and a stale entry would pass for a parent in canDelete.
    const index = new CIDRIndex();
    this.#index = index;
    this.#written = new WriteCache();
    const queue = new RateLimitingQueue<string>({
      name: QUEUE_NAME,
      metrics: this.#metrics,
      ...(this.#rateLimiter ? { rateLimiter: this.#rateLimiter } : {}),
    });
    this.#queue = queue;
    // A term of leadership has a connection of its own, closed when the term ends: aborting a
    // request on a shared HTTP/2 connection only queues an RST_STREAM behind the bytes already
    // sent, so a write held up in a stalled connection would still land, after another
    // instance took over, once the connection recovers. Closing the connection drops it.
    const rest = this.elector ? this.#newClient() : this.#rest;
    this.#termRest = rest;
    // Initial state over the watch, as kube-controller-manager's informers take it.
    const informer = <T extends ServiceCIDRObject | IPAddressObject>(resource: string, kind: string) =>
      new ResilientInformer<T>(rest, `/apis/networking.k8s.io/v1/${resource}`, undefined, kind, this.#log, {
        watchList: true,
      });
    const cidrs = informer<ServiceCIDRObject>('servicecidrs', 'ServiceCIDR');
    const ips = informer<IPAddressObject>('ipaddresses', 'IPAddress');
    this.#cidrs = cidrs;
    this.#ips = ips;
    this.#termInformers = true;
    attachHandlers({ cidrs, ips, index, queue, log: this.#log });
    const stopped = new Promise<void>((r) =>
      signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true }),
    );
    try {
      // Upstream waits for both caches before starting workers.
      await Promise.race([Promise.all([cidrs.start(), ips.start()]), stopped]);
      if (signal.aborted) return;
      this.#running = true;
      const workers = Array.from({ length: this.workers }, () => this.#worker(queue, signal));
      await stopped;
      // The term is over: in-flight syncs see the aborted signal and make no further write.
      queue.shutDownAndDiscard();
      await Promise.all(workers);
    } finally {
      queue.shutDownAndDiscard();
      this.#running = false;
      await Promise.all([cidrs.stop(), ips.stop()]);
      if (rest !== this.#rest) rest.close();
      this.#pastRestarts += cidrs.restarts + ips.restarts;
      this.#termInformers = false;
      this.#log.info(0, 'Shutting down', { controller: CONTROLLER_NAME });
    }
  }

  async #worker(queue: RateLimitingQueue<string>, signal: AbortSignal): Promise<void> {
    for (;;) {
      const { item, shutdown } = await queue.get();
      if (shutdown) return;
      await this.#processNext(queue, item, signal);
    }
  }

  async #processNext(queue: RateLimitingQueue<string>, key: string, signal: AbortSignal): Promise<void> {
    try {
      await this.sync(key, signal);
      queue.forget(key);
    } catch (e) {
      if (signal.aborted) {
        this.#log.info(4, 'ServiceCIDR sync cancelled', { ServiceCIDR: key });
      } else if (queue.numRequeues(key) < this.maxRetries) {
        this.#log.info(2, 'Error syncing ServiceCIDR, retrying', { ServiceCIDR: key, err: describeError(e) });
        queue.addRateLimited(key);
      } else {
        this.#log.info(0, 'Dropping ServiceCIDR out of the queue', {
          ServiceCIDR: key,
          err: describeError(e),
        });
        queue.forget(key);
        this.#log.error('Unhandled Error', e, { ServiceCIDR: key });
      }
    } finally {
      queue.done(key);
    }
  }

  /**
   * One reconcile of ServiceCIDR `key` (upstream `sync`). Throws to ask for a retry. Once
   * `signal` aborts (the leadership term ended) it makes no further write and the request in
   * flight is cancelled.
   */
  async sync(key: string, signal: AbortSignal = new AbortController().signal): Promise<void> {
    const started = performance.now();
    this.#log.info(4, 'syncing ServiceCIDR', { ServiceCIDR: key });
    try {
      await this.#sync(key, signal);
    } finally {
      this.#log.info(4, 'Finished syncing ServiceCIDR)', {
        ServiceCIDR: key,
        elapsed: `${(performance.now() - started).toFixed(3)}ms`,
      });
    }
  }

  async #sync(key: string, signal: AbortSignal): Promise<void> {
    const cidr = this.#written.newest(key, this.#cidrs?.get(key));
    if (!cidr) {
      this.#log.info(4, 'ServiceCIDR no longer exist', { ServiceCIDR: key });
      return;
    }
    const name = cidr.metadata?.name ?? key;
    const deletion = deletionTimestamp(cidr);
    if (deletion) {
      if (!this.#canDelete(cidr)) {
        await this.#updateConditionIfNeeded(
          cidr,
          {
            type: CONDITION_READY,
            status: 'False',
            reason: REASON_TERMINATING,
            message: MESSAGE_TERMINATING,
          },
          signal,
        );
        return;
      }
      const since = Date.now() - new Date(deletion).getTime();
      const remaining = this.deletionGracePeriodMs - (Number.isFinite(since) ? since : 0);
      if (remaining > 0) {
        this.#queue?.addAfter(key, remaining);
        return;
      }
      await this.#patchFinalizer(cidr, 'remove', signal);
      return;
    }
    await this.#patchFinalizer(cidr, 'add', signal);
    try {
      await this.#updateConditionIfNeeded(
        cidr,
        {
          type: CONDITION_READY,
          status: 'True',
          reason: '',
          message: MESSAGE_READY,
        },
        signal,
      );
    } catch (e) {
      if (signal.aborted) throw e;
      this.#log.info(0, 'error updating default ServiceCIDR status', {
        ServiceCIDR: name,
        error: describeError(e),
      });
      // Not awaited: the recorder writes in the background, as client-go's broadcaster does. The
      // term's signal drops it (request in flight and retries) once the term has ended.
      void this.#events.warning(
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'ServiceCIDR',
          name,
          uid: cidr.metadata?.uid,
          resourceVersion: cidr.metadata?.resourceVersion,
        },
        'KubernetesServiceCIDRError',
        'The ServiceCIDR Status can not be set to Ready=True',
        signal,
      );
      throw e;
    }
  }

  /** Upstream `canDeleteCIDR`, answered by the index in one native call. */
  #canDelete(cidr: ServiceCIDRObject): boolean {
    const name = cidr.metadata?.name ?? '';
    const cidrs = (cidr.spec?.cidrs ?? []).filter((c): c is string => typeof c === 'string');
    const r = this.#index.canDelete(name, cidrs, allocatorIPs(this.#ips?.list() ?? []));
    for (const bad of r.unparsable) {
      this.#log.info(0, '[SHOULD NOT HAPPEN] unexpected error parsing IPAddress', { IPAddress: bad });
    }
    switch (r.outcome) {
      case 'containedInOther':
        this.#log.info(0, 'Deleting ServiceCIDR contained in other ServiceCIDR', { ServiceCIDR: name });
        return true;
      case 'blocked':
        this.#log.info(0, 'Deleting ServiceCIDR blocked by IP address', { IPAddress: r.ip });
        return false;
      default:
        this.#log.info(0, 'Deleting ServiceCIDR no longer have orphan IPs', { ServiceCIDR: name });
        return true;
    }
  }

  /** Strategic-merge patch of the finalizer list; NotFound counts as done. */
  async #patchFinalizer(cidr: ServiceCIDRObject, op: 'add' | 'remove', signal: AbortSignal): Promise<void> {
    const name = cidr.metadata?.name ?? '';
    const has = (cidr.metadata?.finalizers ?? []).includes(SERVICE_CIDR_PROTECTION_FINALIZER);
    if (op === 'add' ? has : !has) return;
    const body =
      op === 'add'
        ? { metadata: { finalizers: [SERVICE_CIDR_PROTECTION_FINALIZER] } }
        : { metadata: { '$deleteFromPrimitiveList/finalizers': [SERVICE_CIDR_PROTECTION_FINALIZER] } };
    signal.throwIfAborted();
    try {
      this.#written.record(
        await this.#termRest.request<ServiceCIDRObject>({
          method: 'PATCH',
          path: servicecidrPath(name),
          query: { fieldManager: FIELD_MANAGER },
          body,
          contentType: PATCH_STRATEGIC,
          signal,
        }),
      );
    } catch (e) {
      if (apiCode(e) !== 404) throw e;
    }
    this.#log.info(
      4,
      op === 'add'
        ? 'Added protection finalizer to ServiceCIDR'
        : 'Removed protection finalizer from ServiceCIDRs',
      { ServiceCIDR: name },
    );
  }

  /** Server-side apply of one condition to /status, only when status, reason or message differ. */
  async #updateConditionIfNeeded(cidr: ServiceCIDRObject, c: Condition, signal: AbortSignal): Promise<void> {
    const name = cidr.metadata?.name ?? '';
    const cur = (cidr.status?.conditions ?? []).find((x) => x?.type === c.type);
    if (
      cur &&
      cur.status === c.status &&
      (cur.reason ?? '') === c.reason &&
      (cur.message ?? '') === c.message
    ) {
      this.#log.info(4, 'ServiceCIDR condition already up to date', { ServiceCIDR: name, condition: c.type });
      return;
    }
    this.#log.info(2, 'Updating ServiceCIDR condition', { ServiceCIDR: name, condition: c });
    signal.throwIfAborted();
    const written = await this.#termRest.request<ServiceCIDRObject>({
      method: 'PATCH',
      path: `${servicecidrPath(name)}/status`,
      query: { fieldManager: CONTROLLER_NAME, force: true },
      body: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'ServiceCIDR',
        metadata: { name },
        // metav1.Now() on the wire: RFC 3339 to the second.
        status: {
          conditions: [{ ...c, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }],
        },
      },
      contentType: PATCH_APPLY,
      signal,
    });
    this.#written.record(written);
  }
}

/** An object's resourceVersion as a number (etcd's revision), or undefined. */
function revision(o: ServiceCIDRObject | undefined): bigint | undefined {
  const rv = o?.metadata?.resourceVersion;
  if (!rv || !/^[0-9]+$/.test(rv)) return undefined;
  return BigInt(rv);
}

/**
 * client-go's integer-resourceVersion MutationCache for the objects this controller wrote: a
 * write's response is newer than the informer's copy until the watch delivers it. Without it,
 * the requeue caused by the finalizer patch's own watch event can run before the status write
 * has come back over the watch, see no Ready condition, and apply the status a second time.
 * The informer's copy wins as soon as it is as new, and a deleted object is not revived.
 */
class WriteCache {
  readonly #objects = new Map<string, ServiceCIDRObject>();

  record(o: ServiceCIDRObject | undefined): void {
    const name = o?.metadata?.name;
    if (name && o && revision(o) !== undefined) this.#objects.set(name, trimObject(o));
  }

  /** The newer of the informer's copy of `name` and this cache's; undefined once deleted. */
  newest(name: string, cached: ServiceCIDRObject | undefined): ServiceCIDRObject | undefined {
    const written = this.#objects.get(name);
    if (!written) return cached;
    const w = revision(written);
    const c = revision(cached);
    if (!cached || c === undefined || w === undefined || c >= w) {
      this.#objects.delete(name);
      return cached;
    }
    return written;
  }
}

function servicecidrPath(name: string): string {
  return `/apis/networking.k8s.io/v1/servicecidrs/${encodeURIComponent(name)}`;
}
