// Two controller instances share a coordination.k8s.io/v1 Lease: only the leader acts, and the
// other takes over when the leader stops (released lease) or dies (expired lease).
import { CoordinationV1Api, type NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { apis, createCIDR, readCIDR, runController, waitFor, waitReady } from './helpers.js';

let api: ApiServer;
let net: NetworkingV1Api;
let lease: CoordinationV1Api;

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
  lease = api.kubeConfig.makeApiClient(CoordinationV1Api);
});
afterAll(async () => {
  await api?.stop();
});

const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

describe('leader election', () => {
  it('only the leader acts; the other takes over within the lease duration', async () => {
    const a = runController({ kubeConfig: api.kubeConfig, leaderElection: { ...timing, identity: 'a' } });
    const b = runController({ kubeConfig: api.kubeConfig, leaderElection: { ...timing, identity: 'b' } });
    const leader = await waitFor('a leader', async () => {
      if (a.controller.active) return a;
      if (b.controller.active) return b;
      return undefined;
    });
    const other = leader === a ? b : a;
    // Stays single-leader over several renew periods.
    for (let i = 0; i < 6; i++) {
      expect(a.controller.active && b.controller.active).toBe(false);
      await new Promise((r) => setTimeout(r, 250));
    }
    const l = await lease.readNamespacedLease({ namespace: 'kube-system', name: 'service-cidr-controller' });
    expect(l.spec?.holderIdentity).toBe(leader.controller.elector?.identity);
    expect(other.controller.active).toBe(false);
    await createCIDR(net, 'le-1', ['10.220.0.0/24']);
    await waitReady(net, 'le-1');

    // Clean stop releases the lease: the other instance leads well within the lease duration.
    const stoppedAt = Date.now();
    await leader.stop();
    await waitFor('takeover', async () => other.controller.active, timing.leaseDurationMs + 3000, 50);
    expect(Date.now() - stoppedAt).toBeLessThan(timing.leaseDurationMs + 2000);
    await createCIDR(net, 'le-2', ['10.221.0.0/24']);
    await waitReady(net, 'le-2');
    await other.stop();
  });

  it('a crashed leader (no release) is replaced once its lease expires', async () => {
    const a = runController({
      kubeConfig: api.kubeConfig,
      leaderElection: { ...timing, identity: 'crashy', name: 'crash-test', releaseOnCancel: false },
    });
    await waitFor('crashy leads', async () => a.controller.active);
    await a.stop(); // stops renewing, keeps the lease record as if the process died
    const before = await lease.readNamespacedLease({ namespace: 'kube-system', name: 'crash-test' });
    expect(before.spec?.holderIdentity).toBe('crashy');
    const t0 = Date.now();
    const b = runController({
      kubeConfig: api.kubeConfig,
      leaderElection: { ...timing, identity: 'b2', name: 'crash-test' },
    });
    await waitFor('b2 leads', async () => b.controller.active, 15_000, 50);
    // It had to observe the record unchanged for a full lease duration first.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(timing.leaseDurationMs - 100);
    const after = await lease.readNamespacedLease({ namespace: 'kube-system', name: 'crash-test' });
    expect(after.spec?.holderIdentity).toBe('b2');
    expect(after.spec?.leaseTransitions).toBe(1);
    await createCIDR(net, 'le-3', ['10.222.0.0/24']);
    await waitReady(net, 'le-3');
    await b.stop();
    expect((await readCIDR(net, 'le-3'))?.metadata?.finalizers).toContain(
      'networking.k8s.io/service-cidr-finalizer',
    );
  });
});
