// A 50-node fleet on one machine: 50 network namespaces with real DNATed UDP flows, one
// `kubenode conntrack reconcile --netns` process per node, one real kube-apiserver. An
// EndpointSlice loses endpoints; per node, the time from the API write to the end of the pass
// that deleted the stale flows. Then kube-proxy's CleanStaleEntries (Go peer) per node on the
// same tables, for the per-node cost of the pass itself. Upstream kube-proxy v1.37.2 runs
// beside each reconciler (nftables mode, a namespace of its own with the same flows), for the
// memory of both in the same run.
//   KUBENODE_FLEET_NODES=5 npm run bench -- fleet         (a smaller fleet)
//   KUBENODE_FLEET_NODE_FLAGS='--optimize-for-size'  (V8 flags of each reconciler process;
//                                  default: the chart's reconciler.nodeOptions, as deployed)
//   KUBENODE_FLEET_NODE=/path/to/node  (Node binary of each reconciler process, e.g. the image's;
//                                  default: the Node running the bench)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { percentile, runFleet } from './fleet/sim.js';
import { type BenchContext, goPeerBinary, repoRoot } from './lib/harness.js';

/** The V8 flags the chart gives each reconciler (on node's command line). */
function chartNodeOptions(): string {
  const values = parse(readFileSync(join(repoRoot, 'charts', 'kubenode', 'values.yaml'), 'utf8')) as {
    reconciler?: { nodeOptions?: string };
  };
  return values.reconciler?.nodeOptions ?? '';
}

