// ServiceCIDR lookups: "which ServiceCIDRs contain this address" over 10,000 ServiceCIDRs, for
// kubenode's Rust trie (called from JavaScript), a plain TypeScript scan (ipaddr.js), and
// upstream Go's pkg/api/servicecidr.ContainsAddress over an informer lister. Plus the
// controller end to end against upstream kube-controller-manager on one real kube-apiserver:
// 1,000 ServiceCIDRs made Ready, then deleted; time, API requests and RSS of each.
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NetworkingV1Api, type V1ServiceCIDR, Watch } from '@kubernetes/client-node';
import ipaddr from 'ipaddr.js';
import { parse as parseYaml } from 'yaml';
import { startApiServer } from '../test/support/apiserver.js';
import { servicecidr } from '../ts/index.js';
import { cpuNs } from './fleet/cpu.js';
import {
  type BenchContext,
  comparisonTable,
  fmtNs,
  fmtRatio,
  goPeerBinary,
  type Measurement,
  measureJs,
  peersVersions,
  repoRoot,
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

/** Audit policy: one Metadata event per stage for every request of the test user ("admin"). */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["admin"]
- level: None
`;

interface AuditEvent {
  auditID: string;
  verb: string;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  objectRef?: { resource?: string; subresource?: string };
}

/** An audit timestamp (RFC 3339 to the microsecond) in ms, microseconds kept as the fraction. */
function auditMs(ts: string): number {
  const micro = /\.(\d{1,6})Z$/.exec(ts)?.[1] ?? '';
  // Date.parse keeps the milliseconds; the digits after them are the fraction.
  return Date.parse(ts) + Number(`0.${micro.slice(3) || '0'}`);
}

/**
 * Requests (one per audit ID) received in [from, to], as counts per "verb resource[/sub]", and
 * the patches among them received by `readyAt`: how many the API server was working on at once,
 * on average (their summed time in the server over the span from the first to the last), and
 * each one's mean time in it. With the same workers, a client that turns answers into its next
 * writes sooner keeps more of them in flight.
 */
function requestsIn(
  auditLog: string,
  from: number,
  to: number,
  readyAt: number,
  exclude: (e: AuditEvent) => boolean,
) {
  const seen = new Set<string>();
  const byKind = new Map<string, number>();
  // When the first write (a patch) reached the API server, in ms after `from`.
  let firstWrite = Number.POSITIVE_INFINITY;
  const w = { busy: 0, n: 0, first: Number.POSITIVE_INFINITY, last: 0 };
  for (const line of readFileSync(auditLog, 'utf8').split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as AuditEvent;
    const t = Date.parse(e.requestReceivedTimestamp);
    if (t < from || t > to || seen.has(e.auditID) || exclude(e)) continue;
    seen.add(e.auditID);
    const r = e.objectRef;
    const kind = `${e.verb} ${r?.resource ?? '(non-resource)'}${r?.subresource ? `/${r.subresource}` : ''}`;
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    if (e.verb !== 'patch') continue;
    firstWrite = Math.min(firstWrite, t - from);
    const received = auditMs(e.requestReceivedTimestamp);
    if (received > readyAt) continue;
    w.busy += auditMs(e.stageTimestamp) - received;
    w.n++;
    w.first = Math.min(w.first, received);
    w.last = Math.max(w.last, received);
  }
  const writes = {
    inFlight: w.last > w.first ? w.busy / (w.last - w.first) : Number.NaN,
    meanMs: w.n ? w.busy / w.n : Number.NaN,
  };
  return { total: seen.size, byKind, firstWriteMs: firstWrite, writes };
}

/** Peak and current resident set of a live process, in MiB. */
function rssMiB(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
  return { peak: kb('VmHWM') / 1024, now: kb('VmRSS') / 1024 };
}

const TMPFS_MAGIC = 0x01021994;

/**
 * Where etcd's data, the API server's logs and the audit log go: KUBENODE_BENCH_DATA_DIR, else
 * /dev/shm when it is a tmpfs, else the OS temp dir. On this machine's disk (etcd fsyncs every
 * write) one controller's quiet rounds spread 1.6×, on tmpfs 1.3×.
 */
function benchDataDir(): string {
  const chosen = process.env.KUBENODE_BENCH_DATA_DIR;
  if (chosen) return chosen;
  try {
    if (statfsSync('/dev/shm').type === TMPFS_MAGIC) return '/dev/shm';
  } catch {
    // No /dev/shm: the OS temp dir.
  }
  return tmpdir();
}

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
function cpuSeconds(pid: number | undefined): number {
  try {
    // Fields after the parenthesised command name: utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * Waits until the API server and etcd are idle: under a tenth of a core over two 250 ms windows
 * in a row. kube-apiserver's own ServiceCIDR allocator walks every ServiceCIDR (and logs a line
 * for each) on every ServiceCIDR event, on one worker, so the bench's 1,000 creates (and the
 * last round's deletes) leave it seconds of backlog that takes a core from whatever runs next. A
 * controller spawned into that backlog is timed partly on the bench's writes, by an amount that
 * varies with how far the allocator had got. Returns the time waited, in ms.
 */
async function settle(pids: (number | undefined)[], maxMs = 120_000): Promise<number> {
  if (pids.some((p) => !p)) throw new Error('the API server or etcd is not running');
  const busyNs = () => pids.reduce<number>((sum, p) => sum + cpuNs(p), 0);
  const t0 = performance.now();
  let quiet = 0;
  let last = { ns: busyNs(), at: t0 };
  while (quiet < 2) {
    if (performance.now() - t0 > maxMs) throw new Error(`the API server was still busy after ${maxMs} ms`);
    await sleep(250);
    const now = { ns: busyNs(), at: performance.now() };
    // Cores in use over the window actually slept (a loaded machine wakes the timer late).
    quiet = (now.ns - last.ns) / 1e6 / (now.at - last.at) < 0.1 ? quiet + 1 : 0;
    last = now;
  }
  return performance.now() - t0;
}

/**
 * Syncs of kube-apiserver's ServiceCIDR allocator logged in bytes [from, to) of its log: each
 * sync logs one line per IPv4 CIDR, the default ServiceCIDR's (`10.96.0.0/28`) among them.
 */
function allocatorSyncs(log: string, from: number, to: number): number {
  const needle = Buffer.from('allocator for Service CIDR 10.96.0.0/28');
  const fd = openSync(log, 'r');
  try {
    const chunk = Buffer.alloc(1 << 22);
    let n = 0;
    for (let pos = from; pos < to; ) {
      // Chunks overlap by one byte less than the needle: a match split between two chunks is
      // found whole in the second, and none fits in the overlap alone to be counted twice.
      const want = Math.min(chunk.length, to - pos);
      const len = readSync(fd, chunk, 0, want, pos);
      if (len <= 0) break;
      const view = chunk.subarray(0, len);
      for (let i = view.indexOf(needle); i !== -1; i = view.indexOf(needle, i + 1)) n++;
      // A short read is the file's end (a log never shrinks, but stepping back from it would
      // read the same bytes forever).
      if (pos + len >= to || len < want) break;
      pos += len - (needle.length - 1);
    }
    return n;
  } finally {
    closeSync(fd);
  }
}

interface ControllerRun {
  peer: string;
  readyMs: number;
  deleteMs: number;
  /** Time the API server took to go idle after the creates, before the controller was spawned. */
  settleMs: number;
  /** Syncs of the API server's ServiceCIDR allocator between spawn and Ready. */
  syncs: number;
  requests: ReturnType<typeof requestsIn>;
  rss: { peak: number; now: number };
  /** CPU seconds: the controller's and the API server's plus etcd's, to Ready and over the run. */
  cpu: { toReady: number; controller: number; serverToReady: number; server: number };
}

/**
 * One controller, as its own process, against the shared API server: the clients create `n`
 * ServiceCIDRs, the controller starts (process start and informer list included) and makes them
 * all finalized and Ready, the clients delete them all, the controller releases them (after the
 * 10 s grace period both implementations use), then the controller is stopped.
 */
async function controllerRun(
  ctx: BenchContext,
  api: Awaited<ReturnType<typeof startApiServer>>,
  auditLog: string,
  n: number,
  peer: string,
  command: string[],
): Promise<ControllerRun> {
  const net = api.kubeConfig.makeApiClient(NetworkingV1Api);
  const names = Array.from({ length: n }, (_, i) => `e2e-${i}`);
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
  const until = (pred: () => boolean, what: string, ms = 600_000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${peer}: timed out waiting for ${what}`)), ms);
      onChange = () => {
        if (pred()) {
          clearTimeout(timer);
          resolve();
        }
      };
      onChange();
    });
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
  const serverCpu = () => cpuSeconds(api.pids().apiserver) + cpuSeconds(api.pids().etcd);
  const settleMs = await settle([api.pids().apiserver, api.pids().etcd]);
  const apiLog = join(api.dir, 'kube-apiserver.log');
  const logAtSpawn = statSync(apiLog).size;
  const server0 = serverCpu();
  const from = Date.now();
  const t0 = performance.now();
  const child = spawn(command[0] as string, command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await Promise.race([
      until(() => readyNames.size === n, 'all Ready'),
      exited.then(() => Promise.reject(new Error(`${peer} exited early: ${stderr}`))),
    ]);
    const readyMs = performance.now() - t0;
    const readyAt = Date.now();
    const logAtReady = statSync(apiLog).size;
    const cpuAtReady = cpuSeconds(child.pid);
    const serverToReady = serverCpu() - server0;
    // The API server keeps deletionTimestamp to the second, and both controllers count the grace
    // period from it: start the deletes just past a wall-clock second, so that truncation (up to
    // 1 s of the measured time) is the same for every run instead of noise between them.
    await new Promise((r) => setTimeout(r, 1050 - (Date.now() % 1000)));
    const t1 = performance.now();
    for (let i = 0; i < n; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((name) => net.deleteServiceCIDR({ name })));
    }
    await until(() => gone.size === n, 'all deleted');
    const deleteMs = performance.now() - t1;
    const rss = rssMiB(child.pid as number);
    const cpu = {
      toReady: cpuAtReady,
      controller: cpuSeconds(child.pid),
      serverToReady,
      server: serverCpu() - server0,
    };
    child.kill('SIGTERM');
    await exited;
    const to = Date.now();
    // The clients' own deletes fall in the window; neither controller deletes ServiceCIDRs.
    const requests = requestsIn(
      auditLog,
      from,
      to,
      readyAt,
      (e) => e.verb === 'delete' && e.objectRef?.resource === 'servicecidrs',
    );
    const syncs = allocatorSyncs(apiLog, logAtSpawn, logAtReady);
    const { writes } = requests;
    ctx.log(
      `  e2e ${peer}: API server idle ${settleMs.toFixed(0)} ms after the creates; Ready ${readyMs.toFixed(0)} ms (API server allocator syncs ${syncs}, controller CPU ${cpuAtReady.toFixed(2)} s, API server and etcd CPU ${serverToReady.toFixed(2)} s, ${writes.inFlight.toFixed(2)} writes in flight at the API server, ${writes.meanMs.toFixed(1)} ms each), deleted ${deleteMs.toFixed(0)} ms, ${requests.total} requests, first write ${requests.firstWriteMs.toFixed(0)} ms after spawn, peak RSS ${rss.peak.toFixed(1)} MiB, CPU ${cpu.controller.toFixed(2)} s (API server and etcd ${cpu.server.toFixed(2)} s)`,
    );
    return { peer, readyMs, deleteMs, settleMs, syncs, requests, rss, cpu };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    w.abort();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2
    ? (s[(s.length - 1) / 2] as number)
    : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

