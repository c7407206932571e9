// A watch-backed cache that keeps going, shared by both daemons: client-node's informer stops on
// any list or watch error other than 410 Gone, so this restarts it after a capped exponential
// backoff like client-go's reflector (800 ms first, 30 s cap, jittered), resuming from the last
// resourceVersion (a 410 makes it relist and report vanished objects as deletions). The backoff
// resets only once the server answered: a successful list or a watch event. client-node fires
// `connect` at the start of every attempt, failed ones included, so that is no sign of health.
// Each informer restarts alone and only after it failed: `start()` on a running informer aborts
// its watch, which would come back as one more error.
import type { KubeConfig, KubernetesObject, ListPromise } from '@kubernetes/client-node';
import { ListWatch, type ObjectList } from './list-watch.js';
import type { KubeRest } from './rest.js';
import { settledWatch, WatchListSource, watchOf } from './watch-list.js';

/** Pauses between restarts of a failed watch: doubling from `initialMs` up to `maxMs`, with jitter. */
export interface WatchBackoff {
  /** First pause after a failure (default 800 ms, client-go's reflector). */
  initialMs?: number;
  /** Longest pause (default 30 s). */
  maxMs?: number;
  /**
   * Extra random share of each pause, 0 to 1 (default 0.1). client-go adds up to 100%; a
   * smaller share still spreads restarts of many nodes while each pause stays longer than the
   * one before.
   */
  jitter?: number;
}

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(obj: T): void;
  delete?(obj: T): void;
}

/** The part of a klog-style logger the informer writes to. */
export interface InformerLog {
  info(v: number, msg: string, kv?: Record<string, unknown>): void;
  error(msg: string, err: unknown, kv?: Record<string, unknown>): void;
}

export interface InformerOptions {
  backoff?: WatchBackoff;
  /** Each list or watch failure (default: logged at V(2) with the next pause). */
  onError?: (err: unknown, backoffMs: number) => void;
  /** A handler that threw (default: logged as an error). The watch goes on either way. */
  onHandlerError?: (err: unknown, event: 'add' | 'update' | 'delete') => void;
  /**
   * Take the initial state over the watch (`sendInitialEvents=true`) instead of a LIST, as
   * client-go's WatchListClient does; a server that refuses it gets the LIST (default false).
   */
  watchList?: boolean;
}

const isAbort = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';

export class ResilientInformer<T extends KubernetesObject> {
  readonly #inf: ListWatch<T>;
  readonly #source: WatchListSource<T> | undefined;
  readonly #kind: string;
  readonly #log: InformerLog;
  readonly #opts: InformerOptions;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #jitter: number;
  #stopped = false;
  #listed = false;
  #synced = false;
  #backoffMs = 0;
  #timer: NodeJS.Timeout | undefined;
  /** True while our own `start()` call runs (an abort then is ours, not a failure). */
  #starting = false;
  #syncWaiters: (() => void)[] = [];
  /** Restart attempts made after failures. */
  restarts = 0;

  /**
   * Watches `path` through `client`: a lean client (ts/kube/rest.ts), or a client-node
   * `KubeConfig` (which loads client-node). `list` is the LIST of `path`; with a lean client it
   * may be left out (a GET of `path`).
   */
  constructor(
    client: KubeConfig | KubeRest,
    path: string,
    list: ListPromise<T> | undefined,
    kind: string,
    log: InformerLog,
    options: InformerOptions = {},
  ) {
    const failed = (err: unknown) => this.#failed(err);
    if (!list && typeof (client as KubeRest).request !== 'function') {
      throw new TypeError('ResilientInformer: a KubeConfig needs the list function of the path');
    }
    const fetchList =
      (list as (() => Promise<ObjectList<T>>) | undefined) ??
      (() => (client as KubeRest).request<ObjectList<T>>({ path }));
    const source = options.watchList
      ? new WatchListSource<T>(client, path, fetchList as ListPromise<T>, failed)
      : undefined;
    this.#source = source;
    const listed = async (): Promise<ObjectList<T>> => {
      const r = await (source ? source.list() : fetchList());
      this.#listed = true;
      this.#healthy();
      return r;
    };
    // A watch that cannot reject (see settledWatch).
    const watch = source ? source.watch : settledWatch(watchOf(client), failed);
    this.#inf = new ListWatch<T>(path, watch, listed);
    this.#kind = kind;
    this.#log = log;
    this.#opts = options;
    const b = options.backoff ?? {};
    this.#initialMs = Math.max(1, b.initialMs ?? 800);
    this.#maxMs = Math.max(this.#initialMs, b.maxMs ?? 30_000);
    this.#jitter = Math.min(1, Math.max(0, b.jitter ?? 0.1));
    this.#inf.on('error', failed);
    // A watch event proves the watch works again.
    const healthy = () => this.#healthy();
    this.#inf.on('add', healthy);
    this.#inf.on('update', healthy);
    this.#inf.on('delete', healthy);
  }

