// The controller against a real kube-apiserver + etcd: every rule of upstream's sync.
import { type NetworkingV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
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
let ctl: ReturnType<typeof runController>;
const log = memoryLogger(4);
const GRACE = 1500;

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
  ctl = runController({ kubeConfig: api.kubeConfig, deletionGracePeriodMs: GRACE, logger: log.logger });
});

afterAll(async () => {
  await ctl?.stop();
  await api?.stop();
});

describe('ServiceCIDR controller (real kube-apiserver)', () => {
  it('adds the finalizer and Ready=True by server-side apply as service-cidr-controller', async () => {
    await createCIDR(net, 'create-a', ['10.200.0.0/24']);
    const sc = await waitReady(net, 'create-a');
    const r = ready(sc);
    expect(r).toMatchObject({ status: 'True', reason: '', message: 'Kubernetes Service CIDR is ready' });
    const managers = (sc.metadata?.managedFields ?? []).map((m) => [m.manager, m.operation, m.subresource]);
    expect(managers).toContainEqual(['service-cidr-controller', 'Apply', 'status']);
    expect(sc.metadata?.finalizers).toEqual(['networking.k8s.io/service-cidr-finalizer']);
    // The finalizer patch names its writer (not the HTTP library's user agent, node-fetch).
    const finalizerOwners = (sc.metadata?.managedFields ?? [])
      .filter((m) => JSON.stringify(m.fieldsV1 ?? {}).includes('f:finalizers'))
      .map((m) => [m.manager, m.operation]);
    expect(finalizerOwners).toEqual([['kubenode-servicecidr-controller', 'Update']]);
  });

  it('writes status only when status, reason or message change', async () => {
    await createCIDR(net, 'idempotent', ['10.201.0.0/24']);
    const sc = await waitReady(net, 'idempotent');
    const rv = sc.metadata?.resourceVersion;
    // Touch the object: the update event re-syncs it, but nothing needs writing.
    await net.patchServiceCIDR(
      { name: 'idempotent', body: { metadata: { labels: { touched: 'yes' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await new Promise((r) => setTimeout(r, 1000));
    const after = await readCIDR(net, 'idempotent');
    expect(after?.metadata?.labels?.touched).toBe('yes');
    expect(Number(after?.metadata?.resourceVersion)).toBe(Number(rv) + 1);
    expect(
      log.lines.some(
        (l) => l.includes('ServiceCIDR condition already up to date') && l.includes('idempotent'),
      ),
    ).toBe(true);
  });

  it('takes over the default kubernetes ServiceCIDR (finalizer, its own Ready message)', async () => {
    const sc = await waitReady(net, 'kubernetes');
    expect(sc.spec?.cidrs).toEqual(['10.96.0.0/28']);
    expect(ready(sc)?.message).toBe('Kubernetes Service CIDR is ready');
  });

  it('blocks deletion while an orphan IPAddress exists, unblocks when a parent ServiceCIDR appears', async () => {
    await createCIDR(net, 'child', ['10.210.0.0/24']);
    await waitReady(net, 'child');
    await createIP(net, '10.210.0.10', 'IPv4');
    await net.deleteServiceCIDR({ name: 'child' });
    const blocked = await waitFor('Terminating condition', async () => {
      const sc = await readCIDR(net, 'child');
      const r = ready(sc);
      return r?.status === 'False' && r.reason === 'Terminating' && sc;
    });
    expect(ready(blocked)?.message).toBe(servicecidr.MESSAGE_TERMINATING);
    // Well past the grace period, still held by the finalizer.
    await new Promise((r) => setTimeout(r, GRACE + 1000));
    expect(hasFinalizer(await readCIDR(net, 'child'))).toBe(true);
    await createCIDR(net, 'parent', ['10.210.0.0/16']);
    await waitGone(net, 'child');
    // The IPAddress is now covered by the parent, which is Ready.
    await waitReady(net, 'parent');
    await deleteIP(net, '10.210.0.10');
  });

  it('unblocks deletion when the IPAddress is deleted', async () => {
    await createCIDR(net, 'ipdel', ['10.211.0.0/24']);
    await waitReady(net, 'ipdel');
    await createIP(net, '10.211.0.7', 'IPv4');
    await net.deleteServiceCIDR({ name: 'ipdel' });
    await waitFor('Terminating', async () => ready(await readCIDR(net, 'ipdel'))?.reason === 'Terminating');
    await deleteIP(net, '10.211.0.7');
    await waitGone(net, 'ipdel');
  });

  it('blocks for an IPAddress allocated by the API server to a real Service', async () => {
    const { core } = apis(api.kubeConfig);
    await createCIDR(net, 'svcrange', ['10.212.0.0/24']);
    await waitReady(net, 'svcrange');
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'svc-in-range' },
        spec: { clusterIP: '10.212.0.20', ports: [{ port: 80 }] },
      },
    });
    const ip = await net.readIPAddress({ name: '10.212.0.20' });
    expect(ip.metadata?.labels?.[servicecidr.LABEL_MANAGED_BY]).toBe('ipallocator.k8s.io');
    await net.deleteServiceCIDR({ name: 'svcrange' });
    await waitFor(
      'Terminating',
      async () => ready(await readCIDR(net, 'svcrange'))?.reason === 'Terminating',
    );
    await core.deleteNamespacedService({ namespace: 'default', name: 'svc-in-range' });
    await waitGone(net, 'svcrange');
  });

  it('honours the grace period after the deletion timestamp', async () => {
    await createCIDR(net, 'grace', ['10.213.0.0/24']);
    await waitReady(net, 'grace');
    await net.deleteServiceCIDR({ name: 'grace' });
    const sc = await readCIDR(net, 'grace');
    const deletedAt = new Date(sc?.metadata?.deletionTimestamp ?? 0).getTime();
    expect(deletedAt).toBeGreaterThan(0);
    // Just before the grace period ends the finalizer must still be there.
    await new Promise((r) => setTimeout(r, Math.max(0, deletedAt + GRACE - 300 - Date.now())));
    expect(hasFinalizer(await readCIDR(net, 'grace'))).toBe(true);
    await waitGone(net, 'grace');
    const elapsed = Date.now() - deletedAt;
    expect(elapsed).toBeGreaterThanOrEqual(GRACE);
    expect(elapsed).toBeLessThan(GRACE + 5000);
  });

  it('dual-stack: an orphan of either family blocks, network and IPv4 broadcast addresses do not', async () => {
    await createCIDR(net, 'dual', ['10.214.0.0/24', 'fd00:214::/112']);
    await waitReady(net, 'dual');
    await createIP(net, '10.214.0.0', 'IPv4');
    await createIP(net, '10.214.0.255', 'IPv4');
    await createIP(net, 'fd00:214::', 'IPv6');
    await createIP(net, 'fd00:214::ffff', 'IPv6'); // IPv6 has no broadcast: this one counts
    await net.deleteServiceCIDR({ name: 'dual' });
    await waitFor('Terminating', async () => ready(await readCIDR(net, 'dual'))?.reason === 'Terminating');
    await deleteIP(net, 'fd00:214::ffff');
    await waitGone(net, 'dual');
    for (const ip of ['10.214.0.0', '10.214.0.255', 'fd00:214::']) await deleteIP(net, ip);
  });

  it('overlapping ServiceCIDRs: an IP in another (smaller or equal) ServiceCIDR does not block', async () => {
    await createCIDR(net, 'wide', ['10.215.0.0/24']);
    await createCIDR(net, 'narrow', ['10.215.0.0/25']);
    await waitReady(net, 'wide');
    await waitReady(net, 'narrow');
    await createIP(net, '10.215.0.5', 'IPv4'); // in both
    await createIP(net, '10.215.0.200', 'IPv4'); // only in wide
    await net.deleteServiceCIDR({ name: 'wide' });
    await waitFor('Terminating', async () => ready(await readCIDR(net, 'wide'))?.reason === 'Terminating');
    await deleteIP(net, '10.215.0.200');
    await waitGone(net, 'wide');
    // narrow is now alone with 10.215.0.5: blocked until a twin with the same prefix exists.
    await net.deleteServiceCIDR({ name: 'narrow' });
    await waitFor('Terminating', async () => ready(await readCIDR(net, 'narrow'))?.reason === 'Terminating');
    await createCIDR(net, 'narrow-twin', ['10.215.0.0/25']);
    await waitGone(net, 'narrow');
    await deleteIP(net, '10.215.0.5');
  });

  it('records a KubernetesServiceCIDRError Warning event and retries when the status write fails', async () => {
    const kc = api.kubeConfig;
    const { AdmissionregistrationV1Api } = await import('@kubernetes/client-node');
    const adm = kc.makeApiClient(AdmissionregistrationV1Api);
    await adm.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: 'deny-status' },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: ['networking.k8s.io'],
                apiVersions: ['v1'],
                operations: ['UPDATE', 'CREATE'],
                resources: ['servicecidrs/status'],
              },
            ],
          },
          validations: [{ expression: "object.metadata.name != 'denied'", message: 'status writes denied' }],
        },
      },
    });
    await adm.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: 'deny-status' },
        spec: { policyName: 'deny-status', validationActions: ['Deny'] },
      },
    });
    // The policy takes effect once the API server has loaded it.
    await new Promise((r) => setTimeout(r, 2000));
    await createCIDR(net, 'denied', ['10.216.0.0/24']);
    const { core } = apis(kc);
    const ev = await waitFor('Warning event', async () => {
      const list = await core.listNamespacedEvent({ namespace: 'default' });
      return list.items.find(
        (e) => e.involvedObject?.name === 'denied' && e.reason === 'KubernetesServiceCIDRError',
      );
    });
    expect(ev).toMatchObject({
      type: 'Warning',
      message: 'The ServiceCIDR Status can not be set to Ready=True',
      source: { component: 'service-cidr-controller' },
      reportingComponent: 'service-cidr-controller',
      involvedObject: { kind: 'ServiceCIDR', apiVersion: 'networking.k8s.io/v1' },
    });
    // Every retry fails the same way: one Event, its count patched up, as client-go does.
    const deniedEvents = async () =>
      (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
        (e) => e.involvedObject?.name === 'denied' && e.reason === 'KubernetesServiceCIDRError',
      );
    await waitFor('count 3', async () => ((await deniedEvents())[0]?.count ?? 0) >= 3);
    const all = await deniedEvents();
    expect(all).toHaveLength(1);
    expect(all[0]?.metadata?.name).toBe(ev.metadata?.name);
    expect(all[0]?.metadata?.managedFields?.map((m) => m.manager)).toEqual([
      'kubenode-servicecidr-controller',
    ]);
    // The finalizer went on before the status write failed; retries continue with backoff.
    expect(hasFinalizer(await readCIDR(net, 'denied'))).toBe(true);
    await waitFor('retries', async () => {
      const m = await ctl.controller.registry.getSingleMetricAsString('workqueue_retries_total');
      const n = Number(/workqueue_retries_total\{name="ipaddresses"\} (\d+)/.exec(m)?.[1] ?? 0);
      return n >= 3;
    });
    await adm.deleteValidatingAdmissionPolicyBinding({ name: 'deny-status' });
    await adm.deleteValidatingAdmissionPolicy({ name: 'deny-status' });
    await waitReady(net, 'denied', 60_000);
  });

  it('logs like client-go controllers', () => {
    expect(
      log.lines.some((l) =>
        /^I\d{4} .*servicecidr\] "Starting" controller="service-cidr-controller"/.test(l),
      ),
    ).toBe(true);
    expect(log.lines.some((l) => l.includes('"Deleting ServiceCIDR blocked by IP address"'))).toBe(true);
  });
});
