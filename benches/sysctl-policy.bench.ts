// Sysctl admission in the API server: dry-run pod create latency without and with the rendered
// ValidatingAdmissionPolicy (README example policy), and the full differential run (10,000
// random pods, API decision vs in-process decision).
import { join } from 'node:path';
import { startApiServer } from '../test/support/apiserver.js';
import { Api, pod } from '../test/sysctl/support/admission.js';
import { runDifferential } from '../test/sysctl/support/differential.js';
import { sysctl } from '../ts/index.js';
import { type BenchContext, peersVersions, repoRoot } from './lib/harness.js';

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

interface Probe {
  ns: string;
  body: unknown;
  status: number;
}

/**
 * Sequential dry-run creates (one in flight), so each sample is one request's latency. The
 * probes take turns, so a load change on the machine hits every row alike.
 */
async function latencies(api: Api, probes: Probe[], n: number): Promise<number[][]> {
  for (let i = 0; i < Math.min(100, n); i++) for (const p of probes) await api.dryRun(p.ns, p.body); // warm-up
  const out = probes.map(() => [] as number[]);
  for (let i = 0; i < n; i++) {
    for (const [k, p] of probes.entries()) {
      const t = performance.now();
      const r = await api.dryRun(p.ns, p.body);
      out[k]!.push(performance.now() - t);
      if (r.status !== p.status) throw new Error(`expected ${p.status}, got ${r.status}`);
    }
  }
  return out.map((l) => l.sort((a, b) => a - b));
}

export async function run(ctx: BenchContext): Promise<string> {
  const n = ctx.quick ? 100 : 1000;
  const cases = ctx.quick ? 500 : 10_000;
  const server = await startApiServer();
  const api = new Api(server, 32);
  try {
    await api.namespace('bench-web', { tier: 'web' });
    await api.namespace('bench-plain', { tier: 'plain' });
    const ok = pod('ok', [{ name: 'net.core.somaxconn', value: '1024' }]);
    const bad = pod('bad', [{ name: 'net.core.somaxconn', value: '8192' }]);
    const rows: [string, number[]][] = [];
    const [before] = await latencies(api, [{ ns: 'bench-web', body: ok, status: 201 }], n);
    rows.push(['no policy in the cluster', before!]);
    const file = await sysctl.loadSysctlPolicyFile(join(repoRoot, 'examples', 'sysctl-policy.yaml'));
    await api.applyPolicy(file.render());
    await api.until('the policy', async () => (await api.dryRun('bench-web', bad)).status === 403);
    const [plain, allowed, denied] = await latencies(
      api,
      [
        { ns: 'bench-plain', body: ok, status: 201 },
        { ns: 'bench-web', body: ok, status: 201 },
        { ns: 'bench-web', body: bad, status: 403 },
      ],
      n,
    );
    rows.push(['policy applied, namespace not selected (interleaved)', plain!]);
    rows.push(['policy applied, pod allowed (interleaved)', allowed!]);
    rows.push(['policy applied, pod denied (interleaved)', denied!]);
    await api.deletePolicy(file.name);
    for (const [name, l] of rows)
      ctx.log(`  ${name}: p50 ${pct(l, 0.5).toFixed(2)} ms, p99 ${pct(l, 0.99).toFixed(2)} ms`);

    const d = await runDifferential(api, { cases, policies: 20, seed: 20261124, prefix: 'bench-diff' });
    ctx.log(
      `  differential: ${d.cases} cases, ${d.disagreements.length} disagreements, ${(d.ms / 1000).toFixed(1)} s`,
    );
    if (d.disagreements.length > 0)
      throw new Error(`disagreements: ${JSON.stringify(d.disagreements.slice(0, 3))}`);
    return [
      '| dry-run pod create | requests | p50 | p99 |',
      '|---|---:|---:|---:|',
      ...rows.map(
        ([name, l]) =>
          `| ${name} | ${l.length} | ${pct(l, 0.5).toFixed(2)} ms | ${pct(l, 0.99).toFixed(2)} ms |`,
      ),
      '',
      `One kube-apiserver ${peersVersions().kubernetes} + etcd on loopback; one request in flight (keep-alive HTTPS, bearer token), 100 warm-up`,
      'requests per row. The policy is examples/sysctl-policy.yaml (net.core.somaxconn within 128–4096 in namespaces',
      'labelled tier=web, all workload kinds); the pod sets net.core.somaxconn to 1024 (allowed) or 8192 (denied). The',
      'three "interleaved" rows take turns request by request, so machine load affects them alike; compare those.',
      '',
      `Differential run: ${d.cases} random pods, Deployments and CronJobs over ${d.policies} random policies, 32 in flight,`,
      `${(d.ms / 1000).toFixed(1)} s: ${d.allowed} allowed, ${d.deniedByPolicy} denied by the policy, ${d.deniedByValidation} refused by API`,
      `validation; **${d.disagreements.length} disagreements** with the in-process decision.`,
    ].join('\n');
  } finally {
    api.close();
    await server.stop();
  }
}
