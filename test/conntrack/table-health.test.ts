// Conntrack table health on the real kernel: a namespace's table filled to nf_conntrack_max
// (the limit is one value for every namespace, each counting its own entries against it, so
// filling this namespace's table changes nothing outside it), real UDP through nftables DNAT
// beyond it, `conntrack -C`/`-S` as the reference, a real kube-apiserver for the Event and a
// scrape of the metrics.
import { readFileSync } from 'node:fs';
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEntries } from '../../ts/conntrack/testing.js';
import { conntrack } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { netnsExists, TestNetns } from './netns.js';

const VIP = '10.96.0.10';
const BACKEND = '10.244.0.5';

let api: ApiServer;
let ns: TestNetns;
let core: CoreV1Api;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil<T>(
  what: string,
  f: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Flows `from`…`to`-1, each from its own client address, DNATed like the kernel would. */
function flows(from: number, to: number): conntrack.Flow[] {
  const out: conntrack.Flow[] = [];
  for (let i = from; i < to; i++) {
    const client = `10.${1 + (i >>> 16)}.${(i >>> 8) & 255}.${i & 255}`;
    out.push({
      protocol: 17,
      forward: { srcIP: client, dstIP: VIP, srcPort: 1000, dstPort: 53 },
      reverse: { srcIP: BACKEND, dstIP: client, srcPort: 5353, dstPort: 1000 },
      zone: 0,
      mark: 0,
      status: 0,
      timeout: 600,
    });
  }
  return out;
}

/** Creates entries `from`…`to`-1 in batches; every one must be accepted. */
async function fill(ct: conntrack.Conntrack, from: number, to: number): Promise<void> {
  for (let at = from; at < to; at += 32_768) {
    const r = await createEntries(ct, 'IPv4', flows(at, Math.min(to, at + 32_768)));
    expect(r.failed, r.firstError).toBe(0);
  }
}

/** `conntrack -S` of the namespace: one map per CPU line (`chaintoolong` is its spelling). */
function conntrackS(): Map<string, number>[] {
  return ns
    .exec('conntrack', ['-S'])
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(
      (l) =>
        new Map(
          l
            .trim()
            .split(/\s+/)
            .map((kv) => [kv.split('=')[0] ?? '', Number(kv.split('=')[1])]),
        ),
    );
}

/** The value of an unlabelled sample in Prometheus text. */
function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no sample ${name} in\n${text}`);
  return Number(line.split(' ')[1]);
}

beforeAll(async () => {
  ns = new TestNetns('kn-ct-health');
  api = await startApiServer();
  core = api.kubeConfig.makeApiClient(CoreV1Api);
});

afterAll(async () => {
  try {
    await api?.stop();
  } finally {
    const name = ns?.name;
    ns?.destroy();
    if (name) expect(netnsExists(name)).toBe(false);
  }
});

describe('conntrack table health', () => {
  it('stats() reads what conntrack -C and -S print, the limit included', async () => {
    const ct = await conntrack.Conntrack.open({ netns: ns.path });
    try {
      await fill(ct, 0, 100);
      const s = await ct.stats();
      expect(s.count).toBe(100);
      expect(ns.exec('conntrack', ['-C']).trim()).toBe('100');
      expect(s.max).toBe(Number(readFileSync('/proc/sys/net/netfilter/nf_conntrack_max', 'utf8')));
      const tools = conntrackS();
      expect(s.perCpu.map((c) => c.cpu)).toEqual(tools.map((t) => t.get('cpu')));
      expect(s.total.insert).toBe(s.perCpu.reduce((n, c) => n + c.insert, 0));
      await ct.delete('IPv4', flows(0, 100));
    } finally {
      ct.close();
    }
    // Closed: the typed error, as every other operation.
    await expect(ct.stats()).rejects.toBeInstanceOf(conntrack.ConntrackClosedError);
  });

  it('a table filled past the threshold is one Warning Event on the Node; beyond the limit the kernel evicts; the metrics follow', async () => {
    const max = Number(readFileSync('/proc/sys/net/netfilter/nf_conntrack_max', 'utf8'));
    // A limit this test can fill in its own namespace (262144 by default; each entry is a few
    // hundred bytes of kernel memory).
    expect(max).toBeGreaterThan(1000);
    expect(max).toBeLessThanOrEqual(1 << 21);
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    const registry = new Registry();
    const node = `kubenode-table-${process.pid}`;
    const errors: unknown[] = [];
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      metrics: conntrack.conntrackMetrics(registry),
      nodeName: node,
      tableCheckPeriodMs: 100,
      onError: (e) => errors.push(e),
    });
    conntrack.tableMetrics(registry, () => r.tableStats());
    const warnings = async (): Promise<CoreV1Event[]> =>
      (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
        (e) => e.involvedObject?.name === node && e.reason === conntrack.REASON_TABLE_NEARLY_FULL,
      );
    try {
      await r.start();
      // Below the threshold: readings, no Event.
      const below = Math.floor(max * 0.89);
      await fill(handle, 0, below);
      await waitUntil('a reading of the filled table', async () => (await r.tableStats())?.count === below);
      await sleep(300);
      await r.flush();
      expect(await warnings()).toEqual([]);

      // Past it: one Event, whatever the number of readings while it stays there.
      const above = Math.ceil(max * 0.95);
      await fill(handle, below, above);
      const [first] = await waitUntil('the Warning Event', async () => {
        const w = await warnings();
        return w.length > 0 && w;
      });
      expect(first).toMatchObject({
        type: 'Warning',
        reason: 'ConntrackTableNearlyFull',
        count: 1,
        involvedObject: { kind: 'Node', name: node, uid: node },
        source: { component: 'kubenode-conntrack-reconciler', host: node },
      });
      expect(first?.message).toMatch(
        new RegExp(
          `^conntrack table 9\\d% full \\(\\d+ of ${max} entries, warning at 90%\\): once full, packets of new connections are dropped$`,
        ),
      );

      // Full, then new flows from real packets: the kernel evicts unassured entries for them.
      await fill(handle, above, max);
      ns.nft(
        `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ip daddr ${VIP} udp dport 53 dnat to ${BACKEND}:5353\n }\n}\n`,
      );
      const sends: [number, string, number][] = Array.from({ length: 20 }, (_, i) => [50_000 + i, VIP, 53]);
      ns.sendUdp(sends);
      await sleep(500);
      await r.flush();
      expect(await warnings()).toHaveLength(1);
      expect((await warnings())[0]?.count).toBe(1);

      // The namespace is idle now: the library, conntrack-tools and the scrape agree.
      const s = await handle.stats();
      expect(s.count).toBe(max);
      expect(ns.exec('conntrack', ['-C']).trim()).toBe(String(max));
      const tools = conntrackS();
      const sum = (k: string) => tools.reduce((n, t) => n + (t.get(k) ?? 0), 0);
      expect(s.perCpu).toHaveLength(tools.length);
      s.perCpu.forEach((c, i) => {
        expect(tools[i]?.get('early_drop')).toBe(c.earlyDrop);
        expect(tools[i]?.get('insert')).toBe(c.insert);
        expect(tools[i]?.get('drop')).toBe(c.drop);
      });
      expect(s.total.earlyDrop).toBe(sum('early_drop'));
      expect(s.total.earlyDrop).toBeGreaterThanOrEqual(sends.length);
      const text = await registry.metrics();
      expect(sample(text, conntrack.ENTRIES)).toBe(max);
      expect(sample(text, conntrack.ENTRIES_LIMIT)).toBe(max);
      expect(sample(text, 'kubenode_conntrack_early_drop_total')).toBe(sum('early_drop'));
      expect(sample(text, 'kubenode_conntrack_insert_total')).toBe(sum('insert'));
      expect(sample(text, 'kubenode_conntrack_drop_total')).toBe(sum('drop'));
      expect(sample(text, 'kubenode_conntrack_insert_failed_total')).toBe(sum('insert_failed'));
      expect(text).toContain('# TYPE kubenode_conntrack_early_drop_total counter');
      expect(text).toContain('# TYPE kubenode_conntrack_entries gauge');
      expect(errors).toEqual([]);
      if (process.env.KUBENODE_TEST_SHOW) {
        const table = text.split('\n').filter((l) => /^kubenode_conntrack_(entries|[a-z_]+_total) /.test(l));
        const { type, reason, message, count, involvedObject } = first ?? {};
        console.log(
          `${table.join('\n')}\n${JSON.stringify({ type, reason, message, count, involvedObject })}\n` +
            JSON.stringify({ count: s.count, max: s.max, perCpu: s.perCpu }),
        );
      }
    } finally {
      await r.stop();
      handle.close();
    }
  }, 180_000);
});
