// StaleFlowReconciler: for a Node agent. Watches Services and EndpointSlices with informers,
// keeps the tables, and runs the cleanup when a UDP service port's endpoints changed
// (upstream's ConntrackCleanupRequired), per IP family, plus a full pass every
// fullResyncPeriodMs.
import { performance } from 'node:perf_hooks';
import type { KubeConfig, KubernetesObject, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { connectionFromKubeConfig, isKubeConnection } from '../kube/connection.js';
import { EventRecorder } from '../kube/events.js';
import {
  type InformerLog,
  type InformerOptions,
  ResilientInformer,
  type WatchBackoff,
} from '../kube/informer.js';
import { type KubeConnection, type KubeRest, restClient } from '../kube/rest.js';
import { nextRunAt } from './bounded-frequency.js';
import { type CleanResult, cleanStaleEntries } from './clean.js';
import { Conntrack, type TableStats } from './client.js';
import { type EventIndexOptions, enableEventIndex } from './event-index.js';
import { endpointsTable, serviceEntries, udpPortKeys } from './k8s.js';
import type { ConntrackMetrics } from './metrics.js';
import { PodIpPurge, type PurgeResult } from './purge.js';
import { conntrackKubernetesVersion } from './release.js';
import { checkFullThreshold, REASON_TABLE_NEARLY_FULL, TableHealth } from './table-health.js';
import type { IPFamily } from './tables.js';

/** Informer failures go to `onError`, not to a log. */
const SILENT: InformerLog = { info() {}, error() {} };

/** User agent of every request the reconciler makes. */
export const USER_AGENT = 'kubenode-conntrack-reconciler';

/** Options of `StaleFlowReconciler`. */
export interface ReconcilerOptions {
  /** Families to reconcile (default both). */
  families?: IPFamily[];
  /**
   * Least time from the end of one sync to the start of the next (default 1000 ms, kube-proxy's
   * minSyncPeriod). A change after a quiet period syncs at once; changes within the period are
   * coalesced into one sync when it ends, as kube-proxy's BoundedFrequencyRunner does.
   */
  minSyncPeriodMs?: number;
  /** An open handle; default: one opened in this process's network namespace. */
  conntrack?: Conntrack;
  /** Where to record kube-proxy's metrics (`conntrackMetrics(registry)`); default: none. */
  metrics?: ConntrackMetrics | null;
  /** Select stale flows but delete nothing (default false). */
  dryRun?: boolean;
  /**
   * Kubernetes release whose cleanup rules apply (default: the newest kubenode knows, v1.37):
   * see `CleanOptions.kubernetesVersion`. Checked by the constructor.
   */
  kubernetesVersion?: string;
  /**
   * Between full passes a handle cleans only what the endpoint changes made stale; a full
   * pass runs at start-up and then at least this often per family (default 300000 ms), which
   * also catches flows that became stale between two passes.
   */
  fullResyncPeriodMs?: number;
  /**
   * Keep the live UDP flows per (frontend, endpoint) from conntrack events (`enableEventIndex`)
   * so passes between full ones delete the stale flows without walking the table; `true` for
   * the defaults. Off by default.
   */
  eventIndex?: boolean | EventIndexOptions;
  /** Pauses before restarting a failed watch (capped exponential backoff per informer). */
  watchBackoff?: WatchBackoff;
  /** Called after each cleanup pass. An exception it throws goes to `onError`. */
  onSync?: (family: IPFamily, result: CleanResult) => void;
  /**
   * Called with each failed pass or watch (`context.resource` names the failed watch's
   * resource). An exception it throws is dropped.
   */
  onError?: (err: unknown, context?: { resource: string }) => void;
  /**
   * This node's name: a failed cleanup pass is then also a Warning Event (reason
   * `ConntrackCleanupFailed`) about the Node, correlated like client-go's recorder. No Events
   * without it.
   */
  nodeName?: string;
  /**
   * Fraction of `nf_conntrack_max` at which the table is nearly full (default 0.9; 0 turns the
   * warning off): each crossing is a Warning Event (reason `ConntrackTableNearlyFull`) about
   * the Node, once until usage falls back below the re-arm point. Checked by the constructor.
   */
  fullThreshold?: number;
  /** How often the table's count is read for that warning (default 10000 ms). */
  tableCheckPeriodMs?: number;
  /**
   * Opt-in (default false), Calico's approach: when an endpoint address leaves every
   * EndpointSlice, delete all its flows, TCP too, in either direction. Upstream kube-proxy
   * deletes only UDP flows and leaves TCP flows to time out on purpose.
   */
  purgePodIPs?: boolean;
  /** Called after each purge that found addresses gone (with `purgePodIPs`). */
  onPurge?: (family: IPFamily, purge: PurgeResult) => void;
}

export const REASON_CLEANUP_FAILED = 'ConntrackCleanupFailed';

/**
 * Upstream's `ConntrackCleanupRequired`: true when, since the last sync, the endpoints of a
 * service changed and that service had a UDP port before or after the change. On the first
 * sync every service counts as changed, so it is true whenever any UDP endpoints exist.
 */
export class CleanupGate {
  #first = true;
  /** Changed services → whether they had UDP ports before their first pending change. */
  readonly #changed = new Map<string, boolean>();

  /** Records that `service`'s endpoints changed; `hadUdpBefore` is whether it had a UDP port before. */
  markChanged(service: string, hadUdpBefore: boolean): void {
    if (!this.#changed.has(service)) this.#changed.set(service, hadUdpBefore);
  }

  /** Consumes the pending changes. */
  take(hasUdpNow: (service: string) => boolean, anyUdpNow: boolean): boolean {
    let required = false;
    for (const [svc, before] of this.#changed) if (before || hasUdpNow(svc)) required = true;
    if (this.#first) {
      required = anyUdpNow;
      this.#first = false;
    }
    this.#changed.clear();
    return required;
  }

  /** Number of services with changes not yet consumed by `take`. */
  get pending(): number {
    return this.#changed.size;
  }
}

function serviceKey(slice: V1EndpointSlice): string | undefined {
  const svc = slice.metadata?.labels?.['kubernetes.io/service-name'];
  return svc ? `${slice.metadata?.namespace ?? 'default'}/${svc}` : undefined;
}

/**
 * kube-proxy's conntrack cleanup as a standalone loop: watches Services and EndpointSlices and,
 * when a UDP service port's endpoints changed, runs `cleanStaleEntries` per family (coalesced by
 * `minSyncPeriodMs`), plus a full pass every `fullResyncPeriodMs`. Failures go to `onError`
 * (and are retried at the next period); a watch that fails is restarted with backoff.
 */
export class StaleFlowReconciler {
  readonly #cluster: KubeConfig | KubeConnection;
  /** The lean client of every request and watch (made at start from a KubeConfig). */
  #rest: KubeRest | undefined;
  readonly #opts: ReconcilerOptions;
  #events: EventRecorder | undefined;
  readonly #families: IPFamily[];
  #services?: ResilientInformer<V1Service>;
  #slices?: ResilientInformer<V1EndpointSlice>;
  #ct?: Conntrack;
  #ownCt = false;
  /** The one timer of the next sync, asked for or periodic. */
  #timer: NodeJS.Timeout | undefined;
  #syncing: Promise<void> | undefined;
  /** When a sync was first asked for since the last one started (performance.now()). */
  #requestedAt: number | undefined;
  /** When the last sync ended (performance.now()); undefined before the first. */
  #lastSyncEnd: number | undefined;
  /** Events of the initial lists wait for start(): the first sync sees both caches. */
  #started = false;
  #stopped = false;
  readonly #gates = new Map<IPFamily, CleanupGate>();
  /** EndpointSlices by UID, as last seen (the "previous" state for the gate). */
  readonly #sliceCache = new Map<string, V1EndpointSlice>();
  /** When each family's last full pass started (performance.now()). */
  readonly #lastFull = new Map<IPFamily, number>();
  /** Families whose last pass failed: the next resync retries them even with no change. */
  readonly #owed = new Set<IPFamily>();
  #health: TableHealth | undefined;
  readonly #purge = new PodIpPurge();
  /** Cleanup passes completed so far (a sync runs one per family whose UDP endpoints changed). */
  syncs = 0;

  /**
   * `cluster`: a connection from `loadKubeConfig()` (no client-node loaded unless its user
   * needs a credential plugin), or a client-node `KubeConfig`.
   */
  constructor(cluster: KubeConfig | KubeConnection, options: ReconcilerOptions = {}) {
    this.#cluster = cluster;
    if (isKubeConnection(cluster)) this.#rest = restClient(cluster, USER_AGENT);
    this.#opts = options;
    // A release kubenode has no rules for fails here, not at the first pass.
    if (options.kubernetesVersion !== undefined) conntrackKubernetesVersion(options.kubernetesVersion);
    if (options.fullThreshold !== undefined) checkFullThreshold(options.fullThreshold);
    this.#families = options.families ?? ['IPv4', 'IPv6'];
    for (const f of this.#families) this.#gates.set(f, new CleanupGate());
  }

  /**
   * Opens the conntrack handle (unless one was given), starts both informers and schedules the
   * first sync. Rejects when the handle cannot be opened (`ConntrackPermissionError`, …).
   */
  async start(): Promise<void> {
    this.#ct = this.#opts.conntrack ?? (await Conntrack.open());
    this.#ownCt = this.#opts.conntrack === undefined;
    if (this.#stopped) {
      // stop() ran while the handle was being opened: it could not close it.
      if (this.#ownCt) this.#ct.close();
      return;
    }
    const index = this.#opts.eventIndex;
    if (index) {
      await enableEventIndex(this.#ct, index === true ? {} : index).catch((e: unknown) => {
        if (this.#ownCt) this.#ct?.close();
        throw e;
      });
    }
    if (!this.#rest) {
      const connection = await connectionFromKubeConfig(this.#cluster as KubeConfig);
      this.#rest = restClient(connection, USER_AGENT);
    }
    const rest = this.#rest;
    this.#health = new TableHealth(this.#ct, {
      ...(this.#opts.fullThreshold !== undefined ? { threshold: this.#opts.fullThreshold } : {}),
      onNearlyFull: (message) => this.#warn(REASON_TABLE_NEARLY_FULL, message),
      onError: (e) => this.#report(e),
    });
    this.#health.start(this.#opts.tableCheckPeriodMs);
    const handlerError = (e: unknown) => this.#report(e);
    const options = (resource: string): InformerOptions => ({
      ...(this.#opts.watchBackoff ? { backoff: this.#opts.watchBackoff } : {}),
      onError: (err) => this.#report(err, { resource }),
      onHandlerError: handlerError,
    });
    const informer = <T extends KubernetesObject>(path: string, kind: string) =>
      new ResilientInformer<T>(rest, path, undefined, kind, SILENT, options(path.split('/').at(-1) ?? path));
    const services = informer<V1Service>('/api/v1/services', 'Service');
    const slices = informer<V1EndpointSlice>('/apis/discovery.k8s.io/v1/endpointslices', 'EndpointSlice');
    this.#services = services;
    this.#slices = slices;
    slices.on({
      add: (s) => this.#sliceChanged(s, false),
      update: (s) => this.#sliceChanged(s, false),
      delete: (s) => this.#sliceChanged(s, true),
    });
    const onService = () => this.#schedule();
    services.on({ add: onService, update: onService, delete: onService });
    // Each informer's own list success resets only its own backoff; a failed first attempt is
    // retried in the background, so start() does not wait for the API server.
    await Promise.all([services.run(), slices.run()]);
    if (this.#stopped) return;
    this.#started = true;
    this.#schedule();
  }

  /**
   * When the next periodic full pass is due: a period after the oldest family's last full pass
   * started, or a period after a failed pass ended (upstream's retry interval, here the
   * resync period). Timed from the last full pass, not from the last sync, so targeted passes
   * never postpone a full one.
   */
  #fullPassDueAt(): number {
    const period = this.#fullResyncPeriodMs();
    let due = Number.POSITIVE_INFINITY;
    for (const f of this.#families) {
      const last = this.#lastFull.get(f);
      if (last !== undefined) due = Math.min(due, last + period);
      if (this.#owed.has(f) && this.#lastSyncEnd !== undefined)
        due = Math.min(due, this.#lastSyncEnd + period);
    }
    return due;
  }

  #fullResyncPeriodMs(): number {
    return this.#opts.fullResyncPeriodMs ?? 300_000;
  }

  /** True once both Services and EndpointSlices have been listed (the caches are filled). */
  get synced(): boolean {
    return (this.#services?.listed ?? false) && (this.#slices?.listed ?? false);
  }

  /** Restart attempts of failed watches so far. */
  get watchRestarts(): number {
    return (this.#services?.restarts ?? 0) + (this.#slices?.restarts ?? 0);
  }

  /**
   * A reading of the table (for metrics): fresh, or the previous one while a pass holds the
   * handle; none before `start()`.
   */
  async tableStats(): Promise<TableStats | undefined> {
    return this.#health?.current();
  }

  #cleanupFailed(family: IPFamily, err: unknown): void {
    const message = `${family} conntrack cleanup failed: ${err instanceof Error ? err.message : String(err)}`;
    this.#warn(REASON_CLEANUP_FAILED, message);
  }

  /** A Warning Event about this Node (kube-proxy's node reference: the name doubles as UID). */
  #warn(reason: string, message: string): void {
    const node = this.#opts.nodeName;
    if (!node || !this.#rest) return;
    this.#events ??= new EventRecorder({
      rest: this.#rest,
      source: { component: USER_AGENT, host: node },
      fieldManager: USER_AGENT,
      // Event write failures reach onError like any other failure.
      log: { info() {}, error: (msg, e) => this.#report(e instanceof Error ? e : new Error(msg)) },
    });
    void this.#events.warning({ kind: 'Node', name: node, uid: node }, reason, message);
  }

  /** Hands an error to `onError`; the callback's own exception must not take the process down. */
  #report(err: unknown, context?: { resource: string }): void {
    if (this.#stopped) return;
    try {
      this.#opts.onError?.(err, context);
    } catch {
      // Nothing left to tell: the error callback itself failed.
    }
  }

  #sliceChanged(s: V1EndpointSlice, deleted: boolean): void {
    const svc = serviceKey(s);
    const uid = s.metadata?.uid ?? `${s.metadata?.namespace}/${s.metadata?.name}`;
    if (svc) {
      for (const f of this.#families) {
        const before = udpPortKeys(this.#slicesOf(svc), f).size > 0;
        this.#gates.get(f)?.markChanged(svc, before);
      }
    }
    if (deleted) this.#sliceCache.delete(uid);
    else this.#sliceCache.set(uid, s);
    this.#schedule();
  }

  #slicesOf(svc: string): V1EndpointSlice[] {
    return [...this.#sliceCache.values()].filter((s) => serviceKey(s) === svc);
  }

  /** Asks for a sync (upstream's `BoundedFrequencyRunner.Run`): see `#arm` for when it starts. */
  #schedule(): void {
    if (this.#stopped || !this.#started) return;
    this.#requestedAt ??= performance.now();
    this.#arm();
  }

  /**
   * Sets the one timer to the next sync's start (`nextRunAt`): at once when one was asked for
   * and the last ended at least minSyncPeriodMs ago, else when that period is over (the bound
   * is from the end of one sync to the start of the next, and requests meanwhile collapse into
   * one sync); without a request, when a full pass is due. While a sync runs nothing is armed:
   * its end arms the next. A timer that only waits for a full pass is unref'd, so it never
   * keeps the process alive.
   */
  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#stopped || !this.#started || this.#syncing) return;
    const at = nextRunAt(
      { lastEnd: this.#lastSyncEnd, requestedAt: this.#requestedAt, dueAt: this.#fullPassDueAt() },
      this.#opts.minSyncPeriodMs ?? 1000,
    );
    if (at === Number.POSITIVE_INFINITY) return;
    // At most 2^31-1 ms: setTimeout turns a longer delay into 1 ms.
    const delay = Math.min(2 ** 31 - 1, Math.max(0, at - performance.now()));
    this.#timer = setTimeout(() => this.#run(), delay);
    if (this.#requestedAt === undefined) this.#timer.unref();
  }

  #run(): void {
    this.#timer = undefined;
    this.#requestedAt = undefined;
    this.#syncing = this.#sync()
      .catch((e) => this.#report(e))
      .finally(() => {
        this.#syncing = undefined;
        this.#lastSyncEnd = performance.now();
        this.#arm();
      });
  }

  /** One sync: for each family whose gate says so, one cleanup pass. */
  async #sync(): Promise<void> {
    const ct = this.#ct;
    if (!ct || this.#stopped) return;
    const services = this.#services?.list() ?? [];
    const slices = [...this.#sliceCache.values()];
    for (const family of this.#families) {
      const gate = this.#gates.get(family);
      if (!gate) continue;
      if (this.#opts.purgePodIPs) await this.#purgeGone(ct, family, slices);
      const entries = services.flatMap((s) => serviceEntries(s, family));
      const anyUdp = udpPortKeys(slices, family).size > 0;
      const required = gate.take((svc) => udpPortKeys(this.#slicesOf(svc), family).size > 0, anyUdp);
      const lastFull = this.#lastFull.get(family);
      const started = performance.now();
      // Timers may fire a millisecond early; a pass that is due must not wait another period.
      const due = lastFull !== undefined && started - lastFull >= this.#fullResyncPeriodMs() - 5;
      const full = lastFull === undefined || due;
      if (!required && !due && !this.#owed.has(family)) continue;
      try {
        const r = await cleanStaleEntries(ct, family, entries, endpointsTable(slices, family), {
          dryRun: this.#opts.dryRun ?? false,
          ...(this.#opts.kubernetesVersion !== undefined
            ? { kubernetesVersion: this.#opts.kubernetesVersion }
            : {}),
          full,
          ...(this.#opts.metrics !== undefined ? { metrics: this.#opts.metrics } : {}),
        }).catch((e: unknown) => {
          this.#cleanupFailed(family, e);
          throw e;
        });
        this.#owed.delete(family);
        if (r.path === 'full') this.#lastFull.set(family, started);
        this.#opts.metrics?.passes?.inc({ ip_family: family, path: r.path });
        this.syncs++;
        this.#opts.onSync?.(family, r);
      } catch (e) {
        this.#owed.add(family);
        this.#opts.metrics?.failedPasses?.inc({ ip_family: family });
        this.#report(e);
      }
    }
  }

  /** The opt-in purge of the flows of addresses gone from every slice; failures go to onError. */
  async #purgeGone(ct: Conntrack, family: IPFamily, slices: V1EndpointSlice[]): Promise<void> {
    try {
      const p = await this.#purge.run(ct, family, slices, this.#opts.dryRun ?? false);
      if (p?.result) {
        this.#opts.metrics?.purgedPodIps?.inc({ ip_family: family }, p.ips.length);
        const { deleted, notFound } = p.result;
        if (deleted !== undefined)
          this.#opts.metrics?.purgedEntries?.inc({ ip_family: family }, deleted - notFound);
      }
      if (p) this.#opts.onPurge?.(family, p);
    } catch (e) {
      this.#report(e);
    }
  }

  /** Waits for the syncs asked for and the running one (tests). */
  async flush(): Promise<void> {
    while (this.#requestedAt !== undefined || this.#syncing) {
      await (this.#syncing ?? new Promise((r) => setTimeout(r, 20)));
    }
    await this.#health?.flush();
    await this.#events?.flush();
  }

  /** Stops the watches and timers, waits for a running pass, and closes a handle it opened. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#health?.stop();
    await this.#health?.flush();
    this.#events?.shutdown();
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // Nothing asked for runs any more: flush() must not wait for it.
    this.#requestedAt = undefined;
    await this.#syncing;
    await Promise.all([this.#services?.stop(), this.#slices?.stop()]);
    if (this.#ownCt) this.#ct?.close();
    this.#rest?.close();
  }
}
