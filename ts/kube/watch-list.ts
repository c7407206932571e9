// Watch-list for client-node's ListWatch: the initial state comes over the watch itself
// (`sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`, ended by a bookmark annotated
// `k8s.io/initial-events-end`), as client-go's reflector does when its WatchListClient gate is
// on (kube-controller-manager v1.36's and v1.37's informers do). One request per informer instead of a
// LIST and a WATCH, and no list response held in memory at once.
//
// ListWatch calls `list()` and then `watch()` from the resourceVersion the list returned:
// `list()` opens the stream and resolves at the bookmark with the objects received so far,
// and the `watch()` that follows takes over that same stream. Any later `watch()` (a restart
// from a known resourceVersion) is a plain watch. A server that refuses the parameters (an
// error status before the first event) makes `list()` fall back to the given LIST for good.
import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ListPromise,
} from '@kubernetes/client-node';
import { clientNode } from '../peers.js';
import type { KubeRest } from './rest.js';

type Callback = (phase: string, obj: unknown, watchObj?: unknown) => void;
type Done = (err: unknown) => void;

/** The part of client-node's `Watch` that `ListWatch` uses. */
export interface WatchLike {
  watch(
    path: string,
    query: Record<string, unknown>,
    callback: Callback,
    done: Done,
  ): Promise<AbortController>;
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

const isRest = (s: KubeConfig | KubeRest): s is KubeRest => typeof (s as KubeRest).watch === 'function';

/** The watches of a lean client (no client-node) or of a client-node `KubeConfig`. */
export function watchOf(source: KubeConfig | KubeRest): WatchLike {
  return isRest(source) ? restWatch(source) : (new (clientNode().Watch)(source) as unknown as WatchLike);
}

/**
 * A lean client's watch in client-node's callback shape: `done(null)` when the server ends the
 * stream, `done(err)` on a failure or an error status (the error's `statusCode` is the status),
 * and an AbortError when the returned controller stops it first.
 */
export function restWatch(rest: KubeRest): WatchLike {
  return {
    watch: async (path, query, callback, done) => {
      const controller = new AbortController();
      rest
        .watch(
          path,
          query as Record<string, string | number | boolean | undefined>,
          (e) => callback(e.type, e.object, e),
          controller.signal,
        )
        .then(
          () =>
            done(
              controller.signal.aborted
                ? Object.assign(new Error('The watch was aborted'), { name: 'AbortError' })
                : null,
            ),
          (err) => done(err),
        );
      return controller;
    },
  };
}

/**
 * `w` whose `watch()` never rejects: a failure before the request is sent (credentials that
 * cannot be produced, no current cluster) reaches `done` like any failed request, and the
 * returned controller is already aborted. client-node's ListWatch calls `watch()` from its own
 * done handler, whose promise nobody awaits, so a rejection there would end the process. A
 * `done` that throws or rejects goes to `onError`, never up to the caller.
 */
export function settledWatch(w: WatchLike, onError: (err: unknown) => void): WatchLike {
  return {
    watch: async (path, query, callback, done) => {
      const safeDone: Done = (err) => {
        try {
          const r = (done as (e: unknown) => unknown)(err);
          if (r instanceof Promise) r.catch(onError);
        } catch (e) {
          onError(e);
        }
      };
      try {
        return await w.watch(path, query, callback, safeDone);
      } catch (e) {
        const controller = new AbortController();
        controller.abort();
        safeDone(e);
        return controller;
      }
    },
  };
}

interface Stream {
  resourceVersion: string;
  controller: AbortController;
  /** Events after the bookmark, until `watch()` takes the stream over. */
  buffered: [string, unknown, unknown][];
  ended: { err: unknown } | undefined;
  callback: Callback | undefined;
  done: Done | undefined;
}

/** A list and a watch for `ListWatch` over one watch-list request per (re)list. */
export class WatchListSource<T extends KubernetesObject> {
  readonly #watch: WatchLike;
  readonly #path: string;
  readonly #fallback: ListPromise<T>;
  #supported = true;
  #stream: Stream | undefined;
  /** The stream of a `list()` still waiting for its bookmark, for `abort()`. */
  #opening: AbortController | undefined;

