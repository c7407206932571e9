// A 50-node fleet on one machine: 50 network namespaces with real DNATed UDP flows, one
// `kubenode conntrack reconcile --netns` process per node, one real kube-apiserver. An
// EndpointSlice loses endpoints; per node, the time from the API write to the end of the pass
// that deleted the stale flows. Then kube-proxy's CleanStaleEntries (Go peer) per node on the
// same tables, for the per-node cost of the pass itself.
import { percentile, runFleet } from './fleet/sim.js';
import { type BenchContext, goPeerBinary } from './lib/harness.js';

export async function run(ctx: BenchContext): Promise<string> {
  if (process.getuid?.() !== 0) throw new Error('the fleet benchmark needs root (network namespaces)');
  const opts = {
    nodes: ctx.quick ? 5 : 50,
    flowsPerNode: ctx.quick ? 100 : 2000,
    endpoints: 10,
    removed: 3,
    goPeer: goPeerBinary('conntrack-bench'),
    built: true, // `npm run bench` builds dist/ first: the daemon as deployed, without tsx
    log: ctx.log,
  };
  const r = await runFleet(opts);
  if (r.staleLeft !== 0) throw new Error(`${r.staleLeft} stale flows left after the reconcilers ran`);
  const ms = (xs: number[], p: number) => `${percentile(xs, p).toFixed(0)} ms`;
  const s = (xs: number[], p: number) => `${(percentile(xs, p) * 1000).toFixed(1)} ms`;
  const totalRssMB = r.rssKB.reduce((a, b) => a + b, 0) / 1024;
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
    '',
    `API server watches (\`apiserver_longrunning_requests{verb="WATCH"}\` from /metrics): ${r.watchesBefore} ` +
      `before the reconcilers, ${r.watchesAfter} with them (2 per node: Services, EndpointSlices). ` +
      `Reconcilers' total RSS after the change: ${totalRssMB.toFixed(0)} MiB ` +
      `(${(totalRssMB / opts.nodes).toFixed(0)} MiB per node, Node ${process.version}, built CLI). ` +
      `Stale flows left: ${r.staleLeft}. The latency includes the reconciler's wait of one ` +
      `min-sync-period after a change (it coalesces, then cleans), and the watch event's fan-out to ${opts.nodes} ` +
      'processes sharing 2 cores (all nodes clean at once); the one-at-a-time rows refill each table ' +
      `and give the per-node cost of the pass itself (Go peer: ${r.goDeleted} stale flows deleted in all).`,
  ].join('\n');
}
