// Sysctl admission in the API server: dry-run pod create latency without and with the rendered
// ValidatingAdmissionPolicy (README example policy), and the full differential run (10,000
// random pods, API decision vs in-process decision).
import { join } from 'node:path';
import { startApiServer } from '../test/support/apiserver.js';
import { Api, pod } from '../test/sysctl/support/admission.js';
import { runDifferential } from '../test/sysctl/support/differential.js';
import { sysctl } from '../ts/index.js';
import { type BenchContext, repoRoot } from './lib/harness.js';

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** Sequential dry-run creates (one in flight), so each sample is one request's latency. */
async function latencies(api: Api, ns: string, body: unknown, n: number, status: number): Promise<number[]> {
  for (let i = 0; i < Math.min(100, n); i++) await api.dryRun(ns, body); // warm-up
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await api.dryRun(ns, body);
    out.push(performance.now() - t);
    if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}`);
  }
  return out.sort((a, b) => a - b);
}

export async function run(ctx: BenchContext): Promise<string> {
  const n = ctx.quick ? 100 : 1000;
  const cases = ctx.quick ? 500 : 10_000;
  const server = await startApiServer();
  const api = new Api(server, 32);
  try {
    await api.namespace('bench-web', { tier: 'web' });
    const ok = pod('ok', [{ name: 'net.core.somaxconn', value: '1024' }]);
    const bad = pod('bad', [{ name: 'net.core.somaxconn', value: '8192' }]);
    const rows: [string, number[]][] = [];
    rows.push(['no policy', await latencies(api, 'bench-web', ok, n, 201)]);
    const file = await sysctl.loadSysctlPolicyFile(join(repoRoot, 'examples', 'sysctl-policy.yaml'));
    await api.applyPolicy(file.render());
    await api.until('the policy', async () => (await api.dryRun('bench-web', bad)).status === 403);
    rows.push(['rendered policy, pod allowed', await latencies(api, 'bench-web', ok, n, 201)]);
    rows.push(['rendered policy, pod denied', await latencies(api, 'bench-web', bad, n, 403)]);
    await api.deletePolicy(file.name);
    await api.until('the policy to go', async () => (await api.dryRun('bench-web', bad)).status === 201);
    rows.push(['no policy (again, after delete)', await latencies(api, 'bench-web', ok, n, 201)]);
    for (const [name, l] of rows)
      ctx.log(`  ${name}: p50 ${pct(l, 0.5).toFixed(2)} ms, p99 ${pct(l, 0.99).toFixed(2)} ms`);

    const d = await runDifferential(api, { cases, policies: 20, seed: 20261124, prefix: 'bench-diff' });
    ctx.log(
      `  differential: ${d.cases} cases, ${d.disagreements.length} disagreements, ${(d.ms / 1000).toFixed(1)} s`,
    );
    if (d.disagreements.length > 0)
      throw new Error(`disagreements: ${JSON.stringify(d.disagreements.slice(0, 3))}`);
    return [
      `| dry-run pod create, namespace tier=web | requests | p50 | p99 |`,
      '|---|---:|---:|---:|',
      ...rows.map(
        ([name, l]) =>
          `| ${name} | ${l.length} | ${pct(l, 0.5).toFixed(2)} ms | ${pct(l, 0.99).toFixed(2)} ms |`,
      ),
      '',
      'One kube-apiserver v1.36.3 + etcd on loopback; one request in flight (keep-alive HTTPS, bearer token), 100 warm-up',
      'requests per row. The policy is examples/sysctl-policy.yaml (net.core.somaxconn within 128–4096, all workload',
      'kinds); the pod sets net.core.somaxconn to 1024 (allowed) or 8192 (denied).',
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
