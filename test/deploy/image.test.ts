// The image as the Containerfile builds it, without a container engine: its install stage
// (scripts/image-install.sh, the very script the Containerfile runs) replayed from the packed
// tarball into a temp prefix under Node 24, the image's runtime; then both daemons started from
// that install with Node 24 and the command, arguments and environment of their deploy/
// manifests (node's flags included), as the image's ENTRYPOINT would, until /healthz answers 200. The controller runs as the image's non-root
// user against a real kube-apiserver; the reconciler as root (its manifest's UID) with its
// conntrack handle in a network namespace of its own.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { netnsExists, TestNetns } from '../conntrack/netns.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { nodeBinary } from '../support/node-binary.js';
import { type Daemon, httpGet, startDaemon, waitFor } from './daemon.js';
import { kustomization, loadManifests, manifestArgs, manifestNode } from './manifests.js';

const repo = join(import.meta.dirname, '..', '..');
const NS = kustomization().namespace;
// The image's USER.
const NONROOT = 65532;

let api: ApiServer;
let dir: string;
let node24: string;
let cli: string;
let kubeconfig: string;

beforeAll(async () => {
  node24 = nodeBinary(24);
  dir = mkdtempSync(join(tmpdir(), 'kubenode-image-'));
  // The image's non-root user must read the install and the kubeconfig, as in the image.
  chmodSync(dir, 0o755);
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: repo,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop() as string;
  const prefix = join(dir, 'opt', 'kubenode');
  // npm's own script runs under the first `node` on PATH: the install stage's Node 24.
  execFileSync('sh', [join(repo, 'scripts', 'image-install.sh'), prefix, join(dir, tarball)], {
    env: { ...process.env, PATH: `${dirname(node24)}:${process.env.PATH}` },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  cli = join(prefix, 'node_modules', 'kubenode', 'dist', 'cli', 'main.js');

  api = await startApiServer();
  // The same cluster, the CA inline: the API server's own directory is not readable by others.
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: api.url, caData: readFileSync(api.caFile).toString('base64') }],
    users: [{ name: 'admin', token: api.token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'admin' }],
    currentContext: 'test',
  });
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o644 });
  const client = KubernetesObjectApi.makeApiClient(api.kubeConfig);
  for (const o of loadManifests())
    await client.patch(o, undefined, undefined, 'kubenode-image-test', true, PatchStrategy.ServerSideApply);
}, 240_000);

afterAll(async () => {
  await api?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** /healthz answers 200, then /readyz (its informers have listed from the API server). */
async function healthy(d: Daemon): Promise<void> {
  for (const path of ['/healthz', '/readyz'])
    await waitFor(
      () => `${path} 200 (stderr: ${d.stderr()})`,
      async () => d.child.exitCode === null && (await httpGet(`${d.base}${path}`)).status === 200,
      60_000,
    );
}

describe('the image install (Containerfile stage replayed, Node 24)', () => {
  it('holds kubenode and the peers the daemons need, and no dev dependency', () => {
    const modules = join(dir, 'opt', 'kubenode', 'node_modules');
    for (const p of ['kubenode', '@kubernetes/client-node', 'prom-client'])
      expect(() => readFileSync(join(modules, p, 'package.json'))).not.toThrow();
    for (const p of ['vitest', 'typescript', '@napi-rs/cli'])
      expect(() => readFileSync(join(modules, p, 'package.json'))).toThrow();
    expect(execFileSync(node24, ['-v'], { encoding: 'utf8' })).toMatch(/^v24\./);
  });

  it('servicecidr-controller starts from it as the non-root user: /healthz and /readyz 200', async () => {
    const args = [
      ...manifestArgs('Deployment', 'kubenode-servicecidr-controller', NS),
      '--kubeconfig',
      kubeconfig,
    ];
    const { flags, env } = manifestNode('Deployment', 'kubenode-servicecidr-controller');
    const d = await startDaemon(args, {
      node: node24,
      main: cli,
      uid: NONROOT,
      gid: NONROOT,
      nodeFlags: flags,
      env,
    });
    try {
      await healthy(d);
      expect(d.logs().some((l) => 'err' in l)).toBe(false);
    } finally {
      expect(await d.stop(), d.stderr()).toBe(0);
    }
  }, 120_000);

  it('conntrack reconcile starts from it in its own network namespace: /healthz and /readyz 200', async () => {
    const ns = new TestNetns('kn-img');
    try {
      const args = [
        ...manifestArgs('DaemonSet', 'kubenode-conntrack-reconciler', NS),
        '--kubeconfig',
        kubeconfig,
        '--netns',
        ns.path,
      ];
      const { flags, env } = manifestNode('DaemonSet', 'kubenode-conntrack-reconciler');
      const d = await startDaemon(args, { node: node24, main: cli, nodeFlags: flags, env });
      try {
        await healthy(d);
        expect(d.logs().some((l) => 'err' in l)).toBe(false);
      } finally {
        expect(await d.stop(), d.stderr()).toBe(0);
      }
    } finally {
      ns.destroy();
      expect(netnsExists(ns.name)).toBe(false);
    }
  }, 120_000);
});
