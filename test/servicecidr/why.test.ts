// `explainServiceCIDR` and `kubenode servicecidr why` against the real kube-apiserver, with the
// controller holding a ServiceCIDR in deletion while real Services' ClusterIPs sit inside it.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { apis, createCIDR, readCIDR, ready, runController, waitFor, waitGone, waitReady } from './helpers.js';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');
let api: ApiServer;
let net: NetworkingV1Api;
let core: CoreV1Api;
let ctl: ReturnType<typeof runController>;

function cli(args: string[]) {
  return spawnSync(tsx, [main, 'servicecidr', 'why', ...args, '--kubeconfig', api.kubeconfigFile], {
    encoding: 'utf8',
  });
}

async function service(name: string, clusterIP: string): Promise<void> {
  await core.createNamespacedService({
    namespace: 'default',
    body: { metadata: { name }, spec: { clusterIP, ports: [{ port: 80 }] } },
  });
}

beforeAll(async () => {
  api = await startApiServer();
  ({ net, core } = apis(api.kubeConfig));
  ctl = runController({ kubeConfig: api.kubeConfig, deletionGracePeriodMs: 500 });
}, 180_000);

afterAll(async () => {
  await ctl?.stop();
  await api?.stop();
});

describe('servicecidr why (real kube-apiserver)', () => {
  it('lists every IPAddress holding a ServiceCIDR in deletion, its Service and its taker', async () => {
    await createCIDR(net, 'why-a', ['10.250.0.0/24']);
    await createCIDR(net, 'why-b', ['10.250.0.8/30']);
    await waitReady(net, 'why-a', 90_000);
    await waitReady(net, 'why-b', 90_000);
    // The API server's allocator writes the IPAddresses (managed-by ipallocator.k8s.io).
    await service('web', '10.250.0.10');
    await service('db', '10.250.0.100');

    const live = await servicecidr.explainServiceCIDR(api.kubeConfig, 'why-a');
    expect(live).toMatchObject({ serviceCIDR: 'why-a', deletionTimestamp: null, verdict: 'blocked' });

    await net.deleteServiceCIDR({ name: 'why-a' });
    await waitFor(
      'why-a Terminating',
      async () => ready(await readCIDR(net, 'why-a'))?.reason === 'Terminating',
      90_000,
    );
    const x = await servicecidr.explainServiceCIDR(api.kubeConfig, 'why-a');
    expect(x).not.toBeNull();
    expect(x?.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(x?.finalizers).toEqual([servicecidr.SERVICE_CIDR_PROTECTION_FINALIZER]);
    expect(x?.ready).toEqual({
      status: 'False',
      reason: servicecidr.REASON_TERMINATING,
      message: servicecidr.MESSAGE_TERMINATING,
    });
    expect(x?.verdict).toBe('blocked');
    expect(x?.holders).toEqual([
      expect.objectContaining({ ipAddress: expect.any(String) }),
      expect.objectContaining({ ipAddress: expect.any(String) }),
    ]);
    const byIP = Object.fromEntries((x?.holders ?? []).map((h) => [h.ipAddress, h]));
    expect(byIP['10.250.0.10']).toEqual({
      ipAddress: '10.250.0.10',
      service: { namespace: 'default', name: 'web' },
      takenOverBy: ['why-b'],
      blocking: false,
    });
    expect(byIP['10.250.0.100']).toEqual({
      ipAddress: '10.250.0.100',
      service: { namespace: 'default', name: 'db' },
      takenOverBy: [],
      blocking: true,
    });

    // The CLI prints the same data; text names the blocker and the taker.
    const json = cli(['why-a', '-o', 'json']);
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(x);
    const yaml = cli(['why-a', '-o', 'yaml']);
    expect(yaml.status, yaml.stderr).toBe(0);
    expect(yaml.stdout).toContain('verdict: blocked');
    const text = cli(['why-a']);
    expect(text.status, text.stderr).toBe(0);
    console.log(text.stdout);
    expect(text.stdout).toMatch(/verdict: +blocked/);
    expect(text.stdout).toMatch(/2 IPAddress\(es\) inside, 1 blocking/);
    expect(text.stdout).toMatch(/^ {2}10\.250\.0\.100 +default\/db +- \(blocks\)$/m);
    expect(text.stdout).toMatch(/^ {2}10\.250\.0\.10 +default\/web +why-b$/m);

    // Once the blocking Service goes, the verdict changes and the controller lets it go.
    await core.deleteNamespacedService({ namespace: 'default', name: 'db' });
    await waitFor(
      'db IPAddress gone',
      async () => {
        const now = await servicecidr.explainServiceCIDR(api.kubeConfig, 'why-a');
        return now === null || now.verdict !== 'blocked';
      },
      90_000,
    );
    await waitGone(net, 'why-a', 90_000);
    const gone = cli(['why-a']);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toContain('ServiceCIDR "why-a" not found');
  }, 300_000);

  it('the default ServiceCIDR holds the kubernetes Service; bad input exits 2', async () => {
    const x = await servicecidr.explainServiceCIDR(api.kubeConfig, 'kubernetes');
    expect(x?.verdict).toBe('blocked');
    expect(x?.holders).toContainEqual(
      expect.objectContaining({ service: { namespace: 'default', name: 'kubernetes' }, blocking: true }),
    );
    expect(cli(['kubernetes', '-o', 'xml']).status).toBe(2);
    const noConfig = spawnSync(tsx, [main, 'servicecidr', 'why', 'x', '--kubeconfig', '/nonexistent'], {
      encoding: 'utf8',
    });
    expect(noConfig.status).toBe(2);
    await expect(servicecidr.explainServiceCIDR({} as never, 'x')).rejects.toThrow(/KubeConfig/);
  }, 60_000);
});
