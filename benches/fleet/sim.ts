// A fleet of simulated nodes on one machine: each node is a network namespace whose conntrack
// table holds real UDP flows DNATed by nftables to a Service's endpoints, and runs
// `kubenode conntrack reconcile --netns` as its own process (as a DaemonSet pod would) against
// one real kube-apiserver. Removing endpoints from the EndpointSlice must make every node drop
// the flows to them; per node we take the time from the API write to the end of the pass that
// deleted them.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api, type V1EndpointSlice, type V1Service } from '@kubernetes/client-node';
import { TestNetns } from '../../test/conntrack/netns.js';
import { type ApiServer, startApiServer } from '../../test/support/apiserver.js';
import { endpointsTable, serviceEntries } from '../../ts/conntrack/k8s.js';
import { cpuSince } from './cpu.js';
import {
  type ProxyNode,
  programmed,
  startApiBridge,
  startKubeProxies,
  stopKubeProxies,
} from './kube-proxy.js';

const repo = join(import.meta.dirname, '..', '..');
const NS = 'default';
const VIP = '10.96.0.10';
const PORT = 53;

export interface FleetOptions {
  nodes: number;
  flowsPerNode: number;
  endpoints: number;
  /** Endpoints removed by the change (the last ones). */
  removed: number;
  /**
   * Also time one cleanup pass per node, one node at a time on refilled tables: kubenode's
   * (`conntrack clean` fed the kubectl Lists) and kube-proxy's CleanStaleEntries (this Go peer).
   */
  goPeer?: string;
  /** Run the built CLI (`dist/`, as deployed) instead of the TypeScript sources under tsx. */
  built?: boolean;
  /**
   * Upstream kube-proxy to run beside each node's reconciler (in a namespace of its own, with
   * flows of its own through its own rules), for its memory and cleanup in the same run.
   */
  kubeProxy?: string;
  /** Node options of each reconciler process (V8 flags), e.g. ['--max-semi-space-size=1']. */
  nodeFlags?: string[];
  /** Node binary the reconcilers run on (the image's Node may not be this one); default: this Node. */
  node?: string;
  /** Seconds of rest, every process up and before the change, over which CPU is sampled; default 10. */
  restSeconds?: number;
  log?: (m: string) => void;
}

export interface FleetResult {
  /** Per node: ms from the EndpointSlice write to the end of the pass that deleted the stale flows. */
  latenciesMs: number[];
  /** Per node: seconds of that pass as the reconciler reported it. */
  passSeconds: number[];
  staleDeleted: number;
  staleLeft: number;
  watchesBefore: number;
  watchesAfter: number;
  rssKB: number[];
  /** Per node, with `kubeProxy`: kube-proxy's RSS at the same moment as `rssKB`. */
  kubeProxyRssKB: number[];
  /** Per node: ms of CPU a second the reconciler used at rest (all threads), and kube-proxy's. */
  restCpuMsPerS: number[];
  kubeProxyRestCpuMsPerS: number[];
  /**
   * Per node: ms of CPU the reconciler used from the EndpointSlice write until every process of
   * both kinds had cleaned its flows (the same window for both), and kube-proxy's.
   */
  changeCpuMs: number[];
  kubeProxyChangeCpuMs: number[];
  /** Per node, with `kubeProxy`: ms from the write until its namespace had no stale flow (polled). */
  kubeProxyLatenciesMs: number[];
  kubeProxyStaleBefore: number;
  kubeProxyStaleLeft: number;
  /** Per node, one at a time: seconds of kubenode's pass and of upstream's (Go peer), when run. */
  soloSeconds: number[];
  goSeconds: number[];
  goDeleted: number;
}

const epIP = (i: number) => `10.244.0.${i + 1}`;

function service(): V1Service {
  return {
    metadata: { name: 'dns', namespace: NS },
    spec: { clusterIP: VIP, clusterIPs: [VIP], ports: [{ name: 'dns', protocol: 'UDP', port: PORT }] },
  };
}

