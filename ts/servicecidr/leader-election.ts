// Leader election over a coordination.k8s.io/v1 Lease, following client-go's
// `tools/leaderelection`: a candidate takes the lease when it is free or when the holder has not
// renewed it for `leaseDuration` (measured on the local clock from when the record last
// changed); the leader renews every `retryPeriod` and gives up when it cannot renew within
// `renewDeadline`. Writes use the Lease resourceVersion, so two candidates never both win.
// Every lease request is bounded by the renew deadline (client-go passes a context with that
// timeout): a hung connection must not keep an ex-leader believing it leads past the point
// where another candidate may take the lease.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Gauge, Registry } from 'prom-client';
import { KubenodeRangeError } from '../errors.js';
import { apiCode } from '../kube/api-error.js';
import type { KubeRest } from '../kube/rest.js';
import { promClient } from '../peers.js';
import type { Logger } from './logger.js';
import { microTime } from './micro-time.js';

/** The fields of a coordination.k8s.io/v1 Lease the elector reads and writes. */
interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
  [field: string]: unknown;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  spec?: LeaseSpec;
}

/** Options of leader election (client-go's `LeaderElectionConfig`). */
export interface LeaderElectionOptions {
  /** Lease namespace (default `kube-system`). */
  namespace?: string;
  /** Lease name (default `service-cidr-controller`). */
  name?: string;
  /** Holder identity (default `<hostname>_<uuid>`, as kube-controller-manager). */
  identity?: string;
  /**
   * How long a lease not renewed stays the holder's, in ms (default 15 s, as
   * kube-controller-manager). Must exceed `renewDeadlineMs`.
   */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before giving up, in ms (default 10 s). */
  renewDeadlineMs?: number;
  /** Pause between acquire/renew attempts, in ms (default 2 s); must be below `renewDeadlineMs`. */
  retryPeriodMs?: number;
  /** Give the lease up on a clean stop so another instance takes over at once (default true). */
  releaseOnCancel?: boolean;
  /** Field manager of the Lease writes (the controller passes its own). */
  fieldManager?: string;
  /**
   * Where to export `kubenode_leader_election_master_status{name}` (client-go's
   * `leader_election_master_status`: 1 while leading, else 0); default: nowhere.
   */
  registry?: Registry;
}

/** Name of the leadership gauge (client-go's `leader_election_master_status`). */
export const LEADER_STATUS = 'kubenode_leader_election_master_status';

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    // setTimeout turns a delay past 2^31-1 ms into 1 ms: a jittered long retry period must not.
    const t = setTimeout(done, Math.min(ms, 2 ** 31 - 1));
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Leader election over a `coordination.k8s.io/v1` Lease, as client-go's `LeaderElector`.
 * @throws KubenodeRangeError (`ERR_KUBENODE_OUT_OF_RANGE`) unless
 * leaseDuration > renewDeadline > retryPeriod > 0.
 */
export class LeaderElector {
  /** This candidate's holder identity. */
  readonly identity: string;
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Name of the Lease. */
  readonly name: string;
  readonly #leaseMs: number;
  readonly #renewMs: number;
  readonly #retryMs: number;
  readonly #release: boolean;
  readonly #fieldManager: string | undefined;
  #observed: string | undefined;
  #observedAt = 0;
  #isLeader = false;
  readonly #status: Gauge<'name'> | undefined;

  readonly #path: string;

  /** `api`: the lean client (ts/kube/rest.ts) the Lease is read and written through. */
  constructor(
    private readonly api: KubeRest,
    private readonly log: Logger,
    o: LeaderElectionOptions = {},
  ) {
    this.identity = o.identity ?? `${hostname()}_${randomUUID()}`;
    this.namespace = o.namespace ?? 'kube-system';
    this.name = o.name ?? 'service-cidr-controller';
    this.#leaseMs = o.leaseDurationMs ?? 15_000;
    this.#renewMs = o.renewDeadlineMs ?? 10_000;
    this.#retryMs = o.retryPeriodMs ?? 2_000;
    this.#release = o.releaseOnCancel ?? true;
    this.#fieldManager = o.fieldManager;
    if (!(this.#leaseMs > this.#renewMs && this.#renewMs > this.#retryMs && this.#retryMs > 0)) {
      throw new KubenodeRangeError('leader election needs leaseDuration > renewDeadline > retryPeriod > 0');
    }
    this.#path = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/leases`;
    if (o.registry) {
      const { Gauge } = promClient();
      this.#status =
        (o.registry.getSingleMetric(LEADER_STATUS) as Gauge<'name'> | undefined) ??
        new Gauge({
          name: LEADER_STATUS,
          help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
          labelNames: ['name'],
          registers: [o.registry],
        });
      this.#status.set({ name: this.name }, 0);
    }
  }

  #setLeader(leading: boolean): void {
    this.#isLeader = leading;
    this.#status?.set({ name: this.name }, leading ? 1 : 0);
  }

  /** True while this candidate holds the lease. */
  get isLeader(): boolean {
    return this.#isLeader;
  }

