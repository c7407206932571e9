// Stale UDP conntrack cleanup on a real table: 1,000,000 UDP flows to 20 services with 10
// endpoints each, one endpoint per service removed (10 % stale). In one run: kubenode's
// cleanStaleEntries, upstream kube-proxy's CleanStaleEntries (Go, vishvananda/netlink),
// conntrack-tools (list, then delete by reply source), and the floor (a bare filtered dump plus
// batched deletes). Then the endpoint-change cleanup: a handle whose last pass saw every endpoint
// serving is handed the changed tables (it chooses the targeted or the full path by measured
// cost; once more with the targeted path pinned), on the same table and on the same table with
// only one endpoint of one service removed, against Go on the same tables. The stale flows are
// re-created before each pass.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventCost } from './conntrack/event-cost.js';
import { type BenchContext, fmtRatio, goPeerBinary, repoRoot } from './lib/harness.js';

const SERVICES = 20;
const ENDPOINTS = 10;
/** Deleting just the known stale tuples in batches: no dump (the indexed path's floor). */
const DELETE_FLOOR = 'floor: delete the stale tuples';
/** The same with an event subscriber in the namespace: the kernel then queues a DESTROY event per delete. */
const DELETE_FLOOR_SUBSCRIBED = 'floor: delete the stale tuples, events subscribed';

interface Pass {
  peer: string;
  /** Which removal: every service's last endpoint, or one endpoint of one service. */
  table: 'bench' | 'one';
  path?: string;
  wallSeconds: number;
  cpuSeconds: number;
  maxRssKB: number;
  rssGrowthKB?: number;
  deleted: number;
  /** With the event index: its build (the untimed first pass) and size. */
  index?: { buildSeconds: number; flows: number; bytes: number; rssGrowthKB: number; losses: number };
}

