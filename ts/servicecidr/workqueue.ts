// A rate-limiting work queue with client-go `util/workqueue` semantics: de-duplicated keys, an
// item is never handed to two workers at once, re-adds during processing are replayed on
// `done`, delayed adds keep the earliest deadline, and adds after shutdown are ignored.
import { noopQueueMetrics, type QueueMetrics, type QueueMetricsProvider } from './metrics.js';
import { defaultControllerRateLimiter, type RateLimiter } from './ratelimit.js';

/** Options of `RateLimitingQueue`. */
export interface WorkQueueOptions<T> {
  /** Queue name, the `name` label of its metrics (default `''`). */
  name?: string;
  /** Delays of `addRateLimited` (default: client-go's default controller rate limiter). */
  rateLimiter?: RateLimiter<T>;
  /** Where to report the workqueue metrics (default: nowhere). */
  metrics?: QueueMetricsProvider;
}

type Waiter<T> = (r: { item: T; shutdown: false } | { item: undefined; shutdown: true }) => void;

/** client-go's `TypedRateLimitingInterface`: a de-duplicating work queue with delayed and rate-limited adds. */
export class RateLimitingQueue<T> {
  /** Queue name, as given in the options. */
  readonly name: string;
  readonly #limiter: RateLimiter<T>;
  readonly #metrics: QueueMetrics;
  #queue: T[] = [];
  readonly #dirty = new Set<T>();
  readonly #processing = new Map<T, number>();
  readonly #addedAt = new Map<T, number>();
  readonly #waiting = new Map<T, { at: number; timer: NodeJS.Timeout }>();
  readonly #waiters: Waiter<T>[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions<T> = {}) {
    this.name = options.name ?? '';
    this.#limiter = options.rateLimiter ?? defaultControllerRateLimiter<T>();
    this.#metrics = options.metrics
      ? options.metrics.forQueue(this.name, () => this.#inflight())
      : noopQueueMetrics;
  }

  #inflight(): { unfinishedSeconds: number; longestSeconds: number } {
    const now = performance.now();
    let total = 0;
    let longest = 0;
    for (const start of this.#processing.values()) {
      const s = (now - start) / 1000;
      total += s;
      longest = Math.max(longest, s);
    }
    return { unfinishedSeconds: total, longestSeconds: longest };
  }

  /**
   * Queues `item` unless it is already waiting (or the queue is shutting down); an item being
   * processed is queued again on `done`.
   */
  add(item: T): void {
    if (this.#shuttingDown || this.#dirty.has(item)) return;
    this.#metrics.add();
    this.#dirty.add(item);
    this.#addedAt.set(item, performance.now());
    if (this.#processing.has(item)) return;
    const w = this.#waiters.shift();
    if (w) {
      this.#hand(item, w);
    } else {
      this.#queue.push(item);
    }
  }

  #hand(item: T, w: Waiter<T>): void {
    this.#dirty.delete(item);
    const now = performance.now();
    this.#metrics.get((now - (this.#addedAt.get(item) ?? now)) / 1000);
    this.#addedAt.delete(item);
    this.#processing.set(item, now);
    w({ item, shutdown: false });
  }

  /** Waits for the next item; `shutdown: true` once the queue is shut down and drained. */
  get(): Promise<
    | {
        /** The item to process; call `done(item)` when finished. */
        item: T;
        /** False: an item was handed out. */
        shutdown: false;
      }
    | {
        /** No item. */
        item: undefined;
        /** True: the queue is shut down and drained. */
        shutdown: true;
      }
  > {
    return new Promise((resolve) => {
      const item = this.#queue.shift();
      if (item !== undefined) {
        this.#hand(item, resolve);
      } else if (this.#shuttingDown) {
        resolve({ item: undefined, shutdown: true });
      } else {
        this.#waiters.push(resolve);
      }
    });
  }

  /** Marks `item` processed; if it was re-added meanwhile it goes back in the queue. */
  done(item: T): void {
    const start = this.#processing.get(item);
    if (start === undefined) return;
    this.#metrics.done((performance.now() - start) / 1000);
    this.#processing.delete(item);
    if (this.#dirty.has(item)) {
      const w = this.#waiters.shift();
      if (w) this.#hand(item, w);
      else this.#queue.push(item);
    }
  }

  /** Adds `item` after `ms`; an item already waiting keeps the earlier deadline. */
  addAfter(item: T, ms: number): void {
    if (this.#shuttingDown) return;
    this.#metrics.retry();
    if (!(ms > 0)) {
      this.add(item);
      return;
    }
    const at = performance.now() + ms;
    const prev = this.#waiting.get(item);
    if (prev) {
      if (prev.at <= at) return;
      clearTimeout(prev.timer);
    }
    const timer = setTimeout(() => {
      this.#waiting.delete(item);
      this.add(item);
    }, ms);
    timer.unref?.();
    this.#waiting.set(item, { at, timer });
  }

  /** Adds `item` after the rate limiter's delay for it (counts one failure). */
  addRateLimited(item: T): void {
    this.addAfter(item, this.#limiter.when(item));
  }

  /** Failures the rate limiter has recorded for `item`. */
  numRequeues(item: T): number {
    return this.#limiter.numRequeues(item);
  }

  /** Clears `item`'s failure count in the rate limiter (it does not remove the item). */
  forget(item: T): void {
    this.#limiter.forget(item);
  }

  /** Items queued and not yet handed out. */
  len(): number {
    return this.#queue.length;
  }

  /** Items waiting for a delayed add. */
  waitingCount(): number {
    return this.#waiting.size;
  }

  /** True once `shutDown` or `shutDownAndDiscard` was called. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /**
   * Shuts down and drops what is still queued (items being processed finish normally), taking
   * them off `workqueue_depth`: for an owner that will not drain, such as a controller whose
   * leadership term ended. Returns how many were dropped.
   */
  shutDownAndDiscard(): number {
    this.shutDown();
    const dropped = this.#queue.splice(0);
    for (const item of dropped) {
      this.#dirty.delete(item);
      this.#addedAt.delete(item);
    }
    // Re-adds of in-flight items (counted in depth when added) are dropped too, so `done`
    // does not requeue them.
    for (const item of this.#processing.keys()) {
      if (!this.#dirty.delete(item)) continue;
      this.#addedAt.delete(item);
      dropped.push(item);
    }
    if (dropped.length > 0) this.#metrics.discard(dropped.length);
    return dropped.length;
  }

  /** Stops accepting items; workers drain what is queued, then `get` reports shutdown. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#waiting.values()) clearTimeout(timer);
    this.#waiting.clear();
    for (const w of this.#waiters.splice(0)) w({ item: undefined, shutdown: true });
  }
}