  /**
   * Campaigns until `signal` aborts. While leading, `lead(leaderSignal)` runs; `leaderSignal`
   * aborts when leadership is lost or `signal` aborts. After losing, it campaigns again.
   */
  async run(signal: AbortSignal, lead: (leaderSignal: AbortSignal) => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      if (!(await this.#acquire(signal))) break;
      if (signal.aborted) {
        // Won the lease on the way out: hand it back rather than hold it for a lease duration.
        if (this.#release) await this.#releaseLease();
        break;
      }
      this.#setLeader(true);
      this.log.info(0, 'successfully acquired lease', { lease: `${this.namespace}/${this.name}` });
      const leading = new AbortController();
      const onAbort = () => leading.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      const work = lead(leading.signal).catch((e) => {
        this.log.error('leader work failed', e);
        leading.abort();
      });
      await this.#renewLoop(leading.signal);
      leading.abort();
      await work;
      signal.removeEventListener('abort', onAbort);
      this.#setLeader(false);
      if (signal.aborted) {
        if (this.#release) await this.#releaseLease();
        break;
      }
      this.log.info(0, 'leaderelection lost', { lease: `${this.namespace}/${this.name}` });
    }
  }

  async #acquire(signal: AbortSignal): Promise<boolean> {
    this.log.info(0, 'attempting to acquire leader lease', { lease: `${this.namespace}/${this.name}` });
    while (!signal.aborted) {
      if (await this.#tryAcquireOrRenew(AbortSignal.any([signal, AbortSignal.timeout(this.#renewMs)])))
        return true;
      // client-go waits retryPeriod with a 1.2 jitter factor.
      await sleep(this.#retryMs * (1 + Math.random() * 1.2), signal);
    }
    return false;
  }

  /**
   * Renews every retryPeriod; returns when `leading` aborts or no renewal succeeded within
   * renewDeadline of the last one. The request in flight at the deadline is aborted with it,
   * so this returns at the deadline even when the connection hangs.
   */
  async #renewLoop(leading: AbortSignal): Promise<void> {
    let lastRenew = performance.now();
    while (!leading.aborted) {
      await sleep(this.#retryMs, leading);
      if (leading.aborted) return;
      const left = lastRenew + this.#renewMs - performance.now();
      if (
        left > 0 &&
        (await this.#tryAcquireOrRenew(AbortSignal.any([leading, AbortSignal.timeout(Math.ceil(left))])))
      ) {
        lastRenew = performance.now();
      } else if (performance.now() - lastRenew >= this.#renewMs) {
        this.log.info(0, 'failed to renew lease', { lease: `${this.namespace}/${this.name}` });
        return;
      }
    }
  }

  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = microTime(Date.now());
    const leaseSeconds = Math.max(1, Math.ceil(this.#leaseMs / 1000));
    let lease: Lease;
    try {
      lease = await this.#read(signal);
    } catch (e) {
      if (apiCode(e) !== 404) {
        this.log.info(2, 'error retrieving resource lock', {
          lease: `${this.namespace}/${this.name}`,
          err: e,
        });
        return false;
      }
      try {
        await this.api.request<Lease>({
          method: 'POST',
          path: this.#path,
          query: { fieldManager: this.#fieldManager },
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: this.name, namespace: this.namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: leaseSeconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
          signal,
        });
        this.#observe(`${this.identity}|${new Date(now).toISOString()}`);
        return true;
      } catch (e2) {
        this.log.info(2, 'error initially creating leader election record', { err: e2 });
        return false;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = `${holder}|${spec.renewTime ? new Date(spec.renewTime).toISOString() : ''}|${spec.leaseDurationSeconds}`;
    if (record !== this.#observed) this.#observe(record);
    const heldMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder !== '' && holder !== this.identity && this.#observedAt + heldMs > performance.now()) {
      return false;
    }
    const mine = holder === this.identity;
    lease.spec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: leaseSeconds,
      renewTime: now,
      acquireTime: mine && spec.acquireTime ? spec.acquireTime : now,
      leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
    };
    try {
      const updated = await this.#replace(lease, signal);
      const s = updated.spec ?? {};
      this.#observe(
        `${s.holderIdentity ?? ''}|${s.renewTime ? new Date(s.renewTime).toISOString() : ''}|${s.leaseDurationSeconds}`,
      );
      return true;
    } catch (e) {
      this.log.info(2, 'Failed to update lock', { err: apiCode(e) === 409 ? 'conflict' : e });
      return false;
    }
  }

  #read(signal: AbortSignal): Promise<Lease> {
    return this.api.request<Lease>({ path: `${this.#path}/${encodeURIComponent(this.name)}`, signal });
  }

  /** An update guarded by the read's resourceVersion (a 409 when another candidate wrote first). */
  #replace(lease: Lease, signal: AbortSignal): Promise<Lease> {
    return this.api.request<Lease>({
      method: 'PUT',
      path: `${this.#path}/${encodeURIComponent(this.name)}`,
      query: { fieldManager: this.#fieldManager },
      body: lease,
      signal,
    });
  }

  #observe(record: string): void {
    this.#observed = record;
    this.#observedAt = performance.now();
  }

  async #releaseLease(): Promise<void> {
    const signal = AbortSignal.timeout(this.#renewMs);
    try {
      const lease = await this.#read(signal);
      if (lease.spec?.holderIdentity !== this.identity) return;
      const now = microTime(Date.now());
      lease.spec = {
        ...lease.spec,
        holderIdentity: '',
        leaseDurationSeconds: 1,
        renewTime: now,
        acquireTime: now,
      };
      await this.#replace(lease, signal);
      this.log.info(0, 'released leader lease', { lease: `${this.namespace}/${this.name}` });
    } catch (e) {
      this.log.error('Failed to release lock', e);
    }
  }
}
