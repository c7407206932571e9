// A watch-backed cache that keeps going: client-node's informer stops on any error other than
// 410 Gone, so this wrapper restarts it with capped exponential backoff (resuming from the last
// resourceVersion; a 410 makes it relist and report vanished objects as deletions). The backoff
// resets only once the server answered: a successful list or a watch event. client-node fires
// `connect` at the start of every attempt, failed ones included, so that is no sign of health.
import type {
  Informer,
  KubeConfig,
  KubernetesObject,
  ListPromise,
  ObjectCache,
} from '@kubernetes/client-node';
import { clientNode } from '../peers.js';
import type { Logger } from './logger.js';

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(obj: T): void;
  delete?(obj: T): void;
}

export class ResilientInformer<T extends KubernetesObject> {
  readonly #inf: Informer<T> & ObjectCache<T>;
  readonly #kind: string;
  readonly #log: Logger;
  #stopped = false;
  #synced = false;
  #backoffMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #syncWaiters: (() => void)[] = [];

  constructor(kubeConfig: KubeConfig, path: string, list: ListPromise<T>, kind: string, log: Logger) {
    const listed: ListPromise<T> = async () => {
      const r = await list();
      this.#backoffMs = 0;
      return r;
    };
    this.#inf = clientNode().makeInformer<T>(kubeConfig, path, listed);
    this.#kind = kind;
    this.#log = log;
    this.#inf.on('error', (err) => this.#onError(err));
    const healthy = () => {
      this.#backoffMs = 0;
    };
    this.#inf.on('add', healthy);
    this.#inf.on('update', healthy);
    this.#inf.on('delete', healthy);
  }

  /** The delay before the next restart attempt (0 while healthy). */
  get backoffMs(): number {
    return this.#backoffMs;
  }

  on(h: InformerHandlers<T>): void {
    // Handler exceptions must not kill the watch: log and go on.
    const guard = (what: string, f: (o: T) => void) => (o: T) => {
      try {
        f(o);
      } catch (e) {
        this.#log.error(`${this.#kind} ${what} handler failed`, e);
      }
    };
    if (h.add) this.#inf.on('add', guard('add', h.add));
    if (h.update) this.#inf.on('update', guard('update', h.update));
    if (h.delete) this.#inf.on('delete', guard('delete', h.delete));
  }

  #onError(err: unknown): void {
    if (this.#stopped) return;
    this.#backoffMs = Math.min(30_000, this.#backoffMs === 0 ? 500 : this.#backoffMs * 2);
    this.#log.info(2, 'Watch failed, restarting', {
      resource: this.#kind,
      err,
      backoff: `${this.#backoffMs}ms`,
    });
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#startOnce(), this.#backoffMs);
  }

  async #startOnce(): Promise<void> {
    if (this.#stopped) return;
    let failed = false;
    const onErr = () => {
      failed = true;
    };
    this.#inf.on('error', onErr);
    try {
      await this.#inf.start();
    } catch (e) {
      failed = true;
      this.#onError(e);
    } finally {
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

  /** Starts listing and watching; resolves once the first list has been loaded. */
  async start(): Promise<void> {
    this.#stopped = false;
    const synced = this.waitForSync();
    void this.#startOnce();
    await synced;
  }

  waitForSync(): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((r) => this.#syncWaiters.push(r));
  }

  get hasSynced(): boolean {
    return this.#synced;
  }

  get(name: string): T | undefined {
    return this.#inf.get(name);
  }

  list(): T[] {
    return [...this.#inf.list()];
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const w of this.#syncWaiters.splice(0)) w();
    await this.#inf.stop();
  }
}
