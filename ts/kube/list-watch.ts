// The cache under ResilientInformer: list, then watch from the list's resourceVersion, keeping
// the objects by namespace and name and telling handlers of each add, update and delete. A
// watch that ends is reopened from the last resourceVersion seen (bookmarks move it too); a 410
// Gone, as an ERROR event or as the watch's answer, makes the next round relist, and objects
// missing from the new list are reported as deleted. Failures of a list or a watch go to the
// `error` handlers and end the round: the informer decides when to start again. The semantics
// of client-node's ListWatch, which this replaces so that the informer needs no client-node.
import { apiCode } from './api-error.js';
import type { WatchLike } from './watch-list.js';

/** The fields of an object the cache reads. */
export interface ObjectMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string } | undefined;
}

/** A LIST answer. */
export interface ObjectList<T> {
  metadata?: { resourceVersion?: string } | undefined;
  items: T[];
}

type Verb = 'add' | 'update' | 'delete' | 'error' | 'connect';
type Handler = (obj: never) => void;

export class ListWatch<T extends ObjectMeta> {
  readonly #path: string;
  readonly #watch: WatchLike;
  readonly #list: () => Promise<ObjectList<T>>;
  #objects = new Map<string, Map<string, T>>();
  readonly #handlers: Record<Verb, ((obj: unknown) => void)[]> = {
    add: [],
    update: [],
    delete: [],
    error: [],
    connect: [],
  };
  #resourceVersion = '';
  #request: AbortController | undefined;
  #stopped = false;

  constructor(path: string, watch: WatchLike, list: () => Promise<ObjectList<T>>) {
    this.#path = path;
    this.#watch = watch;
    this.#list = list;
  }

  on(verb: Verb, cb: Handler): void {
    this.#handlers[verb].push(cb as (obj: unknown) => void);
  }

  off(verb: Verb, cb: Handler): void {
    const list = this.#handlers[verb];
    const i = list.indexOf(cb as (obj: unknown) => void);
    if (i >= 0) list.splice(i, 1);
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.#done(null);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort();
  }

  get(name: string, namespace?: string): T | undefined {
    return this.#objects.get(namespace ?? '')?.get(name);
  }

  list(namespace?: string): T[] {
    if (namespace) return [...(this.#objects.get(namespace)?.values() ?? [])];
    const all: T[] = [];
    for (const m of this.#objects.values()) all.push(...m.values());
    return all;
  }

  latestResourceVersion(): string {
    return this.#resourceVersion;
  }

  #emit(verb: Verb, obj: unknown): void {
    for (const h of this.#handlers[verb].slice()) h(obj);
  }

  #abort(): void {
    this.#request?.abort();
    this.#request = undefined;
  }

  /** The end of a watch (or the first round): relist if needed, then watch again. */
  async #done(err: unknown): Promise<void> {
    this.#abort();
    if (err && apiCode(err) === 410) this.#resourceVersion = '';
    else if (err) {
      this.#emit('error', err);
      return;
    }
    if (this.#stopped) return;
    this.#emit('connect', undefined);
    if (!this.#resourceVersion) {
      let listed: ObjectList<T>;
      try {
        listed = await this.#list();
      } catch (e) {
        this.#emit('error', e);
        return;
      }
      this.#replace(listed.items ?? []);
      this.#resourceVersion = listed.metadata?.resourceVersion ?? '';
    }
    this.#request = await this.#watch.watch(
      this.#path,
      { resourceVersion: this.#resourceVersion },
      (phase, obj) => this.#event(phase, obj as T & { code?: number }),
      (e) => this.#done(e),
    );
  }

  #event(phase: string, obj: T & { code?: number }): void {
    switch (phase) {
      case 'ERROR':
        // The server ends the watch after an ERROR; a 410 makes the next round relist.
        if (obj.code === 410) this.#resourceVersion = '';
        return;
      case 'ADDED':
      case 'MODIFIED':
        this.#put(obj);
        break;
      case 'DELETED':
        this.#delete(obj);
        break;
    }
    this.#resourceVersion = obj.metadata?.resourceVersion ?? '';
  }

  #put(obj: T): void {
    const ns = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    let m = this.#objects.get(ns);
    if (!m) {
      m = new Map();
      this.#objects.set(ns, m);
    }
    const old = m.get(name);
    if (!old) {
      m.set(name, obj);
      this.#emit('add', obj);
      return;
    }
    const rv = old.metadata?.resourceVersion;
    if (rv !== undefined && rv !== null && rv === obj.metadata?.resourceVersion) return;
    m.set(name, obj);
    this.#emit('update', obj);
  }

  #delete(obj: T): void {
    const ns = obj.metadata?.namespace ?? '';
    const m = this.#objects.get(ns);
    if (!m?.delete(obj.metadata?.name ?? '')) return;
    if (m.size === 0) this.#objects.delete(ns);
    this.#emit('delete', obj);
  }

  /** A relist: objects gone from `items` are deleted, the rest added or updated. */
  #replace(items: T[]): void {
    const keep = new Set(items.map((o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`));
    for (const [ns, m] of this.#objects) {
      for (const [name, obj] of m) {
        if (keep.has(`${ns}/${name}`)) continue;
        m.delete(name);
        this.#emit('delete', obj);
      }
      if (m.size === 0) this.#objects.delete(ns);
    }
    for (const o of items) this.#put(o);
  }
}
