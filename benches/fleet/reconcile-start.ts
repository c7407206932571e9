// Start-up time, resting memory and idle CPU of one `kubenode conntrack reconcile` (the built CLI,
// both listeners on, as the chart runs it) against the real API server (one UDP Service with an
// endpoint): milliseconds from spawn to the first pass's line, RSS 5 s later, and the CPU all its
// threads use in the next 20 s of rest, per Node binary and per build of the CLI, interleaved.
//
//   KUBENODE_PEERS_BIN=/work/peers-bin npx tsx benches/fleet/reconcile-start.ts \
//     [--node /path/to/node]... [--dist name=/path/to/dist]... [--runs 3] [--flags '--max-semi-space-size=1']
//
// Defaults: this Node, this checkout's dist/, 3 runs, the chart's flags.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TestNetns } from '../../test/conntrack/netns.js';
import { startApiServer } from '../../test/support/apiserver.js';
import { loadKubeConfig } from '../../ts/kube/config.js';
import { restClient } from '../../ts/kube/rest.js';
import { cpuSince } from './cpu.js';

const repo = join(import.meta.dirname, '..', '..');
const { values } = parseArgs({
  options: {
    node: { type: 'string', multiple: true },
    dist: { type: 'string', multiple: true },
    runs: { type: 'string', default: '3' },
    flags: { type: 'string', default: '--max-semi-space-size=1' },
  },
});
const nodes = values.node ?? [process.execPath];
const dists = (values.dist ?? [`this=${join(repo, 'dist')}`]).map((d) => {
  const [name, path] = d.split('=') as [string, string];
  return { name, path };
});
const flags = (values.flags ?? '').split(' ').filter((f) => f !== '');

function status(pid: number, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function once(node: string, dist: string, kubeconfig: string, netns: string) {
  const t0 = performance.now();
  const child = spawn(
    node,
    [
      ...flags,
      join(dist, 'cli', 'main.js'),
      'conntrack',
      'reconcile',
      '--kubeconfig',
      kubeconfig,
      '--family',
      'ipv4',
      '--dry-run',
      '--netns',
      netns,
      '--healthz-bind-address=127.0.0.1:21900',
      '--metrics-bind-address=127.0.0.1:21901',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const first = await new Promise<number>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c;
      if (/IPv4: listed \d+/.test(out)) resolve(performance.now() - t0);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', () => reject(new Error(`reconciler exited: ${out}`)));
  });
  await new Promise((r) => setTimeout(r, 5000));
  const rss = status(child.pid as number, 'VmRSS');
  const hwm = status(child.pid as number, 'VmHWM');
  const atRest = cpuSince([child.pid]);
  await new Promise((r) => setTimeout(r, 20_000));
  const idle = (atRest()[0] ?? 0) / 20;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { first, rss, hwm, idle };
}

const api = await startApiServer();
const ns = new TestNetns();
try {
  const rest = restClient(
    (await loadKubeConfig(api.kubeconfigFile, { env: {} })).connection,
    'kubenode-bench',
  );
  await rest.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    body: {
      metadata: { name: 'dns' },
      spec: { clusterIP: '10.96.0.10', ports: [{ protocol: 'UDP', port: 53 }] },
    },
  });
  await rest.request({
    method: 'POST',
    path: '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
    body: {
      metadata: { name: 'dns-1', labels: { 'kubernetes.io/service-name': 'dns' } },
      addressType: 'IPv4',
      ports: [{ protocol: 'UDP', port: 5353 }],
      endpoints: [{ addresses: ['10.244.0.1'], conditions: { ready: true } }],
    },
  });
  rest.close();
  const results = new Map<string, { first: number[]; rss: number[]; hwm: number[]; idle: number[] }>();
  for (let i = 0; i < Number(values.runs); i++) {
    for (const node of nodes) {
      for (const d of dists) {
        const r = await once(node, d.path, api.kubeconfigFile, ns.path);
        const key = `${d.name} | ${node}`;
        const acc = results.get(key) ?? { first: [], rss: [], hwm: [], idle: [] };
        acc.first.push(r.first);
        acc.rss.push(r.rss);
        acc.hwm.push(r.hwm);
        acc.idle.push(r.idle);
        results.set(key, acc);
      }
    }
  }
  console.log(`flags: ${flags.join(' ') || 'none'}; median of ${values.runs}`);
  console.log('| build | node | spawn → first pass | RSS 5 s later | peak RSS | CPU at rest |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const [key, r] of results) {
    const [build, node] = key.split(' | ') as [string, string];
    const version = (await new Promise<string>((res) => {
      const c = spawn(node, ['--version']);
      let v = '';
      c.stdout.on('data', (x) => {
        v += x;
      });
      c.once('exit', () => res(v.trim()));
    })) as string;
    console.log(
      `| ${build} | ${version} | ${median(r.first).toFixed(0)} ms | ${median(r.rss).toFixed(1)} MiB | ${median(r.hwm).toFixed(1)} MiB | ${median(r.idle).toFixed(2)} ms/s |`,
    );
  }
} finally {
  ns.destroy();
  await api.stop();
}
