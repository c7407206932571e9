import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';

const {
  RateLimitingQueue,
  ItemExponentialFailureRateLimiter,
  BucketRateLimiter,
  defaultControllerRateLimiter,
} = servicecidr;

describe('rate limiters (client-go semantics)', () => {
  it('per-item exponential: 5 ms·2ⁿ, capped, reset by forget', () => {
    const r = new ItemExponentialFailureRateLimiter<string>(5, 1000 * 1000);
    const delays = Array.from({ length: 16 }, () => r.when('a'));
    expect(delays.slice(0, 4)).toEqual([5, 10, 20, 40]);
    expect(delays[14]).toBe(81_920);
    expect(r.numRequeues('a')).toBe(16);
    expect(r.when('b')).toBe(5);
    for (let i = 0; i < 40; i++) r.when('a');
    expect(r.when('a')).toBe(1_000_000);
    r.forget('a');
    expect(r.numRequeues('a')).toBe(0);
    expect(r.when('a')).toBe(5);
  });

  it('token bucket: burst free, then 1/qps apart', () => {
    let now = 0;
    const b = new BucketRateLimiter<string>(10, 100, () => now);
    for (let i = 0; i < 100; i++) expect(b.when(`k${i}`)).toBe(0);
    expect(b.when('x')).toBeCloseTo(100);
    expect(b.when('y')).toBeCloseTo(200);
    now += 1000; // ten tokens come back: -2 + 10 leaves eight
    for (let i = 0; i < 8; i++) expect(b.when(`r${i}`)).toBe(0);
    expect(b.when('z')).toBeCloseTo(100);
  });

  it('default controller limiter takes the max and counts requeues per item', () => {
    const r = defaultControllerRateLimiter<string>();
    expect(r.when('a')).toBe(5);
    expect(r.when('a')).toBe(10);
    expect(r.numRequeues('a')).toBe(2);
    r.forget('a');
    expect(r.numRequeues('a')).toBe(0);
  });
});

describe('RateLimitingQueue', () => {
  it('de-duplicates, never hands one key to two workers, replays re-adds on done', async () => {
    const q = new RateLimitingQueue<string>();
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.len()).toBe(2);
    const first = await q.get();
    expect(first.item).toBe('a');
    q.add('a'); // while processing: dirty, not queued
    expect(q.len()).toBe(1);
    const second = await q.get();
    expect(second.item).toBe('b');
    let third: string | undefined;
    const pending = q.get().then((r) => {
      third = r.item;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(third).toBeUndefined();
    q.done('a');
    await pending;
    expect(third).toBe('a');
  });

  it('addAfter keeps the earliest deadline; zero delay adds at once', async () => {
    const q = new RateLimitingQueue<string>();
    q.addAfter('a', 0);
    expect(q.len()).toBe(1);
    q.addAfter('b', 200);
    q.addAfter('b', 20);
    q.addAfter('b', 500);
    expect(q.waitingCount()).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(q.len()).toBe(2);
  });

  it('ignores adds after shutdown and releases waiting workers', async () => {
    const q = new RateLimitingQueue<string>();
    const waiting = q.get();
    q.shutDown();
    expect(await waiting).toEqual({ item: undefined, shutdown: true });
    q.add('x');
    q.addAfter('y', 10);
    expect(q.len()).toBe(0);
    expect(q.waitingCount()).toBe(0);
  });

  it('drains queued items before reporting shutdown', async () => {
    const q = new RateLimitingQueue<string>();
    q.add('a');
    q.shutDown();
    expect((await q.get()).item).toBe('a');
    expect((await q.get()).shutdown).toBe(true);
  });

  it('reports client-go workqueue metrics', async () => {
    const registry = new Registry();
    const q = new RateLimitingQueue<string>({
      name: 'ipaddresses',
      metrics: new servicecidr.WorkqueueMetrics(registry),
    });
    q.add('a');
    q.add('a');
    q.add('b');
    const { item } = await q.get();
    q.addRateLimited('c');
    q.done(item as string);
    const text = await registry.metrics();
    expect(text).toContain('workqueue_adds_total{name="ipaddresses"} 2');
    expect(text).toContain('workqueue_depth{name="ipaddresses"} 1');
    expect(text).toContain('workqueue_retries_total{name="ipaddresses"} 1');
    expect(text).toContain('workqueue_work_duration_seconds_count{name="ipaddresses"} 1');
    expect(text).toContain('workqueue_queue_duration_seconds_count{name="ipaddresses"} 1');
    expect(text).toContain('workqueue_longest_running_processor_seconds{name="ipaddresses"} 0');
    q.shutDown();
  });
});

describe('workqueue_depth at shutdown', () => {
  const depth = async (registry: Registry) => {
    const m = (await registry.getSingleMetric('workqueue_depth')?.get())?.values ?? [];
    return m.find((v) => v.labels.name === 'q')?.value ?? 0;
  };

  it('shutDownAndDiscard drops queued items (and re-adds of in-flight ones) from the depth', async () => {
    const registry = new Registry();
    const q = new RateLimitingQueue<string>({
      name: 'q',
      metrics: new servicecidr.WorkqueueMetrics(registry),
    });
    q.add('a');
    q.add('b');
    q.add('c');
    const { item } = await q.get(); // 'a' in flight
    q.add('a'); // re-added while processing
    expect(await depth(registry)).toBe(3);
    expect(q.shutDownAndDiscard()).toBe(3);
    expect(await depth(registry)).toBe(0);
    expect(q.len()).toBe(0);
    q.done(item as string); // not requeued
    expect(q.len()).toBe(0);
    expect((await q.get()).shutdown).toBe(true);
    expect(await depth(registry)).toBe(0);
  });
});
