// TableHealth's orchestration with a handle whose readings the test controls: readings shared,
// a scrape that does not wait for a busy handle, failures reported once, the warning once per
// crossing (the core's rule). The kernel and the API server are in table-health.test.ts.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { conntrack, KubenodeError, KubenodeTypeError } from '../../ts/index.js';

type Stats = conntrack.TableStats;

const stats = (count: number, max = 1000, earlyDrop = 0): Stats => ({
  count,
  max,
  perCpu: [],
  total: {
    found: 0,
    invalid: 0,
    insert: count,
    insertFailed: 0,
    drop: 0,
    earlyDrop,
    error: 0,
    searchRestart: 0,
    clashResolve: 0,
    chainToolong: 0,
  },
});

/** A handle whose `stats()` resolves (or fails) when the test says. */
function handle() {
  const pending: { resolve: (s: Stats) => void; reject: (e: unknown) => void }[] = [];
  let calls = 0;
  const ct = {
    stats: () => {
      calls++;
      return new Promise<Stats>((resolve, reject) => pending.push({ resolve, reject }));
    },
  } as unknown as conntrack.Conntrack;
  const next = () => {
    const p = pending.shift();
    if (!p) throw new Error('no reading pending');
    return p;
  };
  return { ct, next, calls: () => calls };
}

describe('TableHealth', () => {
  it('shares a reading under way and lets a scrape fall back to the previous one', async () => {
    const h = handle();
    const health = new conntrack.TableHealth(h.ct);
    const a = health.read();
    const b = health.read();
    expect(h.calls()).toBe(1);
    h.next().resolve(stats(10));
    expect(await a).toEqual(stats(10));
    expect(await b).toEqual(stats(10));
    // A busy handle: the scrape gets the last reading after its wait, the reading goes on.
    const scrape = health.current(20);
    expect(await scrape).toEqual(stats(10));
    h.next().resolve(stats(11));
    await health.flush();
    expect(health.last).toEqual(stats(11));
    expect(h.calls()).toBe(2);
  });

  it('warns once per crossing, again only after falling below the re-arm point', async () => {
    const h = handle();
    const warnings: string[] = [];
    const health = new conntrack.TableHealth(h.ct, { threshold: 0.5, onNearlyFull: (m) => warnings.push(m) });
    for (const count of [400, 500, 900, 460, 451, 449, 520]) {
      const r = health.read();
      h.next().resolve(stats(count));
      await r;
    }
    expect(warnings).toEqual([
      'conntrack table 50% full (500 of 1000 entries, warning at 50%): once full, packets of new connections are dropped',
      'conntrack table 52% full (520 of 1000 entries, warning at 50%): once full, packets of new connections are dropped',
    ]);
    expect(health.nearlyFull).toBe(true);
  });

  it('reports a failed reading once after a good one, and never before the first', async () => {
    const h = handle();
    const errors: unknown[] = [];
    const health = new conntrack.TableHealth(h.ct, { onError: (e) => errors.push(e) });
    const fail = async (msg: string) => {
      const r = health.read();
      h.next().reject(new Error(msg));
      return r;
    };
    expect(await fail('closed')).toBeUndefined();
    expect(errors).toEqual([]);
    const ok = health.read();
    h.next().resolve(stats(1));
    await ok;
    expect(await fail('first')).toEqual(stats(1));
    await fail('second');
    expect(errors.map((e) => (e as Error).message)).toEqual(['first']);
  });

  it('refuses a threshold outside 0 to 1 with the typed error, a non-number with KubenodeTypeError', () => {
    const h = handle();
    for (const t of [1.5, -0.1, Number.NaN]) {
      expect(() => new conntrack.TableHealth(h.ct, { threshold: t })).toThrow(KubenodeError);
      try {
        conntrack.checkFullThreshold(t);
      } catch (e) {
        expect((e as KubenodeError).code).toBe('ERR_KUBENODE_OUT_OF_RANGE');
      }
    }
    expect(() => conntrack.checkFullThreshold('0.9' as unknown as number)).toThrow(KubenodeTypeError);
    expect(conntrack.checkFullThreshold(0)).toBe(0);
  });

  it('metrics: zero before the first good reading, then the reading of each scrape', async () => {
    const registry = new Registry();
    let next: Stats | undefined;
    let reads = 0;
    conntrack.tableMetrics(registry, async () => {
      reads++;
      return next;
    });
    const empty = await registry.metrics();
    expect(empty).toMatch(/^kubenode_conntrack_entries 0$/m);
    expect(empty).toMatch(/^kubenode_conntrack_early_drop_total 0$/m);
    next = stats(7, 100, 3);
    const reads0 = reads;
    const text = await registry.metrics();
    // One reading per scrape, shared by every series.
    expect(reads - reads0).toBe(1);
    expect(text).toMatch(/^kubenode_conntrack_entries 7$/m);
    expect(text).toMatch(/^kubenode_conntrack_entries_limit 100$/m);
    expect(text).toMatch(/^kubenode_conntrack_early_drop_total 3$/m);
    next = stats(7, 100, 5);
    expect(await registry.metrics()).toMatch(/^kubenode_conntrack_early_drop_total 5$/m);
  });
});
