// Conntrack table health on the real kernel: a namespace's table filled to nf_conntrack_max
// (the limit is one value for every namespace, each counting its own entries against it, so
// filling this namespace's table changes nothing outside it), real UDP through nftables DNAT
// beyond it, `conntrack -C`/`-S` as the reference, a real kube-apiserver for the Event and a
// scrape of the metrics.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEntries } from '../../ts/conntrack/testing.js';
import { conntrack } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { TestNetns, teardown } from './netns.js';

const VIP = '10.96.0.10';
const BACKEND = '10.244.0.5';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');

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

/** Each counter with its `conntrack -S` spelling. */
const TOOLS_NAMES: [keyof conntrack.StatsTotal, string][] = [
  ['found', 'found'],
  ['invalid', 'invalid'],
  ['insert', 'insert'],
  ['insertFailed', 'insert_failed'],
  ['drop', 'drop'],
  ['earlyDrop', 'early_drop'],
  ['error', 'error'],
  ['searchRestart', 'search_restart'],
  ['clashResolve', 'clash_resolve'],
  ['chainToolong', 'chaintoolong'],
];

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

/** A loopback port nothing listens on now. */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const addr = srv.address();
  await new Promise((r) => srv.close(r));
  if (typeof addr !== 'object' || addr === null) throw new Error('no port');
  return addr.port;
}

/** Warning Events about `node` with the nearly-full reason. */
async function warningsOf(node: string): Promise<CoreV1Event[]> {
  return (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
    (e) => e.involvedObject?.name === node && e.reason === conntrack.REASON_TABLE_NEARLY_FULL,
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
    teardown(ns, undefined);
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
    const warnings = () => warningsOf(node);
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

      // The namespace sends nothing more, but the kernel's garbage collector may still evict
      // from a table this full (counted as early drops): each reference reading is bracketed
      // by two of the library's (the count only falls, the counters only grow).
      const s = await handle.stats();
      const count = Number(ns.exec('conntrack', ['-C']).trim());
      const tools = conntrackS();
      const text = await registry.metrics();
      const after = await handle.stats();
      const within = (v: number | undefined, lo: number, hi: number | undefined) => {
        expect(v).toBeGreaterThanOrEqual(lo);
        expect(v).toBeLessThanOrEqual(hi ?? Number.NaN);
      };
      expect(after.count).toBeGreaterThanOrEqual(above);
      within(count, after.count, s.count);
      within(sample(text, conntrack.ENTRIES), after.count, s.count);
      expect(s.max).toBe(max);
      expect(sample(text, conntrack.ENTRIES_LIMIT)).toBe(max);
      expect(s.perCpu).toHaveLength(tools.length);
      s.perCpu.forEach((c, i) => {
        expect(tools[i]?.get('cpu')).toBe(c.cpu);
        for (const [key, spelling] of TOOLS_NAMES)
          within(tools[i]?.get(spelling), c[key], after.perCpu[i]?.[key]);
      });
      for (const [key] of TOOLS_NAMES) {
        within(sample(text, conntrack.STAT_COUNTERS[key][0]), s.total[key], after.total[key]);
      }
      expect(s.total.earlyDrop).toBeGreaterThanOrEqual(sends.length);
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

  it('kubenode conntrack reconcile serves the table series on /metrics and warns on its Node', async () => {
    // The previous test left this namespace's table full.
    const port = await freePort();
    const node = `kubenode-table-daemon-${process.pid}`;
    let stderr = '';
    const child = spawn(
      tsx,
      [
        main,
        'conntrack',
        'reconcile',
        '--kubeconfig',
        api.kubeconfigFile,
        '--netns',
        ns.path,
        '--node-name',
        node,
        '--conntrack-full-threshold',
        '0.5',
        '--healthz-bind-address=',
        `--metrics-bind-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr?.on('data', (c) => {
      stderr += c;
    });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    try {
      const max = Number(readFileSync('/proc/sys/net/netfilter/nf_conntrack_max', 'utf8'));
      const text = await waitUntil(
        'a scrape with the table',
        async () => {
          const body = await fetch(`http://127.0.0.1:${port}/metrics`).then(
            (r) => r.text(),
            () => '',
          );
          return /^kubenode_conntrack_entries [1-9]/m.test(body) && body;
        },
        60_000,
      );
      expect(sample(text, conntrack.ENTRIES)).toBeGreaterThanOrEqual(Math.ceil(max * 0.95));
      expect(sample(text, conntrack.ENTRIES_LIMIT)).toBe(max);
      expect(sample(text, 'kubenode_conntrack_early_drop_total')).toBeGreaterThanOrEqual(20);
      const [w] = await waitUntil('the Warning Event', async () => {
        const list = await warningsOf(node);
        return list.length > 0 && list;
      });
      expect(w?.message).toMatch(
        new RegExp(
          `^conntrack table (9\\d|100)% full \\(\\d+ of ${max} entries, warning at 50%\\): once full, packets of new connections are dropped$`,
        ),
      );
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    // klog's info lines only: no error, no failed reading.
    expect(stderr).not.toMatch(/^[EW]\d{4}|kubenode: /m);
  }, 120_000);
});
