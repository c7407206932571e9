// --kube-api-qps / --kube-api-burst: client-go's token bucket.
import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../ts/kube/client-ratelimit.js';

describe('TokenBucket', () => {
  it('lets a burst through at once, then one request per 1/qps seconds, in order', () => {
    const b = new TokenBucket(10, 3);
    const t0 = (now: number) => b.reserve(now);
    const start = performance.now();
    expect([t0(start), t0(start), t0(start)]).toEqual([0, 0, 0]);
    // The fourth and fifth wait 100 ms and 200 ms.
    expect(t0(start)).toBeCloseTo(100, 5);
    expect(t0(start)).toBeCloseTo(200, 5);
    // Half a second later 5 tokens have come back, 2 of them owed: 3 free, capped at the burst.
    expect(t0(start + 500)).toBe(0);
    expect(t0(start + 500)).toBe(0);
    expect(t0(start + 500)).toBe(0);
    expect(t0(start + 500)).toBeCloseTo(100, 5);
  });

  it('a deficit of a float rounding error is no wait, whatever the clock reads', () => {
    // Clock values whose differences round below the exact elapsed time.
    for (const offset of [0.1, 1234.567, 98765.4321, 2 ** 40 + 0.3]) {
      const b = new TokenBucket(10, 3);
      const start = performance.now() + offset;
      for (let i = 0; i < 5; i++) b.reserve(start);
      const waits = [b.reserve(start + 500), b.reserve(start + 500), b.reserve(start + 500)];
      expect(waits, `start ${start}`).toEqual([0, 0, 0]);
    }
  });

  it('take() waits its turn', async () => {
    const b = new TokenBucket(20, 1);
    const t = performance.now();
    await b.take();
    await b.take();
    await b.take();
    expect(performance.now() - t).toBeGreaterThanOrEqual(95);
  });
});
