// client-go `util/workqueue` rate limiters: per-item exponential backoff, a shared token bucket,
// and the default controller limiter (the max of both).

/** client-go's `TypedRateLimiter`: how long a failed item waits before its retry. Delays in ms. */
export interface RateLimiter<T> {
  /** How long to wait before `item` may be retried; counts as one failure. */
  when(item: T): number;
  /** Failures recorded for `item` since it was last forgotten. */
  numRequeues(item: T): number;
  /** Clears `item`'s failures (after it succeeded or was dropped). */
  forget(item: T): void;
}

/** `ItemExponentialFailureRateLimiter`: base·2^failures, capped at max (milliseconds). */
export class ItemExponentialFailureRateLimiter<T> implements RateLimiter<T> {
  readonly #failures = new Map<T, number>();
  constructor(
    /** Delay after the first failure, in ms. */
    readonly baseDelayMs: number,
    /** Longest delay, in ms. */
    readonly maxDelayMs: number,
  ) {}

  when(item: T): number {
    const exp = this.#failures.get(item) ?? 0;
    this.#failures.set(item, exp + 1);
    const backoff = this.baseDelayMs * 2 ** exp;
    return Number.isFinite(backoff) && backoff <= this.maxDelayMs ? backoff : this.maxDelayMs;
  }

  numRequeues(item: T): number {
    return this.#failures.get(item) ?? 0;
  }

  forget(item: T): void {
    this.#failures.delete(item);
  }
}

/**
 * `BucketRateLimiter` over `rate.NewLimiter(qps, burst)`: each `when` reserves one token and
 * returns how long until it is available (tokens may go negative, as with `Reserve`).
 */
export class BucketRateLimiter<T> implements RateLimiter<T> {
  #tokens: number;
  #last: number;
  constructor(
    /** Tokens added per second. */
    readonly qps: number,
    /** Bucket size: retries allowed at once before waits begin. */
    readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#tokens = burst;
    this.#last = now();
  }

  when(_item: T): number {
    const t = this.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((t - this.#last) / 1000) * this.qps);
    this.#last = t;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens / this.qps) * 1000;
  }

  numRequeues(_item: T): number {
    return 0;
  }

  forget(_item: T): void {}
}

/** `MaxOfRateLimiter`: the longest wait of all limiters; every limiter sees every call. */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  readonly #limiters: RateLimiter<T>[];
  constructor(...limiters: RateLimiter<T>[]) {
    this.#limiters = limiters;
  }

  when(item: T): number {
    let ret = 0;
    for (const l of this.#limiters) ret = Math.max(ret, l.when(item));
    return ret;
  }

  numRequeues(item: T): number {
    let ret = 0;
    for (const l of this.#limiters) ret = Math.max(ret, l.numRequeues(item));
    return ret;
  }

  forget(item: T): void {
    for (const l of this.#limiters) l.forget(item);
  }
}

/** `DefaultTypedControllerRateLimiter`: 5 ms·2ⁿ capped at 1000 s, with a 10 qps / burst 100 bucket. */
export function defaultControllerRateLimiter<T>(): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(
    new ItemExponentialFailureRateLimiter<T>(5, 1000 * 1000),
    new BucketRateLimiter<T>(10, 100),
  );
}