  /** The pause before the next restart attempt without its jitter (0 while healthy). */
  get backoffMs(): number {
    return this.#backoffMs;
  }

  /** True once a list has succeeded. */
  get listed(): boolean {
    return this.#listed;
  }

  on(h: InformerHandlers<T>): void {
    // Handler exceptions must not kill the watch: report and go on.
    const guard = (what: 'add' | 'update' | 'delete', f: (o: T) => void) => (o: T) => {
      try {
        f(o);
      } catch (e) {
        if (this.#opts.onHandlerError) this.#opts.onHandlerError(e, what);
        else this.#log.error(`${this.#kind} ${what} handler failed`, e);
      }
    };
    if (h.add) this.#inf.on('add', guard('add', h.add));
    if (h.update) this.#inf.on('update', guard('update', h.update));
    if (h.delete) this.#inf.on('delete', guard('delete', h.delete));
  }

  #healthy(): void {
    this.#backoffMs = 0;
  }

  #failed(err: unknown): void {
    if (this.#stopped) return;
    if (this.#starting && isAbort(err)) return;
    // Several errors from one failure (list and watch) still give one restart and one step.
    const scheduled = this.#timer !== undefined;
    if (!scheduled) {
      this.#backoffMs = this.#backoffMs === 0 ? this.#initialMs : Math.min(this.#maxMs, this.#backoffMs * 2);
    }
    if (this.#opts.onError) this.#opts.onError(err, this.#backoffMs);
    else {
      this.#log.info(2, 'Watch failed, restarting', {
        resource: this.#kind,
        err,
        backoff: `${this.#backoffMs}ms`,
      });
    }
    if (scheduled) return;
    const pause = this.#backoffMs * (1 + this.#jitter * Math.random());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.restarts++;
      this.#attempt().catch((e) => this.#failed(e));
    }, pause);
    // Not unref'd: while the API server is unreachable this timer is all that is left of a
    // started daemon, and the process must not quietly run out of work; stop() clears it.
  }

  async #attempt(): Promise<void> {
    if (this.#stopped) return;
    let failed = false;
    const onErr = () => {
      failed = true;
    };
    this.#inf.on('error', onErr);
    this.#starting = true;
    try {
      await this.#inf.start();
    } catch (e) {
      // Failures of list and watch come as 'error' events; a rejection is a setup failure.
      this.#starting = false;
      failed = true;
      this.#failed(e);
    } finally {
      this.#starting = false;
      this.#inf.off('error', onErr);
    }
    // A stop() during the list or while the watch connected found no request to abort, and
    // client-node opens the watch anyway: abort it now, or it keeps the process alive.
    if (this.#stopped) await this.#inf.stop();
    if (!failed && !this.#synced && !this.#stopped) {
      this.#synced = true;
      for (const w of this.#syncWaiters.splice(0)) w();
    }
  }

  /**
   * Lists, then watches; resolves after this first attempt whatever its outcome (a failure is
   * reported and retried like any other).
   */
  async run(): Promise<void> {
    this.#stopped = false;
    await this.#attempt();
  }

  /** Starts listing and watching; resolves once the first list has been loaded. */
  async start(): Promise<void> {
    const synced = this.waitForSync();
    this.run().catch((e) => this.#failed(e));
    await synced;
  }

  waitForSync(): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((r) => this.#syncWaiters.push(r));
  }

  get hasSynced(): boolean {
    return this.#synced;
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#inf.get(name, namespace);
  }

  list(namespace?: string): T[] {
    return [...this.#inf.list(namespace)];
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const w of this.#syncWaiters.splice(0)) w();
    this.#source?.abort();
    await this.#inf.stop();
  }
}
