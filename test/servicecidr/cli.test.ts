// `kubenode servicecidr-controller` as a process: runs against the real API server, serves
// metrics, exits cleanly on SIGTERM, and reports configuration errors clearly.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, httpGet } from '../deploy/daemon.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { NOT_CONFIGURED, runToExit, startDaemon } from '../support/daemon.js';
import { inCluster, outsideEnv } from '../support/incluster.js';
import { apis, createCIDR, waitFor, waitReady } from './helpers.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
let api: ApiServer;

beforeAll(async () => {
  api = await startApiServer();
});
afterAll(async () => {
  await api?.stop();
});

describe('kubenode servicecidr-controller', () => {
  it('reconciles, serves metrics over HTTPS and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const d = startDaemon([
      'servicecidr-controller',
      '--kubeconfig',
      api.kubeconfigFile,
      '--workers',
      '2',
      '--leader-elect',
      '--leader-elect-lease-duration=3s',
      '--leader-elect-renew-deadline=2s',
      '--leader-elect-retry-period=500ms',
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
    ]);
    const why = () => `(alive: ${d.alive}; stderr: ${d.stderr})`;
    try {
      await d.waitOutput(/Serving health and metrics/);
      expect(d.stderr).toMatch(/"Serving certificate" source="self-signed"/);
      const { net } = apis(api.kubeConfig);
      await createCIDR(net, 'cli-a', ['10.250.0.0/24']);
      await waitReady(net, 'cli-a', 60_000).catch((e: Error) => {
        throw new Error(`${e.message} ${why()}`);
      });
      // The admin token: this API server authorizes everything it authenticates.
      const metrics = await waitFor(`metrics ${why()}`, async () => {
        const r = await httpGet(`https://127.0.0.1:${port}/metrics`, api.token);
        return r.body.includes('workqueue_adds_total{name="ipaddresses"}') && r.body;
      });
      expect(metrics).toMatch(
        /^kubenode_leader_election_master_status\{name="service-cidr-controller"\} 1$/m,
      );
      expect(metrics).toMatch(/workqueue_work_duration_seconds_count\{name="ipaddresses"\} [1-9]/);
    } finally {
      expect(await d.stop(), why()).toBe(0);
    }
    expect(d.stderr).toContain('"Starting" controller="service-cidr-controller"');
    expect(d.stderr).toContain('"Shutting down" controller="service-cidr-controller"');
    expect(d.stderr).toContain('successfully acquired lease');
  }, 120_000);

  it('rejects a missing or broken kubeconfig with exit code 2', () => {
    const missing = spawnSync(
      tsx,
      [main, 'servicecidr-controller', '--kubeconfig', '/nonexistent/kubeconfig'],
      {
        encoding: 'utf8',
      },
    );
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/cannot load kubeconfig \/nonexistent\/kubeconfig/);
    const dir = mkdtempSync(join(tmpdir(), 'kubenode-cli-test-'));
    try {
      const bad = join(dir, 'bad-kubeconfig');
      writeFileSync(bad, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
      const empty = spawnSync(tsx, [main, 'servicecidr-controller', '--kubeconfig', bad], {
        encoding: 'utf8',
      });
      expect(empty.status).toBe(2);
      expect(empty.stderr).toMatch(/no current cluster with a server/);
      const workers = spawnSync(
        tsx,
        [main, 'servicecidr-controller', '--kubeconfig', bad, '--workers', '0'],
        {
          encoding: 'utf8',
        },
      );
      expect(workers.status).toBe(2);
      expect(workers.stderr).toMatch(/--workers must be a positive integer/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs in-cluster without flags, and --kubeconfig overrides the in-cluster configuration', async () => {
    const { net } = apis(api.kubeConfig);
    const pod = inCluster(api);
    const d = startDaemon(['servicecidr-controller', '--workers', '1', '--secure-port=0'], pod.env);
    try {
      await createCIDR(net, 'cli-incluster', ['10.251.0.0/24']);
      await waitReady(net, 'cli-incluster', 60_000);
    } finally {
      expect(await d.stop()).toBe(0);
    }
    // The pod's apiserver is now a dead port; the flag points at the real one.
    pod.env.KUBERNETES_SERVICE_PORT = '1';
    const flagged = startDaemon(
      ['servicecidr-controller', '--kubeconfig', api.kubeconfigFile, '--secure-port=0'],
      pod.env,
    );
    try {
      await createCIDR(net, 'cli-flag', ['10.252.0.0/24']);
      await waitReady(net, 'cli-flag', 60_000);
    } finally {
      expect(await flagged.stop()).toBe(0);
      pod.remove();
    }
  }, 180_000);

  it('fails fast with exit 2 outside a cluster, never trying localhost:8080', () => {
    // The old fallback to localhost:8080 retried forever: the timeout turns that into a failure.
    const r = runToExit(['servicecidr-controller'], outsideEnv());
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(NOT_CONFIGURED);
    const half = runToExit(['servicecidr-controller'], {
      ...outsideEnv(),
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
    });
    expect(half.status).toBe(2);
    expect(half.stderr).toMatch(/KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined/);
  });
});
