// ServiceCIDR lookups: "which ServiceCIDRs contain this address" over 10,000 ServiceCIDRs, for
// kubenode's Rust trie (called from JavaScript), a plain TypeScript scan (ipaddr.js), and
// upstream Go's pkg/api/servicecidr.ContainsAddress over an informer lister. Plus the
// controller end to end against a real kube-apiserver: 1,000 ServiceCIDRs made Ready, then
// deleted.
import { NetworkingV1Api, type V1ServiceCIDR, Watch } from '@kubernetes/client-node';
import ipaddr from 'ipaddr.js';
import { startApiServer } from '../test/support/apiserver.js';
import { servicecidr } from '../ts/index.js';
import {
  type BenchContext,
  comparisonTable,
  fmtNs,
  fmtRatio,
  type Measurement,
  measureJs,
  runGoPeer,
  speedup,
} from './lib/harness.js';

const OBJECTS = 10_000;

// The Go peer's data set (benches/peers/cmd/cidr-bench): object i has 10.<i/256>.<i%256>.0/24,
// every tenth also fd00::<i hex>:0/112.
function objects(): { name: string; cidrs: string[] }[] {
  return Array.from({ length: OBJECTS }, (_, i) => ({
    name: `cidr-${String(i).padStart(5, '0')}`,
    cidrs: [
      `10.${Math.floor(i / 256)}.${i % 256}.0/24`,
      ...(i % 10 === 0 ? [`fd00::${i.toString(16)}:0/112`] : []),
    ],
  }));
}

/** A straightforward TypeScript scan with upstream's rules, CIDRs parsed once up front. */
class PlainScan {
  readonly #entries: {
    name: string;
    range: [ipaddr.IPv4 | ipaddr.IPv6, number];
    net: string;
    bcast: string;
  }[] = [];
  constructor(objs: { name: string; cidrs: string[] }[]) {
    for (const o of objs) {
      for (const c of o.cidrs) {
        const range = ipaddr.parseCIDR(c);
        const net = ipaddr.IPv4.isValidFourPartDecimal(c.split('/')[0] ?? '')
          ? ipaddr.IPv4.networkAddressFromCIDR(c).toString()
          : ipaddr.IPv6.networkAddressFromCIDR(c).toNormalizedString();
        const bcast = range[0].kind() === 'ipv4' ? ipaddr.IPv4.broadcastAddressFromCIDR(c).toString() : '';
        this.#entries.push({ name: o.name, range, net, bcast });
      }
    }
  }

  containing(ip: string): string[] {
    const a = ipaddr.parse(ip);
    const s = a.kind() === 'ipv4' ? a.toString() : (a as ipaddr.IPv6).toNormalizedString();
    const out: string[] = [];
    for (const e of this.#entries) {
      if (e.range[0].kind() !== a.kind() || s === e.net || s === e.bcast) continue;
      if (a.match(e.range)) out.push(e.name);
    }
    return out;
  }
}

async function lookups(ctx: BenchContext): Promise<{ rows: Measurement[]; text: string }> {
  const go = await runGoPeer(ctx, 'cidr-bench', ctx.quick ? ['-iters', '20', '-samples', '3'] : []);
  const goRow = go.find((r) => r.scenario === 'containing-10k');
  const queries = (goRow?.queries ?? []) as string[];
  const matches = (goRow?.matches ?? []) as number[];
  if (!goRow || queries.length === 0) throw new Error('cidr-bench printed no queries');

  const objs = objects();
  const index = new servicecidr.CIDRIndex();
  index.upsertMany(objs);
  const plain = new PlainScan(objs);
  // Same answers as upstream before timing anything.
  queries.forEach((q, i) => {
    const want = matches[i];
    if (index.containing(q).length !== want || plain.containing(q).length !== want) {
      throw new Error(`answers differ from upstream for ${q}: want ${want}`);
    }
  });

  const loop = (f: (q: string) => unknown) => () => {
    for (const q of queries) f(q);
  };
  const rows: Measurement[] = [
    await measureJs(
      ctx,
      'containing-10k',
      'kubenode',
      loop((q) => index.containing(q)),
      { opsPerCall: queries.length },
    ),
    await measureJs(
      ctx,
      'containing-10k',
      'plain-ts',
      loop((q) => plain.containing(q)),
      { opsPerCall: queries.length },
    ),
    ...go.map((r) => ({ ...r, queries: undefined, matches: undefined })),
  ];
  const text = [
    comparisonTable(rows),
    '',
    `- kubenode's trie answers in ${fmtNs(rows[0]?.medianNsPerOp ?? Number.NaN)} per address: ` +
      `${fmtRatio(speedup(rows, 'containing-10k', 'go-upstream'))} faster than upstream's scan (target ≥10×), ` +
      `${fmtRatio(speedup(rows, 'containing-10k', 'plain-ts'))} faster than a plain TypeScript scan.`,
    `- ${OBJECTS} ServiceCIDRs (${objs.reduce((n, o) => n + o.cidrs.length, 0)} CIDRs), the Go peer's 64 query addresses ` +
      '(hits in IPv4 /24s and IPv6 /112s, misses); answers checked against upstream before timing.',
  ].join('\n');
  return { rows, text };
}