/** Busy processes for the CPU (`yes` into /dev/null), stopped by the returned function. */
function cpuLoad(n: number): () => void {
  const procs = Array.from({ length: n }, () => spawn('yes', [], { stdio: 'ignore' }));
  return () => {
    for (const p of procs) p.kill('SIGKILL');
  };
}

/** Busy processes of the loaded runs: `KUBENODE_BENCH_LOAD` (default 2, one per core here; 0: no loaded run). */
function loadersWanted(): number {
  const v = process.env.KUBENODE_BENCH_LOAD;
  if (v === undefined || v === '') return 2;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`KUBENODE_BENCH_LOAD must be a whole number, got ${v}`);
  return n;
}

// Both sides with the client limit raised (`--kube-api-qps=1000 --kube-api-burst=1000`): at the
// default 20 QPS, burst 30, both spend ~100 s on 2,000 writes and the table would measure the
// limiter, not the controllers.
const RAISED = ['--kube-api-qps=1000', '--kube-api-burst=1000'];

/** `node --version` of binary `node`. */
function nodeVersion(node: string): string {
  return node === process.execPath
    ? process.version
    : execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
}

/** The controller's V8 flags as the chart deploys it (`controller.nodeOptions` of charts/kubenode/values.yaml). */
function chartNodeOptions(): string[] {
  const values = parseYaml(readFileSync(join(repoRoot, 'charts', 'kubenode', 'values.yaml'), 'utf8')) as {
    controller?: { nodeOptions?: unknown };
  };
  const o = values.controller?.nodeOptions;
  return typeof o === 'string' ? o.split(/\s+/).filter((f) => f !== '') : [];
}