function slice(endpoints: number): V1EndpointSlice {
  return {
    metadata: { name: 'dns-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'dns' } },
    addressType: 'IPv4',
    endpoints: Array.from({ length: endpoints }, (_, i) => ({
      addresses: [epIP(i)],
      conditions: { ready: true, serving: true },
    })),
    ports: [{ name: 'dns', protocol: 'UDP', port: PORT }],
  };
}

/** Watches the API server holds open, from its /metrics (`apiserver_longrunning_requests`). */
async function watchCount(api: ApiServer): Promise<number> {
  const res = await fetchMetrics(api);
  let n = 0;
  for (const line of res.split('\n')) {
    if (line.startsWith('apiserver_longrunning_requests{') && line.includes('verb="WATCH"')) {
      n += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return n;
}

async function fetchMetrics(api: ApiServer): Promise<string> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(
      `${api.url}/metrics`,
      { ca: readFileSync(api.caFile), headers: { Authorization: `Bearer ${api.token}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function rssKB(pid: number | undefined): number {
  if (!pid) return 0;
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, timeoutMs: number, ok: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

interface Node {
  ns: TestNetns;
  child?: ChildProcess;
  out: string;
}

/** `ip daddr VIP udp dport 53` round-robin over the endpoints, as kube-proxy's rules spread flows. */
function fillNode(ns: TestNetns, opts: FleetOptions, rules = true): void {
  if (rules) {
    const map = Array.from({ length: opts.endpoints }, (_, i) => `${i} : ${epIP(i)}`).join(', ');
    ns.nft(
      `table ip kn-fleet {\n chain out {\n  type nat hook output priority -100; policy accept;\n` +
        `  ip daddr ${VIP} udp dport ${PORT} dnat to numgen inc mod ${opts.endpoints} map { ${map} }\n }\n}\n`,
    );
    // Unreplied UDP entries live 30 s by default; an hour outlasts the run.
    ns.exec('sh', ['-c', 'echo 3600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  }
  ns.sendUdp(Array.from({ length: opts.flowsPerNode }, (_, i) => [20000 + i, VIP, PORT]));
}

const isStale = (opts: FleetOptions) => {
  const gone = new Set(Array.from({ length: opts.removed }, (_, i) => epIP(opts.endpoints - 1 - i)));
  return (ns: TestNetns) => ns.conntrackL('ipv4').filter((e) => gone.has(e.replySrc)).length;
};

export async function runFleet(opts: FleetOptions): Promise<FleetResult> {
  const log = opts.log ?? (() => {});
  const nodes: Node[] = [];
  let proxies: ProxyNode[] = [];
  let bridge: ChildProcess | undefined;
  let api: ApiServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'kn-fleet-'));
  try {
    api = await startApiServer();
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const disc = api.kubeConfig.makeApiClient(DiscoveryV1Api);
    await core.createNamespacedService({ namespace: NS, body: service() });
    await disc.createNamespacedEndpointSlice({ namespace: NS, body: slice(opts.endpoints) });

    const t0 = Date.now();
    for (let i = 0; i < opts.nodes; i++) {
      const ns = new TestNetns('kn-fleet');
      nodes.push({ ns, out: '' });
      fillNode(ns, opts);
    }
    const stale = isStale(opts);
    const staleBefore = nodes.reduce((n, x) => n + stale(x.ns), 0);
    log(
      `  ${opts.nodes} namespaces, ${opts.flowsPerNode} UDP flows each (${staleBefore} to the endpoints to be removed) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    let kubeProxyStaleBefore = 0;
    if (opts.kubeProxy) {
      const sock = join(dir, 'api.sock');
      bridge = startApiBridge(api, sock);
      proxies = await startKubeProxies(opts.kubeProxy, api, core, sock, opts.nodes);
      await until('every kube-proxy to program the Service', 300_000, () =>
        proxies.every((p) => programmed(p, VIP)),
      );
      // Flows through kube-proxy's own DNAT rules, as many as each reconciler's node has.
      for (const p of proxies) {
        p.ns.exec('sh', ['-c', 'echo 3600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
        fillNode(p.ns, opts, false);
      }
      kubeProxyStaleBefore = proxies.reduce((n, p) => n + stale(p.ns), 0);
      if (kubeProxyStaleBefore === 0) throw new Error("no flow went through kube-proxy's DNAT rules");
      log(`  ${opts.nodes} kube-proxies running, ${kubeProxyStaleBefore} of their flows to be made stale`);
    }

    const watchesBefore = await watchCount(api);
    const cli = opts.built
      ? [join(repo, 'dist', 'cli', 'main.js')]
      : ['--import', 'tsx', join(repo, 'ts', 'cli', 'main.ts')];
    for (const [i, n] of nodes.entries()) {
      // One process per node, like a DaemonSet: its own watches, its own memory.
      const child = spawn(
        opts.node ?? process.execPath,
        [
          ...(opts.nodeFlags ?? []),
          ...cli,
          'conntrack',
          'reconcile',
          '--kubeconfig',
          api.kubeconfigFile,
          '--netns',
          n.ns.path,
          '-f',
          'ipv4',
          // Both listeners, as the chart runs them and as each kube-proxy here runs its own; one
          // machine, so a port pair per node.
          `--healthz-bind-address=127.0.0.1:${21000 + 2 * i}`,
          `--metrics-bind-address=127.0.0.1:${21001 + 2 * i}`,
        ],
        { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      n.child = child;
      child.stdout?.setEncoding('utf8').on('data', (c: string) => {
        n.out += c;
      });
      child.stderr?.setEncoding('utf8').on('data', (c: string) => {
        n.out += c;
      });
    }
    // Each reconciler watches Services and EndpointSlices: two watches per node.
    await until('every reconciler to open its watches', 300_000, async () => {
      for (const n of nodes) if (n.child?.exitCode !== null) throw new Error(`reconciler exited: ${n.out}`);
      return (await watchCount(api as ApiServer)) >= watchesBefore + 2 * opts.nodes;
    });
    const watchesAfter = await watchCount(api);
    await sleep(2000); // let start-up passes (if any) finish before the change
    // CPU at rest: every process up, nothing changing, the same window for both kinds.
    const restS = opts.restSeconds ?? 10;
    const nodePids = nodes.map((n) => n.child?.pid);
    const proxyPids = proxies.map((p) => p.child?.pid);
    const nodesAtRest = cpuSince(nodePids);
    const proxiesAtRest = cpuSince(proxyPids);
    await sleep(restS * 1000);
    const restCpuMsPerS = nodesAtRest().map((ms) => ms / restS);
    const kubeProxyRestCpuMsPerS = proxiesAtRest().map((ms) => ms / restS);
    for (const n of nodes) n.out = '';
    log(`  ${opts.nodes} reconcilers running; API server watches ${watchesBefore} → ${watchesAfter}`);

    const cur = (await disc.readNamespacedEndpointSlice({ name: 'dns-1', namespace: NS })) as V1EndpointSlice;
    cur.endpoints = (cur.endpoints ?? []).slice(0, opts.endpoints - opts.removed);
    const nodesSinceWrite = cpuSince(nodePids);
    const proxiesSinceWrite = cpuSince(proxyPids);
    const written = Date.now();
    await disc.replaceNamespacedEndpointSlice({ name: 'dns-1', namespace: NS, body: cur });

    // kube-proxy's namespaces, polled: the write until a listing shows no stale flow.
    const kubeProxyLatenciesMs: number[] = proxies.map(() => Number.NaN);
    const polled = (async () => {
      while (kubeProxyLatenciesMs.some(Number.isNaN) && Date.now() - written < 300_000) {
        for (const [i, p] of proxies.entries()) {
          if (Number.isNaN(kubeProxyLatenciesMs[i]) && stale(p.ns) === 0)
            kubeProxyLatenciesMs[i] = Date.now() - written;
        }
        await sleep(250);
      }
    })();
    const syncLine = /^(\S+) IPv4: listed \d+, stale (\d+), deleted (\d+)(?: \(partial\))? in ([\d.]+)s$/gm;
    // The first pass that deleted something is the one that answered the change.
    const deletingPass = (n: Node) => [...n.out.matchAll(syncLine)].find((m) => Number(m[3]) > 0);
    await until('every node to delete its stale flows', 300_000, () => nodes.every((n) => deletingPass(n)));
    const rss = nodes.map((n) => rssKB(n.child?.pid));
    const kubeProxyRssKB = proxies.map((p) => rssKB(p.child?.pid));
    await polled;
    const changeCpuMs = nodesSinceWrite();
    const kubeProxyChangeCpuMs = proxiesSinceWrite();
    const kubeProxyStaleLeft = proxies.reduce((n, p) => n + stale(p.ns), 0);
    stopKubeProxies(proxies);
    proxies = [];
    const latenciesMs: number[] = [];
    const passSeconds: number[] = [];
    let staleDeleted = 0;
    for (const n of nodes) {
      const m = deletingPass(n) as RegExpExecArray;
      latenciesMs.push(Date.parse(m[1] as string) - written);
      passSeconds.push(Number(m[4]));
      staleDeleted += Number(m[3]);
    }
    const staleLeft = nodes.reduce((n, x) => n + stale(x.ns), 0);
    for (const n of nodes) n.child?.kill('SIGTERM');

    const soloSeconds: number[] = [];
    const goSeconds: number[] = [];
    let goDeleted = 0;
    if (opts.goPeer) {
      // The objects now in the API, as `kubectl get … -A -o json` prints them, and the compact
      // tables the Go peer reads, built with the library's own converters.
      const list = (kind: string, o: object) => ({ apiVersion: 'v1', kind: 'List', items: [{ kind, ...o }] });
      const svcList = join(dir, 'services.json');
      const sliceList = join(dir, 'endpointslices.json');
      writeFileSync(svcList, JSON.stringify(list('Service', service())));
      writeFileSync(sliceList, JSON.stringify(list('EndpointSlice', cur)));
      const tables = join(dir, 'tables.json');
      writeFileSync(
        tables,
        JSON.stringify({
          services: serviceEntries(service(), 'IPv4'),
          endpoints: endpointsTable([cur], 'IPv4'),
        }),
      );
      const refill = (n: Node) => {
        // Re-create the flows the last pass removed (the nft map still spreads over all endpoints).
        n.ns.exec('conntrack', ['-F']);
        fillNode(n.ns, opts, false);
      };
      const run = (n: Node, what: string, argv: string[]) => {
        const r = spawnSync(argv[0] as string, argv.slice(1), { cwd: repo, encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`${what} failed: ${r.stderr}`);
        if (stale(n.ns) !== 0) throw new Error(`${what} left stale flows in ${n.ns.name}`);
        // The CLI prints one JSON document; the Go peer a JSON line last.
        const out = r.stdout.trim();
        const doc = out.startsWith('{\n')
          ? out
          : (out
              .split('\n')
              .filter((l) => l.startsWith('{'))
              .pop() ?? '{}');
        return JSON.parse(doc) as { seconds?: number; wallSeconds?: number; deleted?: number };
      };
      for (const n of nodes) {
        refill(n);
        const k = run(n, 'kubenode conntrack clean', [
          process.execPath,
          ...cli,
          'conntrack',
          'clean',
          '--netns',
          n.ns.path,
          '--services',
          svcList,
          '--endpoints',
          sliceList,
          '-o',
          'json',
        ]);
        soloSeconds.push(k.seconds ?? Number.NaN);
        refill(n);
        const g = run(n, 'go peer', [
          'ip',
          'netns',
          'exec',
          n.ns.name,
          opts.goPeer,
          '-json',
          '-services',
          tables,
        ]);
        goSeconds.push(g.wallSeconds ?? Number.NaN);
        goDeleted += g.deleted ?? 0;
      }
    }
    return {
      latenciesMs,
      passSeconds,
      staleDeleted,
      staleLeft,
      watchesBefore,
      watchesAfter,
      rssKB: rss,
      kubeProxyRssKB,
      restCpuMsPerS,
      kubeProxyRestCpuMsPerS,
      changeCpuMs,
      kubeProxyChangeCpuMs,
      kubeProxyLatenciesMs,
      kubeProxyStaleBefore,
      kubeProxyStaleLeft,
      soloSeconds,
      goSeconds,
      goDeleted,
    };
  } finally {
    stopKubeProxies(proxies);
    if (bridge && bridge.exitCode === null) bridge.kill('SIGKILL');
    for (const n of nodes) {
      if (n.child && n.child.exitCode === null) n.child.kill('SIGKILL');
      n.ns.destroy();
    }
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Nearest-rank percentile. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}