function sh(argv: string[], what: string): string {
  const [cmd, ...args] = argv as [string, ...string[]];
  const r = spawnSync(cmd, args, { encoding: 'utf8', cwd: repoRoot, maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** Runs argv under /usr/bin/time: wall, user+sys CPU and peak RSS of the whole process tree. */
function timed(argv: string[], what: string): { wall: number; cpu: number; rssKB: number; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), 'kn-ct-time-'));
  const out = join(dir, 'time');
  try {
    const stdout = sh(['/usr/bin/time', '-o', out, '-f', '%e %U %S %M', ...argv], what);
    const [e, u, s, m] = readFileSync(out, 'utf8').trim().split('\n').pop()?.split(' ').map(Number) ?? [];
    return { wall: e ?? Number.NaN, cpu: (u ?? 0) + (s ?? 0), rssKB: m ?? 0, stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const lastJson = (s: string) =>
  JSON.parse(
    s
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .pop() ?? '{}',
  );

export async function run(ctx: BenchContext): Promise<string> {
  if (process.getuid?.() !== 0)
    throw new Error('the conntrack benchmark needs root (it fills a namespace table)');
  const flows = ctx.quick ? 100_000 : 1_000_000;
  const stale = flows / ENDPOINTS;
  const samples = ctx.quick ? 1 : 3;
  sh(
    ['cargo', 'build', '--release', '-q', '-p', 'kubenode-ct-bench', '--bin', 'ct-bench'],
    'cargo build ct-bench',
  );
  const helper = join(repoRoot, 'target/release/ct-bench');
  // The pinned targeted pass needs the test hooks, which the release binary leaves out.
  sh(['npm', 'run', '-s', 'build:test-hooks'], 'npm run build:test-hooks');
  const goBin = goPeerBinary('conntrack-bench');
  const ns = `kn-ct-bench-${process.pid}`;
  const nsPath = `/var/run/netns/${ns}`;
  const maxFile = '/proc/sys/net/netfilter/nf_conntrack_max';
  const oldMax = readFileSync(maxFile, 'utf8').trim();
  const dir = mkdtempSync(join(tmpdir(), 'kn-ct-bench-'));
  const tables = join(dir, 'tables.json');
  const tablesAll = join(dir, 'tables-all.json');
  const tablesOne = join(dir, 'tables-one.json');
  const staleOne = flows / (SERVICES * ENDPOINTS);
  const services = Array.from({ length: SERVICES }, (_, s) => ({
    name: `svc${s}`,
    protocol: 'UDP',
    clusterIP: `10.96.0.${s + 1}`,
    port: 53,
  }));
  // The last endpoint of every service is gone: its flows are the stale ones.
  const endpoints = Object.fromEntries(
    services.map((_, s) => [
      `svc${s}`,
      Array.from({ length: ENDPOINTS - 1 }, (_, e) => ({
        ip: `10.244.${s}.${e + 1}`,
        port: 5353,
        serving: true,
      })),
    ]),
  );
  writeFileSync(tables, JSON.stringify({ services, endpoints }));
  const all = (s: number) =>
    Array.from({ length: ENDPOINTS }, (_, e) => ({ ip: `10.244.${s}.${e + 1}`, port: 5353, serving: true }));
  writeFileSync(
    tablesAll,
    JSON.stringify({ services, endpoints: Object.fromEntries(services.map((_, s) => [`svc${s}`, all(s)])) }),
  );
  // Only svc0 loses its last endpoint.
  writeFileSync(
    tablesOne,
    JSON.stringify({
      services,
      endpoints: Object.fromEntries(
        services.map((_, s) => [`svc${s}`, s === 0 ? all(s).slice(0, -1) : all(s)]),
      ),
    }),
  );
  // What the indexed child needs to make its stale flows again once it has subscribed.
  process.env.KN_CT_BENCH_FILL = JSON.stringify([
    helper,
    nsPath,
    String(flows),
    String(SERVICES),
    String(ENDPOINTS),
  ]);
  const count = () => Number(sh(['ip', 'netns', 'exec', ns, 'conntrack', '-C'], 'conntrack -C').trim());
  const passes: Pass[] = [];
  try {
    if (Number(oldMax) < flows * 2) writeFileSync(maxFile, String(flows * 2));
    sh(['ip', 'netns', 'add', ns], 'ip netns add');
    const fill = lastJson(
      sh([helper, 'fill', nsPath, String(flows), String(SERVICES), String(ENDPOINTS)], 'fill'),
    );
    ctx.log(`  filled ${fill.created} flows in ${fill.seconds.toFixed(2)} s (batched CT_NEW)`);
    const refill = () => {
      if (count() === flows) return;
      sh(
        [helper, 'fill', nsPath, String(flows), String(SERVICES), String(ENDPOINTS), '--stale-only'],
        'refill',
      );
      if (count() !== flows) throw new Error(`table holds ${count()} entries, want ${flows}`);
    };
    const check = (peer: string, want = flows - stale) => {
      const left = count();
      if (left !== want) throw new Error(`${peer} left ${left} entries, want ${want}`);
    };
    const child = (peer: string, table: Pass['table'], args: string[]) => {
      refill();
      const t = timed(
        ['npx', 'tsx', join(repoRoot, 'benches/conntrack/clean-child.ts'), nsPath, ...args],
        peer,
      );
      const r = lastJson(t.stdout);
      check(peer, flows - (table === 'one' ? staleOne : stale));
      passes.push({
        peer,
        table,
        path: r.path,
        wallSeconds: r.seconds,
        cpuSeconds: r.cpuSeconds,
        maxRssKB: r.maxRssKB,
        rssGrowthKB: r.maxRssKB - r.rssBeforeKB,
        deleted: r.deleted,
        ...(r.index ? { index: { ...r.index, losses: r.after?.losses ?? 0 } } : {}),
      });
      ctx.log(
        `  ${peer.padEnd(34)} ${r.seconds.toFixed(3)} s (${r.path}${r.fullReason ? `: ${r.fullReason}` : ''})`,
      );
    };

    for (let i = 0; i < samples; i++) {
      refill();
      const t = timed(
        ['npx', 'tsx', join(repoRoot, 'benches/conntrack/clean-child.ts'), nsPath, tables],
        'kubenode',
      );
      const r = lastJson(t.stdout);
      check('kubenode');
      passes.push({
        peer: 'kubenode',
        table: 'bench',
        wallSeconds: r.seconds,
        cpuSeconds: r.cpuSeconds,
        maxRssKB: r.maxRssKB,
        rssGrowthKB: r.maxRssKB - r.rssBeforeKB,
        deleted: r.deleted,
      });
      ctx.log(`  kubenode        ${r.seconds.toFixed(3)} s, cpu ${r.cpuSeconds.toFixed(2)} s`);

      refill();
      const f = timed([helper, 'floor', nsPath, String(flows), String(SERVICES), String(ENDPOINTS)], 'floor');
      const fr = lastJson(f.stdout);
      check('floor');
      passes.push({
        peer: 'floor',
        table: 'bench',
        wallSeconds: fr.seconds,
        cpuSeconds: f.cpu,
        maxRssKB: f.rssKB,
        deleted: fr.deleted,
      });
      ctx.log(`  floor           ${fr.seconds.toFixed(3)} s (dump ${fr.dumpSeconds.toFixed(3)} s)`);
      child('kubenode endpoint change', 'bench', [tables, tablesAll]);
      // 20 walks of the table: slow by design, so one sample.
      if (i === 0) child('kubenode endpoint change, targeted', 'bench', [tables, tablesAll, '--targeted']);
      child('kubenode full pass (one endpoint)', 'one', [tablesOne]);
      child('kubenode endpoint change (one endpoint)', 'one', [tablesOne, tablesAll]);
      child('kubenode endpoint change, indexed', 'bench', [tables, tablesAll, '--index']);
      child('kubenode endpoint change, indexed (one endpoint)', 'one', [tablesOne, tablesAll, '--index']);
      for (const [peer, extra] of [
        [DELETE_FLOOR, []],
        [DELETE_FLOOR_SUBSCRIBED, ['--subscribed']],
      ] as const) {
        refill();
        const d = timed(
          [helper, 'delete-floor', nsPath, String(flows), String(SERVICES), String(ENDPOINTS), ...extra],
          peer,
        );
        check(peer);
        const dr = lastJson(d.stdout);
        passes.push({
          peer,
          table: 'bench',
          wallSeconds: dr.seconds,
          cpuSeconds: d.cpu,
          maxRssKB: d.rssKB,
          deleted: dr.deleted,
        });
        ctx.log(`  ${peer} ${dr.seconds.toFixed(3)} s`);
      }
    }
    for (let i = 0; i < (ctx.quick ? 1 : 2); i++) {
      refill();
      const g = timed(['ip', 'netns', 'exec', ns, goBin, '-json', '-services', tables], 'go peer');
      const gr = lastJson(g.stdout);
      check('go-upstream');
      passes.push({
        peer: 'go-upstream',
        table: 'bench',
        wallSeconds: gr.wallSeconds,
        cpuSeconds: g.cpu,
        maxRssKB: g.rssKB,
        deleted: gr.deleted,
      });
      ctx.log(`  go-upstream     ${gr.wallSeconds.toFixed(3)} s`);
      refill();
      const g1 = timed(['ip', 'netns', 'exec', ns, goBin, '-json', '-services', tablesOne], 'go peer');
      const g1r = lastJson(g1.stdout);
      check('go-upstream (one endpoint)', flows - staleOne);
      passes.push({
        peer: 'go-upstream (one endpoint)',
        table: 'one',
        wallSeconds: g1r.wallSeconds,
        cpuSeconds: g1.cpu,
        maxRssKB: g1.rssKB,
        deleted: g1r.deleted,
      });
      ctx.log(`  go-upstream (one endpoint) ${g1r.wallSeconds.toFixed(3)} s`);
    }
    refill();
    // conntrack-tools: list the UDP table, then delete each removed endpoint's flows by reply source.
    const script = [
      'conntrack -L -p udp > /dev/null 2>&1',
      ...services.map((_, s) => `conntrack -D -p udp --reply-src 10.244.${s}.${ENDPOINTS} > /dev/null 2>&1`),
    ].join('; ');
    const c = timed(['ip', 'netns', 'exec', ns, 'sh', '-c', `${script}; true`], 'conntrack-tools');
    check('conntrack-tools');
    passes.push({
      peer: 'conntrack-tools',
      table: 'bench',
      wallSeconds: c.wall,
      cpuSeconds: c.cpu,
      maxRssKB: c.rssKB,
      deleted: stale,
    });
    ctx.log(`  conntrack-tools ${c.wall.toFixed(3)} s`);
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
    writeFileSync(maxFile, oldMax);
    rmSync(dir, { recursive: true, force: true });
  }
  const events = await eventCost(ctx);
  return [report(passes, flows, stale), changeReport(passes, flows, stale, staleOne), events].join('\n\n');
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

function report(passes: Pass[], flows: number, stale: number): string {
  const peers = ['kubenode', 'floor', 'go-upstream', 'conntrack-tools'];
  const agg = peers.map((peer) => {
    const ps = passes.filter((p) => p.peer === peer);
    return {
      peer,
      n: ps.length,
      wall: median(ps.map((p) => p.wallSeconds)),
      cpu: median(ps.map((p) => p.cpuSeconds)),
      rss: median(ps.map((p) => p.maxRssKB)),
      growth: ps[0]?.rssGrowthKB === undefined ? undefined : median(ps.map((p) => p.rssGrowthKB ?? 0)),
    };
  });
  const k = agg[0];
  const lines = [
    `One pass over ${flows.toLocaleString('en-US')} UDP entries (${SERVICES} services × ${ENDPOINTS} endpoints, one endpoint per service removed: ${stale.toLocaleString('en-US')} stale), in a network namespace on the real kernel. Wall time is the cleanup call itself (the Go peer's own \`CleanStaleEntries\` timing; kubenode's \`cleanStaleEntries\` promise); CPU and peak RSS are the whole process (\`/usr/bin/time\`; kubenode's CPU is measured around the call). conntrack-tools lists the UDP table, then deletes each removed endpoint's flows with \`conntrack -D -p udp --reply-src IP\`. The floor is a filtered dump that parses nothing plus batched deletes of the known stale tuples.`,
    '',
    '| implementation | samples | wall (median) | CPU (median) | peak RSS | kubenode speed-up (wall) | kubenode speed-up (CPU) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...agg.map(
      (a) =>
        `| ${a.peer} | ${a.n} | ${a.wall.toFixed(3)} s | ${a.cpu.toFixed(2)} s | ${(a.rss / 1024).toFixed(0)} MiB${
          a.growth !== undefined ? ` (+${(a.growth / 1024).toFixed(1)} MiB during the pass)` : ''
        } | ${a.peer === 'kubenode' ? '1×' : fmtRatio(a.wall / (k?.wall ?? Number.NaN))} | ${
          a.peer === 'kubenode' ? '1×' : fmtRatio(a.cpu / (k?.cpu ?? Number.NaN))
        } |`,
    ),
    '',
    '```mermaid',
    'xychart-beta',
    `  title "Stale UDP cleanup, ${flows.toLocaleString('en-US')} entries (wall seconds, lower is better)"`,
    `  x-axis [${agg.map((a) => `"${a.peer}"`).join(', ')}]`,
    '  y-axis "seconds"',
    `  bar [${agg.map((a) => a.wall.toFixed(2)).join(', ')}]`,
    '```',
  ];
  return lines.join('\n');
}

/** The endpoint-change rows: each against Go and today's full pass on the same table. */
function changeReport(passes: Pass[], flows: number, stale: number, staleOne: number): string {
  const med = (peer: string) => median(passes.filter((p) => p.peer === peer).map((p) => p.wallSeconds));
  const paths = (peer: string) =>
    [...new Set(passes.filter((p) => p.peer === peer).map((p) => p.path))].join(', ');
  const rows: [string, string, string, string][] = [
    ['bench', 'kubenode endpoint change', 'go-upstream', 'kubenode'],
    ['bench', 'kubenode endpoint change, targeted', 'go-upstream', 'kubenode'],
    ['bench', 'kubenode endpoint change, indexed', 'go-upstream', 'kubenode'],
    ['bench', DELETE_FLOOR, 'go-upstream', 'kubenode'],
    ['bench', DELETE_FLOOR_SUBSCRIBED, 'go-upstream', 'kubenode'],
    [
      'one',
      'kubenode endpoint change (one endpoint)',
      'go-upstream (one endpoint)',
      'kubenode full pass (one endpoint)',
    ],
    [
      'one',
      'kubenode endpoint change, indexed (one endpoint)',
      'go-upstream (one endpoint)',
      'kubenode full pass (one endpoint)',
    ],
    [
      'one',
      'kubenode full pass (one endpoint)',
      'go-upstream (one endpoint)',
      'kubenode full pass (one endpoint)',
    ],
    ['one', 'go-upstream (one endpoint)', 'go-upstream (one endpoint)', 'kubenode full pass (one endpoint)'],
  ];
  const n = (x: number) => x.toLocaleString('en-US');
  return [
    `Endpoint-change cleanup: the handle's previous pass saw every endpoint serving; the timed call gets the changed tables. "bench": every service's last endpoint removed (${n(stale)} stale of ${n(flows)}); "one": only svc0's last endpoint removed (${n(staleOne)} stale). The handle picks the path by the costs it measured (a kernel-filtered walk of the table per removed (frontend, endpoint) pair, against its last full pass); "targeted" pins the targeted path (one kernel-filtered dump per removed endpoint, then exact deletes). Ratios are wall-time speed-ups of the row over Go and over kubenode's full pass on the same table, same run.`,
    '',
    '| table | implementation | path | samples | wall (median) | vs go-upstream | vs kubenode full pass |',
    '|---|---|---|---:|---:|---:|---:|',
    ...rows.map(([table, peer, go, full]) => {
      const w = med(peer);
      return `| ${table} | ${peer} | ${peer.startsWith('floor') ? '—' : paths(peer) || 'full'} | ${passes.filter((p) => p.peer === peer).length} | ${w.toFixed(3)} s | ${fmtRatio(med(go) / w)} | ${fmtRatio(med(full) / w)} |`;
    }),
    '',
    `Full pass against its floor (bench table): ${(med('kubenode') / med('floor')).toFixed(2)}× the floor's wall time.`,
    indexReport(passes, med),
  ].join('\n');
}

/** The indexed rows against their floor, and what the index cost to build and hold. */
function indexReport(passes: Pass[], med: (peer: string) => number): string {
  const ix = passes.filter((p) => p.index && p.table === 'bench');
  if (ix.length === 0) return '';
  const m = (f: (p: Pass) => number) => median(ix.map(f));
  const flows = m((p) => p.index?.flows ?? 0);
  const bytes = m((p) => p.index?.bytes ?? 0);
  const growth = m((p) => p.index?.rssGrowthKB ?? 0) * 1024;
  const losses = ix.reduce((a, p) => a + (p.index?.losses ?? 0), 0);
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return [
    `Indexed pass against the floor of deleting just the stale tuples (bench table): ${(med('kubenode endpoint change, indexed') / med(DELETE_FLOOR)).toFixed(2)}× its wall time; against the same deletes with an event subscriber in the namespace (the kernel then builds and queues a DESTROY event per delete, as under any event-fed index): ${(med('kubenode endpoint change, indexed') / med(DELETE_FLOOR_SUBSCRIBED)).toFixed(2)}×.`,
    `Event index (bench table, medians of ${ix.length}): built by the untimed first pass (a full pass that also fills it) in ${m((p) => p.index?.buildSeconds ?? 0).toFixed(3)} s; it held ${n(flows)} flows in ${(bytes / 2 ** 20).toFixed(1)} MiB of maps (${(bytes / Math.max(flows, 1)).toFixed(1)} bytes per flow), and the process's RSS grew ${(growth / 2 ** 20).toFixed(1)} MiB over that pass (${(growth / Math.max(flows, 1)).toFixed(1)} bytes per flow, allocator and the pass's own buffers included); receive-buffer overflows during the timed passes: ${losses}.`,
  ].join('\n');
}
