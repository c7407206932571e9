// The BoundedFrequencyRunner timing rule on a fake clock: upstream's runner tables
// (pkg/proxy/runner, v1.37.2) replayed step by step. The reconciler's use of the rule with
// real timers runs against the real API server in apiserver.test.ts.
import { describe, expect, it } from 'vitest';
import { nextRunAt, periodicDueAt, type RunPeriods } from '../../ts/conntrack/bounded-frequency.js';

/**
 * A runner driven by a fake clock, like upstream's tests: `step` moves the clock, and a run
 * that became due during the step happens at the clock's new reading (a fake timer fires
 * when the clock is stepped past it). The work takes no time.
 */
class FakeRunner {
  now = 0;
  calls = 0;
  /** What the next run returns: true for a failure. */
  fail = false;
  #lastEnd: number | undefined;
  #lastFailed = false;
  #requestedAt: number | undefined;
  readonly #loopStart = 0;

  constructor(
    private readonly minIntervalMs: number,
    private readonly periods: RunPeriods,
  ) {}

  run(): void {
    this.#requestedAt ??= this.now;
    this.#settle();
  }

  step(ms: number): void {
    this.now += ms;
    this.#settle();
  }

  #settle(): void {
    const last = this.#lastEnd === undefined ? undefined : { end: this.#lastEnd, failed: this.#lastFailed };
    const at = nextRunAt(
      {
        lastEnd: this.#lastEnd,
        requestedAt: this.#requestedAt,
        dueAt: periodicDueAt(this.#loopStart, last, this.periods),
      },
      this.minIntervalMs,
    );
    if (at > this.now) return;
    this.#requestedAt = undefined;
    this.calls++;
    this.#lastFailed = this.fail;
    this.#lastEnd = this.now;
  }
}

describe('nextRunAt', () => {
  it('runs a request at once before the first run and after a quiet period, else at the bound', () => {
    expect(nextRunAt({ lastEnd: undefined, requestedAt: 7, dueAt: Number.POSITIVE_INFINITY }, 1000)).toBe(7);
    expect(nextRunAt({ lastEnd: 0, requestedAt: 2500, dueAt: Number.POSITIVE_INFINITY }, 1000)).toBe(2500);
    expect(nextRunAt({ lastEnd: 0, requestedAt: 300, dueAt: Number.POSITIVE_INFINITY }, 1000)).toBe(1000);
    expect(nextRunAt({ lastEnd: 0, requestedAt: undefined, dueAt: 500 }, 1000)).toBe(1000);
    expect(nextRunAt({ lastEnd: 0, requestedAt: undefined, dueAt: 9000 }, 1000)).toBe(9000);
    expect(nextRunAt({ lastEnd: 0, requestedAt: undefined, dueAt: Number.POSITIVE_INFINITY }, 1000)).toBe(
      Number.POSITIVE_INFINITY,
    );
  });
});

describe('BoundedFrequencyRunner timing (upstream tables, fake clock)', () => {
  const periods = { retryIntervalMs: 5000, maxIntervalMs: 10_000 };

  it('coalesces requests within minInterval and runs at least every maxInterval', () => {
    const r = new FakeRunner(1000, periods);
    r.run();
    expect(r.calls).toBe(1);
    r.step(500);
    r.run();
    expect(r.calls).toBe(1);
    r.step(499);
    r.run();
    expect(r.calls).toBe(1);
    r.step(1); // the deferred run
    expect(r.calls).toBe(2);
    r.run();
    expect(r.calls).toBe(2);
    r.step(1);
    r.run();
    expect(r.calls).toBe(2);
    r.step(998);
    expect(r.calls).toBe(2);
    r.step(1);
    expect(r.calls).toBe(3);
    r.step(1000); // minInterval over, nothing asked for
    expect(r.calls).toBe(3);
    r.step(10_000); // maxInterval
    expect(r.calls).toBe(4);
    r.step(1);
    r.run();
    expect(r.calls).toBe(4);
    r.step(999);
    expect(r.calls).toBe(5);
  });

  it('runs a failed run again after retryInterval, and a later run cancels the retry', () => {
    const r = new FakeRunner(1000, periods);
    r.fail = true;
    r.run();
    expect(r.calls).toBe(1);
    r.fail = false;
    r.step(1000);
    expect(r.calls).toBe(1);
    r.step(4000); // retryInterval after the failure
    expect(r.calls).toBe(2);
    r.step(499);
    r.fail = true;
    r.run();
    expect(r.calls).toBe(2);
    r.step(501);
    expect(r.calls).toBe(3);
    r.fail = false;
    r.step(1000);
    expect(r.calls).toBe(3);
    r.run(); // a successful run replaces the retry
    expect(r.calls).toBe(4);
    r.step(4000);
    expect(r.calls).toBe(4);
    r.fail = true;
    r.run();
    expect(r.calls).toBe(5);
    r.fail = false;
    r.step(100);
    r.run();
    expect(r.calls).toBe(5);
    r.step(900);
    expect(r.calls).toBe(6);
    r.step(4000);
    expect(r.calls).toBe(6);
    r.step(5000);
    expect(r.calls).toBe(6);
    r.step(1000); // maxInterval after the last run
    expect(r.calls).toBe(7);
  });

  it('waits out minInterval even when retryInterval is shorter', () => {
    const r = new FakeRunner(5000, { retryIntervalMs: 1000, maxIntervalMs: 10_000 });
    r.fail = true;
    r.run();
    expect(r.calls).toBe(1);
    r.fail = false;
    r.step(1000);
    expect(r.calls).toBe(1);
    r.step(3999);
    expect(r.calls).toBe(1);
    r.step(1);
    expect(r.calls).toBe(2);
    r.step(10_000);
    expect(r.calls).toBe(3);
  });

  it('runs after maxInterval from the start when nothing asks for a run', () => {
    const r = new FakeRunner(100, { retryIntervalMs: 200, maxIntervalMs: 500 });
    r.step(499);
    expect(r.calls).toBe(0);
    r.step(1);
    expect(r.calls).toBe(1);
  });

  it('runs a request at once after a quiet period of two minIntervals', () => {
    const r = new FakeRunner(500, { retryIntervalMs: 800, maxIntervalMs: 1500 });
    r.run();
    r.step(1000);
    expect(r.calls).toBe(1);
    r.run();
    expect(r.calls).toBe(2);
    r.step(125);
    r.run();
    expect(r.calls).toBe(2);
  });
});
