// The real control plane the tests start is the reference release pinned in benches/peers/go.mod
// (v1.37.2), and an older release kept buildable (benches/peers/go.1.36.3.mod) is refused
// clearly when its module files are missing.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';

const root = path.resolve(import.meta.dirname, '../..');
const peers = path.join(root, 'benches', 'peers');

function pinned(modfile: string): string {
  const m = /^\s*k8s\.io\/kubernetes (v[0-9.]+)/m.exec(readFileSync(path.join(peers, modfile), 'utf8'));
  return m?.[1] ?? '';
}

let api: ApiServer | undefined;
afterAll(async () => {
  await api?.stop();
});

describe('Go peers release', () => {
  it('go.mod pins v1.37.2 and go.1.36.3.mod v1.36.3', () => {
    expect(pinned('go.mod')).toBe('v1.37.2');
    expect(pinned('go.1.36.3.mod')).toBe('v1.36.3');
  });

  it('startApiServer runs the reference release: /version reports v1.37.2', async () => {
    api = await startApiServer();
    const version = (await api.kubeConfig
      .makeApiClient((await import('@kubernetes/client-node')).VersionApi)
      .getCode()) as { gitVersion: string; major: string; minor: string };
    expect(version).toMatchObject({ gitVersion: 'v1.37.2', major: '1', minor: '37' });
  }, 600_000);

  it('startApiServer({ release: "1.36.3" }) runs the older release: /version reports v1.36.3', async () => {
    const old = await startApiServer({ release: '1.36.3' });
    try {
      const { VersionApi } = await import('@kubernetes/client-node');
      const version = (await old.kubeConfig.makeApiClient(VersionApi).getCode()) as { gitVersion: string };
      expect(version.gitVersion).toBe('v1.36.3');
    } finally {
      await old.stop();
    }
  }, 3_600_000);

  it('prepare.sh --release refuses a release without module files, naming the command that adds it', () => {
    const r = spawnSync('bash', [path.join(peers, 'prepare.sh'), '--release', '1.35.0', 'etcd'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      'no module files for Kubernetes v1.35.0 (reference: v1.37.2; older releases: 1.36.3); add it with benches/peers/update-deps.sh 1.37.2 1.36.3 1.35.0',
    );
  });
});