export async function run(ctx: BenchContext): Promise<string> {
  if (process.getuid?.() !== 0) throw new Error('the fleet benchmark needs root (network namespaces)');
  const sized = Number(process.env.KUBENODE_FLEET_NODES ?? '');
  const nodeFlags = (process.env.KUBENODE_FLEET_NODE_FLAGS ?? chartNodeOptions())
    .split(/\s+/)
    .filter(Boolean);
  const node = process.env.KUBENODE_FLEET_NODE || process.execPath;
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!nodeVersion) throw new Error(`KUBENODE_FLEET_NODE=${node} does not run`);
  const opts = {
    nodes: Number.isInteger(sized) && sized > 0 ? sized : ctx.quick ? 5 : 50,
    flowsPerNode: ctx.quick ? 100 : 2000,
    endpoints: 10,
    removed: 3,
    goPeer: goPeerBinary('conntrack-bench'),
    kubeProxy: goPeerBinary('kube-proxy'),
    nodeFlags,
    node,
    built: true, // `npm run bench` builds dist/ first: the daemon as deployed, without tsx
    log: ctx.log,
  };
  const r = await runFleet(opts);
  if (r.staleLeft !== 0) throw new Error(`${r.staleLeft} stale flows left after the reconcilers ran`);
  const ms = (xs: number[], p: number) => `${percentile(xs, p).toFixed(0)} ms`;
  const s = (xs: number[], p: number) => `${(percentile(xs, p) * 1000).toFixed(1)} ms`;
  const totalRssMB = r.rssKB.reduce((a, b) => a + b, 0) / 1024;
  const mib = (kb: number[], p: number) => `${(percentile(kb, p) / 1024).toFixed(1)} MiB`;
  const cpu = (xs: number[], p: number) => `${percentile(xs, p).toFixed(2)} ms/s`;
  const sum = (kb: number[]) => `${(kb.reduce((a, b) => a + b, 0) / 1024).toFixed(0)} MiB`;
  const ratio = percentile(r.rssKB, 50) / percentile(r.kubeProxyRssKB, 50);
  if (r.kubeProxyStaleLeft !== 0) throw new Error(`kube-proxy left ${r.kubeProxyStaleLeft} stale flows`);
  return [
    `${opts.nodes} nodes (network namespaces), ${opts.flowsPerNode} UDP flows each through nftables DNAT ` +
      `(round-robin over ${opts.endpoints} endpoints of one UDP Service); the change removes ${opts.removed} ` +
      `endpoints from its EndpointSlice (${r.staleDeleted} stale flows across the fleet). One ` +
      '`kubenode conntrack reconcile --netns` process per node (default --min-sync-period 1000 ms), as the ' +
      'DaemonSet runs it: its own watches and memory, so the watch count and RSS are what a fleet costs; ' +
      'one process with 50 handles would hide both.',
    '',
    '| measure | p50 | p99 | max |',
    '| --- | --- | --- | --- |',
    `| API write → stale flows gone, per node | ${ms(r.latenciesMs, 50)} | ${ms(r.latenciesMs, 99)} | ${ms(r.latenciesMs, 100)} |`,
    `| kubenode pass inside that, ${opts.nodes} nodes at once | ${s(r.passSeconds, 50)} | ${s(r.passSeconds, 99)} | ${s(r.passSeconds, 100)} |`,
    `| kubenode pass, one node at a time (\`conntrack clean\` fed the kubectl Lists) | ${s(r.soloSeconds, 50)} | ${s(r.soloSeconds, 99)} | ${s(r.soloSeconds, 100)} |`,
    `| kube-proxy CleanStaleEntries (Go peer), one node at a time | ${s(r.goSeconds, 50)} | ${s(r.goSeconds, 99)} | ${s(r.goSeconds, 100)} |`,
    `| kube-proxy v1.37.2 (nftables mode): API write → stale flows gone, per node (polled every 250 ms and more) | ${ms(r.kubeProxyLatenciesMs, 50)} | ${ms(r.kubeProxyLatenciesMs, 99)} | ${ms(r.kubeProxyLatenciesMs, 100)} |`,
    '',
    `Memory per node, same run, RSS after the change (${opts.nodes} of each process; reconcilers on Node ${nodeVersion}` +
      `${nodeFlags.length ? `, reconciler flags \`${nodeFlags.join(' ')}\`` : ''}):`,
    '',
    '| process | RSS p50 | RSS max | all nodes | reconciler / kube-proxy (p50) | CPU at rest p50 | CPU at rest max | CPU for the change p50 |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    `| \`kubenode conntrack reconcile\` | ${mib(r.rssKB, 50)} | ${mib(r.rssKB, 100)} | ${sum(r.rssKB)} | ${ratio.toFixed(2)}× | ${cpu(r.restCpuMsPerS, 50)} | ${cpu(r.restCpuMsPerS, 100)} | ${ms(r.changeCpuMs, 50)} |`,
    `| kube-proxy v1.37.2 | ${mib(r.kubeProxyRssKB, 50)} | ${mib(r.kubeProxyRssKB, 100)} | ${sum(r.kubeProxyRssKB)} | 1× | ${cpu(r.kubeProxyRestCpuMsPerS, 50)} | ${cpu(r.kubeProxyRestCpuMsPerS, 100)} | ${ms(r.kubeProxyChangeCpuMs, 50)} |`,
    '',
    'Both run as deployed, listeners included: kube-proxy with its health and metrics listeners on ' +
      "their default ports in its namespace, each reconciler with its two on a port pair of the host's " +
      'loopback. kube-proxy also programs its rules and cleans its own flows. CPU at rest: ms of CPU ' +
      'a second, all threads, over 10 s with every process up and nothing changing; CPU for the ' +
      'change: ms of CPU, all threads, from the EndpointSlice write until every process of both kinds ' +
      'had cleaned its flows (kube-proxy also reprograms its rules). The API server is ' +
      "reached from each kube-proxy's namespace through a socat bridge over a Unix socket.",
    '',
    `API server watches (\`apiserver_longrunning_requests{verb="WATCH"}\` from /metrics): ${r.watchesBefore} ` +
      `before the reconcilers, ${r.watchesAfter} with them (2 per node: Services, EndpointSlices). ` +
      `Reconcilers' total RSS after the change: ${totalRssMB.toFixed(0)} MiB ` +
      `(${(totalRssMB / opts.nodes).toFixed(0)} MiB per node, Node ${nodeVersion}, built CLI). ` +
      `Stale flows left: ${r.staleLeft}. A change after a quiet period is cleaned at once (the ` +
      `min-sync-period only spaces passes of a burst), so the latency is the watch event's fan-out to ${opts.nodes} ` +
      'processes sharing 2 cores (all nodes clean at once); the one-at-a-time rows refill each table ' +
      `and give the per-node cost of the pass itself (Go peer: ${r.goDeleted} stale flows deleted in all).`,
  ].join('\n');
}