  /** `onError`: a failure that no list or watch call could report (see {@link settledWatch}). */
  constructor(
    source: KubeConfig | KubeRest,
    path: string,
    fallback: ListPromise<T>,
    onError: (err: unknown) => void,
  ) {
    this.#watch = settledWatch(watchOf(source), onError);
    this.#path = path;
    this.#fallback = fallback;
  }

  /** False once the server refused a watch-list (the LIST is used from then on). */
  get supported(): boolean {
    return this.#supported;
  }

  /** The initial state as a list, received over a watch that `watch()` then continues. */
  readonly list = (): Promise<KubernetesListObject<T>> => {
    this.#drop();
    if (!this.#supported) return this.#fallback();
    return new Promise((resolve, reject) => {
      const items = new Map<string, T>();
      let settled = false;
      let events = 0;
      const stream: Stream = {
        resourceVersion: '',
        controller: new AbortController(),
        buffered: [],
        ended: undefined,
        callback: undefined,
        done: undefined,
      };
      const callback: Callback = (phase, obj, watchObj) => {
        events++;
        if (settled) {
          if (stream.callback) stream.callback(phase, obj, watchObj);
          else stream.buffered.push([phase, obj, watchObj]);
          return;
        }
        const o = obj as T & { code?: number };
        if (phase === 'ERROR') {
          settled = true;
          stream.controller.abort();
          const err = Object.assign(
            new Error(String((obj as { message?: unknown })?.message ?? 'watch error')),
            {
              code: o.code,
              statusCode: o.code,
            },
          );
          reject(err);
          return;
        }
        const key = `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
        if (phase === 'ADDED' || phase === 'MODIFIED') items.set(key, o);
        else if (phase === 'DELETED') items.delete(key);
        else if (phase === 'BOOKMARK' && o.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true') {
          settled = true;
          this.#opening = undefined;
          stream.resourceVersion = o.metadata?.resourceVersion ?? '';
          this.#stream = stream;
          resolve({
            apiVersion: 'v1',
            kind: 'List',
            metadata: { resourceVersion: stream.resourceVersion },
            items: [...items.values()],
          });
        }
      };
      const done: Done = (err) => {
        if (settled) {
          if (stream.done) stream.done(err);
          else stream.ended = { err };
          return;
        }
        settled = true;
        this.#opening = undefined;
        const status = (err as { statusCode?: unknown })?.statusCode;
        // Refused before any event: the server does not take the parameters.
        if (events === 0 && typeof status === 'number' && status >= 400 && status < 500 && status !== 410) {
          this.#supported = false;
          this.#fallback().then(resolve, reject);
          return;
        }
        reject(err ?? new Error('watch closed before the initial events ended'));
      };
      void this.#watch
        .watch(
          this.#path,
          {
            sendInitialEvents: true,
            resourceVersionMatch: 'NotOlderThan',
            allowWatchBookmarks: true,
          },
          callback,
          done,
        )
        .then((controller) => {
          stream.controller = controller;
          if (!settled) this.#opening = controller;
        });
    });
  };

  /** `ListWatch`'s watch: the stream `list()` opened when it asks from that version, else a new watch. */
  readonly watch: WatchLike = {
    watch: async (path, query, callback, done) => {
      const s = this.#stream;
      this.#stream = undefined;
      if (s && s.resourceVersion !== '' && query.resourceVersion === s.resourceVersion) {
        s.callback = callback;
        s.done = done;
        for (const [phase, obj, watchObj] of s.buffered.splice(0)) callback(phase, obj, watchObj);
        if (s.ended) done(s.ended.err);
        return s.controller;
      }
      s?.controller.abort();
      return this.#watch.watch(path, { ...query, allowWatchBookmarks: true }, callback, done);
    },
  };

  #drop(): void {
    this.#stream?.controller.abort();
    this.#stream = undefined;
  }

  /** Aborts a stream not yet handed to `watch()` (on stop). */
  abort(): void {
    this.#opening?.abort();
    this.#opening = undefined;
    this.#drop();
  }
}