interface ModeResult {
  loaders: number;
  load: [number, number];
  runs: ControllerRun[];
}

async function endToEndMode(
  ctx: BenchContext,
  api: Awaited<ReturnType<typeof startApiServer>>,
  auditLog: string,
  commands: Record<string, string[]>,
  n: number,
  rounds: number,
  loaders: number,
): Promise<ModeResult> {
  const loadBefore = loadavg()[0] ?? 0;
  const stop = loaders > 0 ? cpuLoad(loaders) : () => {};
  const runs: ControllerRun[] = [];
  try {
    // Alternate the order each round, so neither side always runs on a warmer server.
    const peers = Object.keys(commands);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 ? [...peers].reverse() : peers;
      for (const peer of order) {
        ctx.log(`  ${loaders ? `loaded (${loaders} busy loops)` : 'quiet'}, round ${r + 1}:`);
        runs.push(await controllerRun(ctx, api, auditLog, n, peer, commands[peer] as string[]));
      }
    }
  } finally {
    stop();
  }
  return { loaders, load: [loadBefore, loadavg()[0] ?? 0], runs };
}

function modeTable(m: ModeResult, rounds: number): string {
  const of = (peer: string) => m.runs.filter((x) => x.peer === peer);
  const row = (peer: string) => {
    const xs = of(peer);
    return {
      ready: median(xs.map((x) => x.readyMs)),
      del: median(xs.map((x) => x.deleteMs)),
      req: median(xs.map((x) => x.requests.total)),
      rss: median(xs.map((x) => x.rss.peak)),
      rssMax: Math.max(...xs.map((x) => x.rss.peak)),
      cpu: median(xs.map((x) => x.cpu.controller)),
      cpuToReady: median(xs.map((x) => x.cpu.toReady)),
      firstWrite: median(xs.map((x) => x.requests.firstWriteMs)),
      serverCpu: median(xs.map((x) => x.cpu.server)),
      serverToReady: median(xs.map((x) => x.cpu.serverToReady)),
    };
  };
  const k = row('kubenode');
  const g = row('go-upstream');
  const peers = peersVersions();
  const inFlight = ({ requests: { writes } }: ControllerRun) =>
    `${writes.inFlight.toFixed(2)} (${writes.meanMs.toFixed(1)} ms)`;
  const spread = <V = number>(
    peer: string,
    f: (x: ControllerRun) => V,
    show: (v: V) => string = (v) => (Number(v) / 1000).toFixed(2),
  ) =>
    of(peer)
      .map((x) => show(f(x)))
      .join(', ');
  return [
    `**${m.loaders ? `Loaded: ${m.loaders} busy processes (\`yes > /dev/null\`) beside the run` : 'Quiet: no load generator'}** (1-minute load average ${m.load[0].toFixed(2)} before, ${m.load[1].toFixed(2)} after)`,
    '',
    '| controller | all finalized and Ready | spawn → first write | all deleted (10 s grace) | API requests | peak RSS (median, max) | controller CPU to Ready, whole run | API server + etcd CPU to Ready, whole run |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    `| kubenode (\`kubenode servicecidr-controller\`) | ${(k.ready / 1000).toFixed(2)} s | ${(k.firstWrite / 1000).toFixed(2)} s | ${(k.del / 1000).toFixed(2)} s | ${k.req} | ${k.rss.toFixed(1)} MiB, ${k.rssMax.toFixed(1)} MiB | ${k.cpuToReady.toFixed(2)} s, ${k.cpu.toFixed(2)} s | ${k.serverToReady.toFixed(2)} s, ${k.serverCpu.toFixed(2)} s |`,
    `| go-upstream (kube-controller-manager ${peers.kubernetes}) | ${(g.ready / 1000).toFixed(2)} s | ${(g.firstWrite / 1000).toFixed(2)} s | ${(g.del / 1000).toFixed(2)} s | ${g.req} | ${g.rss.toFixed(1)} MiB, ${g.rssMax.toFixed(1)} MiB | ${g.cpuToReady.toFixed(2)} s, ${g.cpu.toFixed(2)} s | ${g.serverToReady.toFixed(2)} s, ${g.serverCpu.toFixed(2)} s |`,
    `| ratio (upstream / kubenode) | ${fmtRatio(g.ready / k.ready)} | ${fmtRatio(g.firstWrite / k.firstWrite)} | ${fmtRatio(g.del / k.del)} | ${fmtRatio(g.req / k.req)} | ${fmtRatio(g.rss / k.rss)} | ${fmtRatio(g.cpuToReady / k.cpuToReady)}, ${fmtRatio(g.cpu / k.cpu)} | ${fmtRatio(g.serverToReady / k.serverToReady)}, ${fmtRatio(g.serverCpu / k.serverCpu)} |`,
    '',
    `Rounds (${rounds}) — to Ready, kubenode: ${spread('kubenode', (x) => x.readyMs)} s; upstream: ${spread('go-upstream', (x) => x.readyMs)} s. ` +
      `To deleted, kubenode: ${spread('kubenode', (x) => x.deleteMs)} s; upstream: ${spread('go-upstream', (x) => x.deleteMs)} s. ` +
      `Wait for an idle API server after the creates (its 0.5 s idle check included), kubenode: ${spread('kubenode', (x) => x.settleMs)} s; upstream: ${spread('go-upstream', (x) => x.settleMs)} s. ` +
      `The API server's allocator syncs between spawn and Ready, kubenode: ${spread('kubenode', (x) => x.syncs, String)}; upstream: ${spread('go-upstream', (x) => x.syncs, String)}. ` +
      `Writes in flight at the API server between spawn and Ready, on average (each controller has 5 workers), and each one's mean time in the server, kubenode: ${spread('kubenode', inFlight, String)}; upstream: ${spread('go-upstream', inFlight, String)}.`,
  ].join('\n');
}

async function endToEnd(ctx: BenchContext): Promise<string> {
  const n = ctx.quick ? 100 : 1000;
  const rounds = Number(process.env.KUBENODE_BENCH_ROUNDS) || (ctx.quick ? 1 : 5);
  const loaders = loadersWanted();
  // The image's Node is 24; KUBENODE_BENCH_NODE runs the controller on another binary than the bench's.
  const node = process.env.KUBENODE_BENCH_NODE || process.execPath;
  const nodeFlags =
    process.env.KUBENODE_BENCH_NODE_FLAGS?.split(/\s+/).filter((f) => f !== '') ?? chartNodeOptions();
  const kcm = goPeerBinary('kube-controller-manager');
  const dataDir = benchDataDir();
  const dir = mkdtempSync(join(dataDir, 'kubenode-bench-scc-'));
  const policy = join(dir, 'audit-policy.yaml');
  const auditLog = join(dir, 'audit.log');
  writeFileSync(policy, AUDIT_POLICY);
  const api = await startApiServer({
    extraArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-mode=blocking',
      // Rotation (100 MB by default, also when 0) would move a round's first events out of the
      // file the counts read: about seven rounds of both controllers fill it.
      '--audit-log-maxsize=100000',
    ],
    parentDir: dataDir,
  });
  try {
    const commands: Record<string, string[]> = {
      kubenode: [
        node,
        ...nodeFlags,
        join(repoRoot, 'dist', 'cli', 'main.js'),
        'servicecidr-controller',
        `--kubeconfig=${api.kubeconfigFile}`,
        '--v=0',
        '--secure-port=0',
        ...RAISED,
      ],
      'go-upstream': [
        kcm,
        `--kubeconfig=${api.kubeconfigFile}`,
        '--controllers=service-cidr-controller',
        '--use-service-account-credentials=false',
        '--leader-elect=false',
        '--secure-port=0',
        '--v=0',
        ...RAISED,
      ],
    };
    const modes = [await endToEndMode(ctx, api, auditLog, commands, n, rounds, 0)];
    if (loaders > 0) modes.push(await endToEndMode(ctx, api, auditLog, commands, n, rounds, loaders));
    const peers = peersVersions();
    const kinds = (peer: string) => {
      const last = modes[0]?.runs.filter((x) => x.peer === peer).at(-1);
      return [...(last?.requests.byKind ?? [])]
        .sort((a, b) => b[1] - a[1])
        .map(([kind, c]) => `${kind} ${c}`)
        .join(', ');
    };
    return [
      ...modes
        .map((m) => modeTable(m, rounds))
        .join('\n\n')
        .split('\n'),
      '',
      `Medians of ${rounds} rounds per controller (order alternating; \`KUBENODE_BENCH_ROUNDS\` for another count), ${n} ServiceCIDRs each round, one kube-apiserver`,
      `${peers.kubernetes} + etcd ${peers.etcd} on loopback shared by both, both with \`${RAISED.join(' ')}\` (at the`,
      'default 20 QPS, burst 30, 2,000 writes take both ~100 s: the limiter, not the controller). Each controller',
      `runs as its own process with 5 workers, kubenode's on Node ${nodeVersion(node)} with ${process.env.KUBENODE_BENCH_NODE_FLAGS === undefined ? "the chart's V8 flags" : 'the V8 flags of KUBENODE_BENCH_NODE_FLAGS'} (\`${nodeFlags.join(' ')}\`;`,
      '`KUBENODE_BENCH_NODE` and `KUBENODE_BENCH_NODE_FLAGS` choose others); CPU is user + system time from /proc, the',
      "API server's and etcd's over the same window. Each round creates the ServiceCIDRs, waits until the API server",
      "and etcd are idle (under a tenth of a core for 0.5 s: the API server's own allocator walks every ServiceCIDR",
      'on each ServiceCIDR event, so the creates leave it seconds of backlog), then spawns the controller.',
      `etcd's data, the API server's log and the audit log are in \`${dataDir}\`${dataDir === '/dev/shm' ? ', a tmpfs' : ''} (\`KUBENODE_BENCH_DATA_DIR\` for another place): on this`,
      "machine's disk, where etcd fsyncs every write and the allocator logs a line per ServiceCIDR per sync, one",
      "controller's quiet rounds spread up to 1.6× (slowest / fastest), against 1.3× on tmpfs.",
      "A controller's time starts at process spawn (start-up and",
      'initial watch included) and ends at the last watch event showing the finalizer and Ready=True (resp. the last',
      'DELETED event, timed from the first delete; the deletes start 50 ms past a wall-clock second, because the',
      "grace period counts from a deletionTimestamp kept to the second). Writes in flight are the patches' summed time in the API server",
      '(audit requestReceivedTimestamp to ResponseComplete) over the span in which they were received.',
      "Requests are the API server's audit events (one per audit ID) between",
      "spawn and exit, less the clients' deletes; RSS is VmHWM from /proc before the controller is stopped. The",
      'loaded run keeps the busy processes going for all its rounds; set `KUBENODE_BENCH_LOAD=<n>` for another',
      'count, 0 for the quiet run alone.',
      '',
      `Requests of the last quiet round — kubenode: ${kinds('kubenode')}; upstream: ${kinds('go-upstream')}.`,
    ].join('\n');
  } finally {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(ctx: BenchContext): Promise<string> {
  const { text } = await lookups(ctx);
  const e2e = await endToEnd(ctx);
  return `### CIDRIndex.containing, 10,000 ServiceCIDRs\n\n${text}\n\n### Controller end to end against kube-controller-manager (real API server)\n\n${e2e}\n`;
}
