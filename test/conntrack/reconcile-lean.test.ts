// `kubenode conntrack reconcile` (the built CLI) runs without @kubernetes/client-node: it is
// started from a copy of the package whose node_modules holds every dependency but client-node,
// so an import of it anywhere on the daemon's path would fail. The daemon must list, watch and
// run its pass against the real API server all the same; an exec-plugin kubeconfig, which does
// need client-node, shows the copy really lacks it (exit 1 naming the missing peer).
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { loadKubeConfig } from '../../ts/kube/config.js';
import { restClient } from '../../ts/kube/rest.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { TestNetns } from './netns.js';

vi.setConfig({ testTimeout: 120_000 });

const repo = join(import.meta.dirname, '..', '..');
let api: ApiServer;
let ns: TestNetns;
let pkg: string;

beforeAll(async () => {
  pkg = mkdtempSync(join(tmpdir(), 'kubenode-lean-pkg-'));
  cpSync(join(repo, 'dist'), join(pkg, 'dist'), { recursive: true });
  cpSync(join(repo, 'package.json'), join(pkg, 'package.json'));
  symlinkSync(join(repo, 'prebuilds'), join(pkg, 'prebuilds'));
  const modules = join(pkg, 'node_modules');
  mkdirSync(join(modules, '@kubernetes'), { recursive: true });
  for (const name of readdirSync(join(repo, 'node_modules'))) {
    if (name === '@kubernetes') continue;
    symlinkSync(join(repo, 'node_modules', name), join(modules, name));
  }
  for (const name of readdirSync(join(repo, 'node_modules', '@kubernetes'))) {
    if (name !== 'client-node') {
      symlinkSync(join(repo, 'node_modules', '@kubernetes', name), join(modules, '@kubernetes', name));
    }
  }
  ns = new TestNetns();
  api = await startApiServer();
  // A UDP Service with an endpoint: the first pass runs, and logs, for it.
  const rest = restClient(
    (await loadKubeConfig(api.kubeconfigFile, { env: {} })).connection,
    'kubenode-test',
  );
  await rest.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/services',
    body: {
      metadata: { name: 'dns' },
      spec: { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [{ protocol: 'UDP', port: 53 }] },
    },
  });
  await rest.request({
    method: 'POST',
    path: '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
    body: {
      metadata: { name: 'dns-1', labels: { 'kubernetes.io/service-name': 'dns' } },
      addressType: 'IPv4',
      ports: [{ protocol: 'UDP', port: 5353 }],
      endpoints: [
        { addresses: ['10.244.0.1'], conditions: { ready: true, serving: true, terminating: false } },
      ],
    },
  });
  rest.close();
});
afterAll(async () => {
  await api?.stop();
  ns?.destroy();
  if (pkg) rmSync(pkg, { recursive: true, force: true });
});

function reconcile(kubeconfig: string): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(
    process.execPath,
    [
      join(pkg, 'dist', 'cli', 'main.js'),
      'conntrack',
      'reconcile',
      '--kubeconfig',
      kubeconfig,
      '--family',
      'ipv4',
      '--dry-run',
      '--netns',
      ns.path,
      '--healthz-bind-address=',
      '--metrics-bind-address=',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: pkg },
  );
  let out = '';
  child.stdout?.on('data', (c) => {
    out += c;
  });
  child.stderr?.on('data', (c) => {
    out += c;
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

it('lists, watches and runs its pass with client-node absent', async () => {
  const d = reconcile(api.kubeconfigFile);
  try {
    await vi.waitFor(() => expect(d.output()).toMatch(/IPv4: listed \d+/), {
      timeout: 60_000,
      interval: 200,
    });
    expect(d.output()).not.toMatch(/client-node|peer dependency/);
  } finally {
    d.child.kill('SIGTERM');
    expect(await d.exited, d.output()).toBe(0);
  }
});

it('an exec plugin kubeconfig is the one case that needs client-node', async () => {
  const kubeconfig = join(pkg, 'exec-kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority': api.caFile } }],
      users: [
        {
          name: 'u',
          user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/true' } },
        },
      ],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  const d = reconcile(kubeconfig);
  const code = await Promise.race([d.exited, new Promise((r) => setTimeout(() => r('running'), 30_000))]);
  if (code === 'running') d.child.kill('SIGKILL');
  expect(code, d.output()).toBe(1);
  expect(d.output()).toMatch(/needs the peer dependency @kubernetes\/client-node/);
});
