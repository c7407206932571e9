// `kubenode conntrack reconcile` as a DaemonSet would run it: it never exits 0 on its own
// (an unreachable API server means retrying, not "Completed"), finds its cluster in-cluster
// without flags, fails fast with exit 2 when there is none, and stops with 0 on SIGTERM.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { NOT_CONFIGURED, runToExit, startDaemon } from '../support/daemon.js';
import { inCluster, outsideEnv } from '../support/incluster.js';
import { TestNetns } from './netns.js';

vi.setConfig({ testTimeout: 180_000 });
const NS = 'default';

let api: ApiServer;
let ns: TestNetns;
let dir: string;

/** A loopback port nobody listens on. */
function deadPort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

beforeAll(async () => {
  ns = new TestNetns();
  dir = mkdtempSync(join(tmpdir(), 'kubenode-ct-daemon-'));
  // A kubeconfig whose server nobody listens on.
  const port = await deadPort();
  writeFileSync(
    join(dir, 'unreachable'),
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:${port}\n` +
      'users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n',
  );
  api = await startApiServer();
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  const disc = api.kubeConfig.makeApiClient(DiscoveryV1Api);
  await core.createNamespacedService({
    namespace: NS,
    body: {
      metadata: { name: 'dns', namespace: NS },
      spec: {
        clusterIP: '10.96.0.10',
        clusterIPs: ['10.96.0.10'],
        ports: [{ name: 'p', protocol: 'UDP', port: 53 }],
      },
    },
  });
  await disc.createNamespacedEndpointSlice({
    namespace: NS,
    body: {
      metadata: { name: 'dns-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'dns' } },
      addressType: 'IPv4',
      ports: [{ name: 'p', protocol: 'UDP', port: 5353 }],
      endpoints: [
        { addresses: ['10.244.0.1'], conditions: { ready: true, serving: true, terminating: false } },
      ],
    },
  });
});
afterAll(async () => {
  await api?.stop();
  ns?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// No listeners: the default ports are one per machine, and test files run side by side.
const QUIET = ['--healthz-bind-address=', '--metrics-bind-address='];
const reconcileArgs = () => [
  'conntrack',
  'reconcile',
  '--family',
  'ipv4',
  '--dry-run',
  '--netns',
  ns.path,
  ...QUIET,
];

describe('kubenode conntrack reconcile as a daemon', () => {
  it('keeps retrying an unreachable API server and exits 0 only on SIGTERM', async () => {
    const kubeconfig = join(dir, 'unreachable');
    const d = startDaemon([...reconcileArgs(), '--kubeconfig', kubeconfig]);
    try {
      // Three failed lists of Services, retried with backoff (0.8 s, 1.6 s, 3.2 s…), and still up.
      const failures = /(api\/v1\/services.*ECONNREFUSED.*\(retrying\)[\s\S]*){3}/;
      await d.waitOutput(failures, 90_000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(d.alive, `exited early: ${d.stderr}`).toBe(true);
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });

  it('a started StaleFlowReconciler keeps its process alive while it retries', async () => {
    const index = join(import.meta.dirname, '..', '..', 'ts', 'index.ts');
    const script = join(dir, 'reconciler.mts');
    writeFileSync(
      script,
      `import { KubeConfig } from ${JSON.stringify(createRequire(import.meta.url).resolve('@kubernetes/client-node'))};
import { conntrack } from ${JSON.stringify(index)};
const kc = new KubeConfig();
kc.loadFromFile(${JSON.stringify(join(dir, 'unreachable'))});
const r = new conntrack.StaleFlowReconciler(kc, {
  families: ['IPv4'],
  onError: (e) => console.error('failed:', e.message),
});
await r.start();
`,
    );
    const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
    const child = spawn(tsx, [script], {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: join(import.meta.dirname, '..', '..'),
    });
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    let exitCode: number | null | undefined;
    child.once('exit', (code) => {
      exitCode = code;
    });
    try {
      const deadline = Date.now() + 90_000;
      while ((stderr.match(/failed:.*ECONNREFUSED/g) ?? []).length < 4 && exitCode === undefined) {
        if (Date.now() > deadline) throw new Error(`no retries: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 1000));
      expect(exitCode, `exited: ${stderr}`).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('uses the in-cluster configuration when no kubeconfig is given', async () => {
    const pod = inCluster(api);
    const d = startDaemon(reconcileArgs(), pod.env);
    try {
      await d.waitOutput(/IPv4: listed \d+, stale \d+, deleted 0/);
      expect(d.stderr).not.toMatch(/kubenode: .*retrying/);
    } finally {
      expect(await d.stop()).toBe(0);
      pod.remove();
    }
  });

  it('--kubeconfig overrides the in-cluster configuration', async () => {
    const pod = inCluster(api);
    // The pod's apiserver is dead; the flag's is the real one.
    pod.env.KUBERNETES_SERVICE_PORT = String(await deadPort());
    const d = startDaemon([...reconcileArgs(), '--kubeconfig', api.kubeconfigFile], pod.env);
    try {
      await d.waitOutput(/IPv4: listed \d+/);
    } finally {
      expect(await d.stop()).toBe(0);
      pod.remove();
    }
  });

  it('fails fast with exit 2 and says what is missing outside a cluster', () => {
    const r = runToExit(reconcileArgs(), outsideEnv());
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(NOT_CONFIGURED);
  });

  it('exits 1 when it cannot start at run time (its network namespace is gone)', () => {
    const gone = `/var/run/netns/kn-ct-daemons-gone-${process.pid}`;
    const r = runToExit(
      ['conntrack', 'reconcile', '--kubeconfig', join(dir, 'unreachable'), '--netns', gone, ...QUIET],
      process.env,
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `kubenode conntrack reconcile: opening namespace ${gone}: No such file or directory`,
    );
  });

  it('escapes a line break from its input in the text log, so it cannot forge a line', () => {
    const forged = `/var/run/netns/kn-gone-${process.pid}\nI1127 00:00:00.000000 1 reconciler] "all clean"`;
    const r = runToExit(
      ['conntrack', 'reconcile', '--kubeconfig', join(dir, 'unreachable'), '--netns', forged, ...QUIET],
      process.env,
    );
    expect(r.status).toBe(1);
    // One line, the break shown as `\n`.
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/^kubenode conntrack reconcile: opening namespace /);
    expect(r.stderr).toContain(`${forged.replace('\n', '\\n')}: No such file or directory`);
  });

  it('fails fast with exit 2 in a pod without a service-account token', () => {
    const pod = inCluster(api);
    rmSync(join(pod.dir, 'token'));
    try {
      const r = runToExit(reconcileArgs(), pod.env);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`cannot read the service-account token ${join(pod.dir, 'token')}`);
    } finally {
      pod.remove();
    }
  });
});
