// Two controller instances share a coordination.k8s.io/v1 Lease: only the leader acts, and the
// other takes over when the leader stops (released lease) or dies (expired lease).
import { CoordinationV1Api, type NetworkingV1Api, V1MicroTime } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import {
  apis,
  createCIDR,
  createIP,
  deleteIP,
  hasFinalizer,
  memoryLogger,
  readCIDR,
  ready,
  runController,
  waitFor,
  waitGone,
  waitReady,
} from './helpers.js';

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
    try {
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
      const l = await lease.readNamespacedLease({
        namespace: 'kube-system',
        name: 'service-cidr-controller',
      });
      expect(l.spec?.holderIdentity).toBe(leader.controller.elector?.identity);
      // Lease writes name their writer, not the HTTP library (node-fetch).
      expect(new Set(l.metadata?.managedFields?.map((m) => m.manager))).toEqual(
        new Set(['kubenode-servicecidr-controller']),
      );
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
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('a crashed leader (no release) is replaced once its lease expires', async () => {
    const a = runController({
      kubeConfig: api.kubeConfig,
      leaderElection: { ...timing, identity: 'crashy', name: 'crash-test', releaseOnCancel: false },
    });
    let b: ReturnType<typeof runController> | undefined;
    try {
      await waitFor('crashy leads', async () => a.controller.active);
      await a.stop(); // stops renewing, keeps the lease record as if the process died
      const before = await lease.readNamespacedLease({ namespace: 'kube-system', name: 'crash-test' });
      expect(before.spec?.holderIdentity).toBe('crashy');
      const t0 = Date.now();
      b = runController({
        kubeConfig: api.kubeConfig,
        leaderElection: { ...timing, identity: 'b2', name: 'crash-test' },
      });
      const b2 = b;
      await waitFor('b2 leads', async () => b2.controller.active, 15_000, 50);
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
    } finally {
      await Promise.all([a.stop(), b?.stop()]);
    }
  });

  it('a new term forgets ServiceCIDRs deleted while following (no orphaned IPAddress)', async () => {
    const GRACE = 300;
    const le = { ...timing, name: 'stale-index' };
    const logA = memoryLogger(0);
    const a = runController({
      kubeConfig: api.kubeConfig,
      deletionGracePeriodMs: GRACE,
      logger: logA.logger,
      leaderElection: { ...le, identity: 'stale-a' },
    });
    let b: ReturnType<typeof runController> | undefined;
    try {
      await waitFor('stale-a leads', async () => a.controller.active);
      // The parent covers the child, which holds an allocated IP.
      await createCIDR(net, 'si-parent', ['10.230.0.0/16']);
      await createCIDR(net, 'si-child', ['10.230.1.0/24']);
      await createIP(net, '10.230.1.10', 'IPv4');
      await waitReady(net, 'si-parent');
      await waitReady(net, 'si-child');
      expect(a.controller.index.has('si-parent')).toBe(true);

      // Hand the lease to b behind a's back: a cannot renew and steps down to follower. a renews
      // every retry period, so the read-modify-write is retried on a conflict.
      await waitFor('lease handed to stale-b', async () => {
        const l = await lease.readNamespacedLease({ namespace: 'kube-system', name: 'stale-index' });
        l.spec = { ...l.spec, holderIdentity: 'stale-b', renewTime: new V1MicroTime(Date.now()) };
        await lease.replaceNamespacedLease({ namespace: 'kube-system', name: 'stale-index', body: l });
        return true;
      });
      await waitFor('stale-a steps down', async () => !a.controller.active, 10_000, 50);
      const bb = runController({
        kubeConfig: api.kubeConfig,
        deletionGracePeriodMs: GRACE,
        leaderElection: { ...le, identity: 'stale-b' },
      });
      b = bb;
      await waitFor('stale-b leads', async () => bb.controller.active, 10_000, 50);

      // While a follows: the parent goes (the child still covers the IP), then the child is
      // deleted and must stay blocked by the IP it alone covers.
      await net.deleteServiceCIDR({ name: 'si-parent' });
      await waitGone(net, 'si-parent');
      await net.deleteServiceCIDR({ name: 'si-child' });
      await waitFor(
        'si-child blocked by b',
        async () => ready(await readCIDR(net, 'si-child'))?.reason === 'Terminating',
      );

      // a leads again (b releases): its new term must not take the vanished parent for cover.
      const mark = logA.lines.length;
      await bb.stop();
      await waitFor('stale-a leads again', async () => a.controller.active, 15_000, 50);
      const verdict = await waitFor('stale-a checks si-child', async () =>
        logA.lines
          .slice(mark)
          .find(
            (x) =>
              x.includes('Deleting ServiceCIDR contained in other') ||
              x.includes('Deleting ServiceCIDR blocked by IP address'),
          ),
      );
      expect(verdict).toContain('blocked by IP address');
      expect(a.controller.index.has('si-parent')).toBe(false);
      await new Promise((r) => setTimeout(r, GRACE * 3));
      const child = await readCIDR(net, 'si-child');
      expect(hasFinalizer(child)).toBe(true);
      expect(ready(child)?.reason).toBe('Terminating');
    } finally {
      await Promise.all([a.stop(), b?.stop()]);
      await deleteIP(net, '10.230.1.10').catch(() => {});
    }
  });
});