async function endToEnd(ctx: BenchContext): Promise<string> {
  const n = ctx.quick ? 100 : 1000;
  const api = await startApiServer();
  try {
    const net = api.kubeConfig.makeApiClient(NetworkingV1Api);
    const names = Array.from({ length: n }, (_, i) => `e2e-${i}`);
    const createStart = performance.now();
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        names.slice(i, i + 50).map((name, k) =>
          net.createServiceCIDR({
            body: {
              metadata: { name },
              spec: { cidrs: [`10.${100 + Math.floor((i + k) / 256)}.${(i + k) % 256}.0/24`] },
            },
          }),
        ),
      );
    }
    const createMs = performance.now() - createStart;

    const readyNames = new Set<string>();
    const gone = new Set<string>();
    let onChange = () => {};
    const w = await new Watch(api.kubeConfig).watch(
      '/apis/networking.k8s.io/v1/servicecidrs',
      {},
      (phase, o: V1ServiceCIDR) => {
        const name = o.metadata?.name ?? '';
        if (!name.startsWith('e2e-')) return;
        if (phase === 'DELETED') gone.add(name);
        const r = o.status?.conditions?.find((c) => c.type === 'Ready');
        if (r?.status === 'True' && o.metadata?.finalizers?.length) readyNames.add(name);
        onChange();
      },
      () => {},
    );
    const until = (pred: () => boolean) =>
      new Promise<void>((resolve) => {
        onChange = () => pred() && resolve();
        onChange();
      });

    const controller = new servicecidr.ServiceCIDRController({
      kubeConfig: api.kubeConfig,
      deletionGracePeriodMs: 0,
      logger: servicecidr.silentLogger,
    });
    const ac = new AbortController();
    const t0 = performance.now();
    const running = controller.run(ac.signal);
    await until(() => readyNames.size === n);
    const readyMs = performance.now() - t0;

    const t1 = performance.now();
    for (let i = 0; i < n; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((name) => net.deleteServiceCIDR({ name })));
    }
    await until(() => gone.size === n);
    const deleteMs = performance.now() - t1;
    ac.abort();
    await running;
    w.abort();
    ctx.log(`  e2e: ${n} Ready in ${readyMs.toFixed(0)} ms, deleted in ${deleteMs.toFixed(0)} ms`);
    return [
      '| phase | ServiceCIDRs | wall time | per object |',
      '|---|---:|---:|---:|',
      `| clients create the objects (50 in flight) | ${n} | ${(createMs / 1000).toFixed(2)} s | ${fmtNs((createMs * 1e6) / n)} |`,
      `| controller starts → all have the finalizer and Ready=True | ${n} | ${(readyMs / 1000).toFixed(2)} s | ${fmtNs((readyMs * 1e6) / n)} |`,
      `| deletes issued → all gone (grace period 0) | ${n} | ${(deleteMs / 1000).toFixed(2)} s | ${fmtNs((deleteMs * 1e6) / n)} |`,
      '',
      'One kube-apiserver v1.36.3 + etcd 3.6.8 on loopback, 5 workers, one run. "Ready" counts from the controller start',
      '(informer list included) to the last watch event showing the finalizer and Ready=True; each object needs two',
      'writes (strategic-merge finalizer patch, status apply). kube-controller-manager is not built here, so there is no',
      'upstream figure for this row; the first line (plain object creation) is the same server doing one write per object.',
    ].join('\n');
  } finally {
    await api.stop();
  }
}

export async function run(ctx: BenchContext): Promise<string> {
  const { text } = await lookups(ctx);
  const e2e = await endToEnd(ctx);
  return `### CIDRIndex.containing, 10,000 ServiceCIDRs\n\n${text}\n\n### Controller end to end (real API server)\n\n${e2e}\n`;
}
