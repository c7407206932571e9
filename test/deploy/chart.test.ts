// charts/kubenode: `helm lint` passes, deploy/ is exactly its default rendering, every object it
// renders with all options on passes a server-side dry-run apply on a real kube-apiserver, and
// its ResourceQuota is what lets the critical-priority pods in on an API server that limits
// those priority classes to namespaces with a covering quota.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1DaemonSet,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { type ApiServer, startApiServer } from '../support/apiserver.js';

const repo = join(import.meta.dirname, '..', '..');
const NS = 'kubenode-system';
const CRITICAL = ['system-node-critical', 'system-cluster-critical'];
// Prometheus Operator kinds: their CRDs are not part of a bare API server.
const CRD_KINDS = new Set(['ServiceMonitor', 'PrometheusRule']);

const helm = (...args: string[]) =>
  execFileSync('bash', [join(repo, 'scripts', 'helm.sh'), ...args], { encoding: 'utf8' });

function template(...set: string[]): KubernetesObject[] {
  const text = helm(
    'template',
    'kubenode',
    join(repo, 'charts', 'kubenode'),
    '--namespace',
    NS,
    ...set.flatMap((s) => ['--set', s]),
  );
  return YAML.parseAllDocuments(text)
    .map((d) => d.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
}

let api: ApiServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubenode-chart-'));
  // The ResourceQuota admission configuration the Kubernetes docs give for "limit priority class
  // consumption by default": pods of the critical classes only where a covering quota exists.
  const admission = join(dir, 'admission.yaml');
  writeFileSync(
    admission,
    YAML.stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: [
        {
          name: 'ResourceQuota',
          configuration: {
            apiVersion: 'apiserver.config.k8s.io/v1',
            kind: 'ResourceQuotaConfiguration',
            limitedResources: [
              {
                resource: 'pods',
                matchScopes: [{ scopeName: 'PriorityClass', operator: 'In', values: CRITICAL }],
              },
            ],
          },
        },
      ],
    }),
  );
  api = await startApiServer({ extraArgs: [`--admission-control-config-file=${admission}`] });
}, 600_000);

afterAll(async () => {
  await api?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const apply = (o: KubernetesObject, dryRun?: string) =>
  KubernetesObjectApi.makeApiClient(api.kubeConfig).patch(
    o,
    undefined,
    dryRun,
    'kubenode-chart-test',
    true,
    PatchStrategy.ServerSideApply,
  );

describe('charts/kubenode', () => {
  it('passes helm lint, with and without its optional parts', () => {
    helm('lint', '--strict', join(repo, 'charts', 'kubenode'));
    helm(
      'lint',
      '--strict',
      join(repo, 'charts', 'kubenode'),
      '--set',
      'serviceMonitor.enabled=true,prometheusRule.enabled=true,dashboard.enabled=true',
    );
  });

  it('deploy/ is its default rendering (npm run deploy:render), and the check notices a change', () => {
    const ok = spawnSync(process.execPath, [join(repo, 'scripts', 'render-deploy.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(ok.status, ok.stderr).toBe(0);
    // The same check in a copy whose chart defaults no longer match its deploy/.
    const copy = join(dir, 'repo');
    mkdirSync(copy);
    for (const p of ['charts', 'scripts', 'deploy'])
      cpSync(join(repo, p), join(copy, p), { recursive: true });
    symlinkSync(join(repo, '.cache'), join(copy, '.cache'));
    const values = join(copy, 'charts', 'kubenode', 'values.yaml');
    writeFileSync(values, readFileSync(values, 'utf8').replace('minSyncPeriod: 1s', 'minSyncPeriod: 2s'));
    const stale = spawnSync(process.execPath, [join(copy, 'scripts', 'render-deploy.mjs'), '--check'], {
      encoding: 'utf8',
    });
    expect(stale.status).toBe(1);
    expect(stale.stderr).toBe(
      'deploy/ is out of date with charts/kubenode (conntrack-reconciler.yaml): run npm run deploy:render\n',
    );
  });

  it('renders every option, and each object passes a server-side dry-run apply', async () => {
    const objs = template(
      'serviceMonitor.enabled=true',
      'prometheusRule.enabled=true',
      'dashboard.enabled=true',
    );
    const kinds = objs.map((o) => o.kind);
    for (const k of [
      'ResourceQuota',
      'ServiceMonitor',
      'PrometheusRule',
      'ConfigMap',
      'Service',
      'DaemonSet',
      'Deployment',
    ])
      expect(kinds).toContain(k);
    const dashboard = objs.find((o) => o.kind === 'ConfigMap') as KubernetesObject & {
      data: Record<string, string>;
    };
    expect(JSON.parse(dashboard.data['kubenode.json'] ?? '')).toMatchObject({ title: 'kubenode' });
    const ns = objs.find((o) => o.kind === 'Namespace');
    if (ns) await apply(ns);
    for (const o of objs.filter((x) => !CRD_KINDS.has(x.kind ?? '') && x.kind !== 'Namespace')) {
      const r = await apply(o, 'All');
      expect(r.metadata?.name).toBe(o.metadata?.name);
    }
  });

  it('its ResourceQuota admits the critical-priority pods that are refused without it', async () => {
    const objs = template();
    const quota = objs.find((o) => o.kind === 'ResourceQuota') as KubernetesObject & {
      spec: { hard: Record<string, string> };
    };
    expect(quota).toBeDefined();
    for (const o of objs) if (o.kind === 'Namespace' || o.kind === 'ServiceAccount') await apply(o);
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const pods = (['DaemonSet', 'Deployment'] as const).map((kind) => {
      const w = objs.find((o) => o.kind === kind) as V1DaemonSet | V1Deployment;
      return {
        metadata: { name: `${w.metadata?.name}-probe`, namespace: NS },
        spec: w.spec?.template.spec,
      } as V1Pod;
    });
    expect(pods.map((p) => p.spec?.priorityClassName).sort()).toEqual([...CRITICAL].sort());
    const create = (pod: V1Pod) => core.createNamespacedPod({ namespace: NS, body: pod, dryRun: 'All' });
    // The quota admission's refusal (an API status of code 500, as upstream returns it).
    for (const pod of pods)
      await expect(create(pod), pod.metadata?.name).rejects.toMatchObject({
        body: expect.stringContaining('insufficient quota to match these scopes: [{PriorityClass In'),
      });
    await apply(quota);
    // The quota controller (kube-controller-manager) is not running here: its status, as the
    // controller would first write it.
    await core.replaceNamespacedResourceQuotaStatus({
      name: quota.metadata?.name ?? '',
      namespace: NS,
      body: {
        ...(await core.readNamespacedResourceQuota({ name: quota.metadata?.name ?? '', namespace: NS })),
        status: { hard: quota.spec.hard, used: { pods: '0' } },
      },
    });
    for (const pod of pods) {
      const r = await create(pod);
      expect(r.spec?.priorityClassName).toMatch(/^system-(node|cluster)-critical$/);
    }
  });
});
