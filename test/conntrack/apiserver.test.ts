// StaleFlowReconciler end to end: Services and EndpointSlices live in a real kube-apiserver,
// nftables DNATs the ClusterIPs to endpoint IPs in a throwaway namespace, real UDP makes the
// conntrack entries, and `conntrack -L` checks what each pass removed. The same scenario runs
// through `kubenode conntrack reconcile` as a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  CoreV1Api,
  DiscoveryV1Api,
  type V1Endpoint,
  type V1EndpointSlice,
  type V1Service,
} from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conntrack } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { type CtEntry, TestNetns, teardown } from './netns.js';

const NS = 'default';
// From the fixture's --service-cluster-ip-range 10.96.0.0/28 (10.96.0.1 is `kubernetes`).
const DNS_VIP = '10.96.0.10';
const OTHER_VIP = '10.96.0.11';
const WEB_VIP = '10.96.0.12';
const EP = ['10.244.0.1', '10.244.0.2', '10.244.0.3'];
const OTHER_EP = '10.244.0.9';

const main = join(import.meta.dirname, '..', '..', 'ts', 'cli', 'main.ts');
const tsx = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'tsx');

let api: ApiServer;
let ns: TestNetns;
let core: CoreV1Api;
let disc: DiscoveryV1Api;

function service(name: string, clusterIP: string, protocol: 'UDP' | 'TCP', port: number): V1Service {
  return {
    metadata: { name, namespace: NS },
    spec: { clusterIP, clusterIPs: [clusterIP], ports: [{ name: 'p', protocol, port }] },
  };
}

const ep = (ip: string, serving = true): V1Endpoint => ({
  addresses: [ip],
  conditions: { ready: serving, serving, terminating: !serving },
});

function slice(svc: string, protocol: 'UDP' | 'TCP', port: number, endpoints: V1Endpoint[]): V1EndpointSlice {
  return {
    metadata: { name: `${svc}-1`, namespace: NS, labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    ports: [{ name: 'p', protocol, port }],
    endpoints,
  };
}

/** Read-modify-write of an EndpointSlice (keeps resourceVersion for optimistic concurrency). */
async function updateSlice(name: string, mutate: (s: V1EndpointSlice) => void): Promise<void> {
  const cur = await disc.readNamespacedEndpointSlice({ name, namespace: NS });
  mutate(cur);
  await disc.replaceNamespacedEndpointSlice({ name, namespace: NS, body: cur });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `what` may be a thunk, so the message shows the state at the timeout (e.g. a child's stderr). */
async function waitUntil<T>(
  what: string | (() => string),
  f: () => T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await sleep(50);
  }
}

/** Deletes an EndpointSlice if it exists. */
async function deleteSliceIfAny(name: string): Promise<void> {
  try {
    await disc.deleteNamespacedEndpointSlice({ name, namespace: NS });
  } catch (e) {
    if ((e as { code?: number }).code !== 404) throw e;
  }
}

/** The dns service's slice with every endpoint serving, whatever an earlier test left. */
async function resetDnsSlice(): Promise<void> {
  await deleteSliceIfAny('dns-1');
  await disc.createNamespacedEndpointSlice({
    namespace: NS,
    body: slice(
      'dns',
      'UDP',
      5353,
      EP.map((ip) => ep(ip)),
    ),
  });
}

// The DNS VIP maps source port 4000i to EP[i-1] so each flow's endpoint is known in advance;
// any other source port to the VIP is not DNATed (a flow straight to the VIP: stale).
const flowKey = (e: CtEntry) => `${e.origDst}:${e.dport} ${e.sport} -> ${e.replySrc}`;
const udpFlows = () => ns.conntrackL('ipv4').map(flowKey).sort();

beforeAll(async () => {
  ns = new TestNetns();
  // Unreplied UDP entries live 30 s by default; the scenario needs them longer.
  ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  const rules = [
    ...EP.map((ip, i) => `ip daddr ${DNS_VIP} udp dport 53 udp sport ${40001 + i} dnat to ${ip}:5353`),
    `ip daddr ${OTHER_VIP} udp dport 53 dnat to ${OTHER_EP}:53`,
  ];
  ns.nft(
    `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n`,
  );
  api = await startApiServer();
  core = api.kubeConfig.makeApiClient(CoreV1Api);
  disc = api.kubeConfig.makeApiClient(DiscoveryV1Api);
  await core.createNamespacedService({ namespace: NS, body: service('dns', DNS_VIP, 'UDP', 53) });
  await core.createNamespacedService({ namespace: NS, body: service('other', OTHER_VIP, 'UDP', 53) });
  await disc.createNamespacedEndpointSlice({
    namespace: NS,
    body: slice(
      'dns',
      'UDP',
      5353,
      EP.map((ip) => ep(ip)),
    ),
  });
  await disc.createNamespacedEndpointSlice({
    namespace: NS,
    body: slice('other', 'UDP', 53, [ep(OTHER_EP)]),
  });
});

afterAll(async () => {
  try {
    await api?.stop();
  } finally {
    teardown(ns, undefined);
  }
});

describe('StaleFlowReconciler against a real kube-apiserver', () => {
  it('first pass, gating of unrelated changes, and exactly the stale flows of a changed UDP service', async () => {
    ns.sendUdp([
      [40001, DNS_VIP, 53],
      [40002, DNS_VIP, 53],
      [40003, DNS_VIP, 53],
      [42002, DNS_VIP, 53], // not DNATed: a flow to the VIP itself
      [41000, OTHER_VIP, 53],
      [41001, OTHER_VIP, 53],
    ]);
    expect(udpFlows()).toHaveLength(6);

    const registry = new Registry();
    const metrics = conntrack.conntrackMetrics(registry);
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    const passes: { family: conntrack.IPFamily; result: conntrack.CleanResult }[] = [];
    const errors: unknown[] = [];
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      metrics,
      minSyncPeriodMs: 200,
      onSync: (family, result) => passes.push({ family, result }),
      onError: (e) => errors.push(e),
    });
    const deletedTotal = async () => {
      const m = (await registry.metrics()).match(
        /^kubenode_conntrack_reconciler_deleted_entries_total\{ip_family="IPv4"\} (\d+)$/m,
      );
      return m ? Number(m[1]) : undefined;
    };
    try {
      await r.start();
      // First sync: UDP endpoints exist, so one IPv4 pass; no IPv6 endpoints, so no IPv6 pass.
      await waitUntil('the first pass', () => passes.length >= 1);
      await r.flush();
      expect(passes.map((p) => p.family)).toEqual(['IPv4']);
      expect(passes[0]?.result).toMatchObject({ listed: 6, stale: 1, deleted: 1, failed: 0 });
      // Start-up always runs upstream's full pass, whatever the handle remembers.
      expect(passes[0]?.result).toMatchObject({ path: 'full', fullReason: 'requested' });
      expect(udpFlows()).not.toContain(`${DNS_VIP}:53 42002 -> ${DNS_VIP}`);
      expect(udpFlows()).toHaveLength(5);
      expect(await deletedTotal()).toBe(1);

      // Unrelated changes: a TCP service with its slice (created, then its endpoints changed),
      // and a label on the UDP Service object (not its endpoints). Upstream's
      // ConntrackCleanupRequired is false for all of them.
      await core.createNamespacedService({ namespace: NS, body: service('web', WEB_VIP, 'TCP', 80) });
      await disc.createNamespacedEndpointSlice({
        namespace: NS,
        body: slice('web', 'TCP', 8080, [ep('10.244.0.7')]),
      });
      await updateSlice('web-1', (s) => {
        s.endpoints = [ep('10.244.0.7'), ep('10.244.0.8')];
      });
      const dnsSvc = await core.readNamespacedService({ name: 'dns', namespace: NS });
      dnsSvc.metadata = { ...dnsSvc.metadata, labels: { tier: 'infra' } };
      await core.replaceNamespacedService({ name: 'dns', namespace: NS, body: dnsSvc });
      // Let the watch events arrive and several sync periods pass.
      await sleep(2500);
      await r.flush();
      expect(passes).toHaveLength(1);

      // The UDP service loses EP[1] and EP[2] stops serving: one pass deletes exactly their
      // flows; the other service's flows and EP[0]'s stay.
      await updateSlice('dns-1', (s) => {
        s.endpoints = [ep(EP[0] as string), ep(EP[2] as string, false)];
      });
      await waitUntil('the cleanup pass', () => passes.length >= 2);
      await r.flush();
      expect(passes).toHaveLength(2);
      // Full or targeted (the handle chooses by measured cost): the same flows go.
      expect(passes[1]).toMatchObject({ family: 'IPv4', result: { stale: 2, deleted: 2 } });
      expect(passes[1]?.result.path).not.toBe('unchanged');
      expect(udpFlows()).toEqual(
        [
          `${DNS_VIP}:53 40001 -> ${EP[0]}`,
          `${OTHER_VIP}:53 41000 -> ${OTHER_EP}`,
          `${OTHER_VIP}:53 41001 -> ${OTHER_EP}`,
        ].sort(),
      );
      expect(await deletedTotal()).toBe(3);
      expect(await registry.metrics()).toContain(
        'kubenode_conntrack_reconciler_sync_duration_seconds_count{ip_family="IPv4"} 2',
      );

      // Removing every endpoint still counts (the service had UDP endpoints before), and a
      // service without serving endpoints loses every flow to its VIP, as v1.37 does: the
      // one-way sender would otherwise keep going to the deleted endpoint.
      await disc.deleteNamespacedEndpointSlice({ name: 'dns-1', namespace: NS });
      await waitUntil('the pass after the slice was deleted', () => passes.length >= 3);
      await r.flush();
      expect(passes[2]?.result).toMatchObject({ stale: 1, deleted: 1 });
      expect(udpFlows()).toEqual(
        [`${OTHER_VIP}:53 41000 -> ${OTHER_EP}`, `${OTHER_VIP}:53 41001 -> ${OTHER_EP}`].sort(),
      );
      expect(await deletedTotal()).toBe(4);
    } finally {
      await r.stop();
      handle.close();
    }
    // Including the watches that stop() aborted.
    expect(errors).toEqual([]);
  }, 90_000);

  it('runs a full pass every fullResyncPeriodMs even when nothing changed', async () => {
    await resetDnsSlice();
    const PERIOD = 1500;
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    const passes: conntrack.CleanResult[] = [];
    const at: number[] = [];
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      families: ['IPv4'],
      metrics: null,
      minSyncPeriodMs: 50,
      fullResyncPeriodMs: PERIOD,
      onSync: (_, result) => {
        passes.push(result);
        at.push(performance.now());
      },
    });
    try {
      await r.start();
      await waitUntil('three resync passes', () => passes.length >= 4, 20_000);
      expect(passes.every((p) => p.path === 'full' && p.fullReason === 'requested')).toBe(true);
      // One pass per period, not one every other period: the gaps stay well under two periods.
      const gaps = at.slice(1).map((t, i) => t - (at[i] ?? t));
      expect(Math.max(...gaps.slice(1))).toBeLessThan(1.6 * PERIOD);
    } finally {
      await r.stop();
      handle.close();
    }
  }, 40_000);

  it('syncs a change after a quiet period at once, and still bounds a burst by minSyncPeriod', async () => {
    await resetDnsSlice();
    const MIN = 3000;
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    // When each pass ended (onSync runs at its end).
    const passes: { end: number }[] = [];
    const errors: unknown[] = [];
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      families: ['IPv4'],
      metrics: null,
      minSyncPeriodMs: MIN,
      onSync: () => passes.push({ end: performance.now() }),
      onError: (e) => errors.push(e),
    });
    const setEndpoints = (ips: string[]) =>
      updateSlice('dns-1', (s) => {
        s.endpoints = ips.map((ip) => ep(ip));
      });
    try {
      const started = performance.now();
      await r.start();
      // The first sync does not wait for the period either.
      await waitUntil('the first pass', () => passes.length >= 1);
      expect((passes[0]?.end ?? Number.NaN) - started).toBeLessThan(MIN - 1000);
      // A quiet period longer than MIN, then one change: it syncs without waiting MIN.
      await sleep(MIN + 500);
      const changed = performance.now();
      await setEndpoints([EP[0] as string, EP[1] as string]);
      await waitUntil('the pass after the change', () => passes.length >= 2);
      expect((passes[1]?.end ?? Number.NaN) - changed).toBeLessThan(MIN - 1000);
      // A burst right after that pass: three changes, one pass for all of them, and it starts
      // no earlier than MIN after the previous pass ended.
      const burst = performance.now();
      await setEndpoints([EP[0] as string]);
      await sleep(300);
      await setEndpoints([EP[0] as string, EP[2] as string]);
      await sleep(300);
      await setEndpoints([EP[2] as string]);
      await waitUntil('the pass after the burst', () => passes.length >= 3, 20_000);
      await sleep(MIN + 500);
      await r.flush();
      expect(passes).toHaveLength(3);
      expect((passes[2]?.end ?? Number.NaN) - (passes[1]?.end ?? Number.NaN)).toBeGreaterThanOrEqual(MIN);
      expect((passes[2]?.end ?? Number.NaN) - burst).toBeLessThan(MIN + 2000);
    } finally {
      await r.stop();
      handle.close();
    }
    expect(errors).toEqual([]);
  }, 60_000);
});

describe('StaleFlowReconciler stopped with a sync asked for', () => {
  it('stop() drops the sync that waits for minSyncPeriod, and flush() then returns', async () => {
    await resetDnsSlice();
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    const passes: number[] = [];
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      families: ['IPv4'],
      metrics: null,
      minSyncPeriodMs: 60_000,
      onSync: () => passes.push(performance.now()),
    });
    try {
      await r.start();
      await waitUntil('the first pass', () => passes.length >= 1);
      // A change right after it: its sync waits a minute for the period.
      await updateSlice('dns-1', (sl) => {
        sl.endpoints = [ep(EP[0] as string)];
      });
      await sleep(1000);
    } finally {
      await r.stop();
      handle.close();
    }
    const flushed = await Promise.race([r.flush().then(() => true), sleep(3000).then(() => false)]);
    expect(flushed).toBe(true);
    expect(passes).toHaveLength(1);
  }, 60_000);
});

describe('kubenode conntrack reconcile', () => {
  it('runs passes against the API server in the given namespace and exits 0 on SIGTERM', async () => {
    // Its own starting state, whatever ran before: no conntrack entries, a fresh dns slice.
    ns.exec('conntrack', ['-F']);
    await resetDnsSlice();
    ns.sendUdp([
      [40001, DNS_VIP, 53],
      [40002, DNS_VIP, 53],
      [40003, DNS_VIP, 53],
      [41000, OTHER_VIP, 53],
      [41001, OTHER_VIP, 53],
    ]);
    expect(udpFlows()).toHaveLength(5);

    let stdout = '';
    let stderr = '';
    const child: ChildProcess = spawn(
      tsx,
      [
        main,
        'conntrack',
        'reconcile',
        '--kubeconfig',
        api.kubeconfigFile,
        '--family',
        'ipv4',
        '--min-sync-period',
        '200ms',
        '--netns',
        ns.path,
        '--healthz-bind-address=',
        '--metrics-bind-address=',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (c) => {
      stdout += c;
    });
    child.stderr?.on('data', (c) => {
      stderr += c;
    });
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    const passLines = () => stdout.split('\n').filter((l) => / IPv4: listed \d+/.test(l));
    try {
      // First pass: every endpoint serving, nothing stale.
      await waitUntil(
        () => `the first pass (stderr: ${stderr})`,
        () => passLines().length >= 1,
        60_000,
      );
      expect(passLines()[0]).toMatch(/IPv4: listed 5, stale 0, deleted 0 in \d+\.\d{3}s$/);

      await updateSlice('dns-1', (s) => {
        s.endpoints = [ep(EP[0] as string), ep(EP[1] as string)];
      });
      await waitUntil(
        () => `the cleanup pass (stderr: ${stderr})`,
        () => passLines().length >= 2,
      );
      // Full or targeted: listed depends on the path, the deletions do not.
      expect(passLines()[1]).toMatch(/IPv4: listed \d+, stale 1, deleted 1 /);
      expect(udpFlows()).not.toContain(`${DNS_VIP}:53 40003 -> ${EP[2]}`);
      expect(udpFlows()).toHaveLength(4);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
  }, 120_000);
});

describe('StaleFlowReconciler when things fail', () => {
  it('restarts each failed watch with capped backoff during an outage and recovers after it', async () => {
    await resetDnsSlice();
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    let passes = 0;
    const errors: unknown[] = [];
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      metrics: null,
      minSyncPeriodMs: 100,
      watchBackoff: { initialMs: 250, maxMs: 2000 },
      onSync: () => {
        passes++;
      },
      onError: (e) => {
        errors.push(e);
        // A throwing callback must not stop the restarts nor crash the process.
        throw new Error('onError failed');
      },
    });
    try {
      await r.start();
      await waitUntil('the first pass', () => passes >= 1);
      await r.flush();
      expect(errors).toEqual([]);

      await api.kill();
      await sleep(5000);
      // Per informer: pauses of 250, 500, 1000, 2000 ms → at most 4 attempts each in 5 s.
      // (Restarting both informers on each error doubled the attempts every second.)
      const restarts = r.watchRestarts;
      expect(restarts).toBeGreaterThanOrEqual(2);
      expect(restarts).toBeLessThanOrEqual(10);
      expect(errors.length).toBeGreaterThanOrEqual(2);
      expect(errors.length).toBeLessThanOrEqual(restarts + 4);
      // No runaway: the count stays put for a while.
      await sleep(1000);
      expect(r.watchRestarts).toBeLessThanOrEqual(restarts + 2);

      await api.restart();
      const before = passes;
      const settled = r.watchRestarts;
      // Once the watches are back, an endpoint change triggers a pass again (retried, since
      // a watch resumes up to one backoff pause after the API server is ready).
      const deadline = Date.now() + 30_000;
      let n = 0;
      while (passes === before && Date.now() < deadline) {
        await updateSlice('dns-1', (s) => {
          s.endpoints = [ep(EP[0] as string), ep(EP[1] as string, n++ % 2 === 0)];
        });
        await sleep(1500);
      }
      expect(passes, `no pass after the outage (errors: ${errors.map(String).join('; ')})`).toBeGreaterThan(
        before,
      );
      // Healthy watches are not restarted again.
      const after = r.watchRestarts;
      await sleep(2000);
      expect(r.watchRestarts).toBe(after);
      expect(after).toBeLessThanOrEqual(settled + 4);
    } finally {
      await r.stop();
      handle.close();
    }
  }, 120_000);

  it('with nodeName, failed passes are one Warning Event about the Node whose count grows', async () => {
    await resetDnsSlice();
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    handle.close(); // every pass fails
    const node = `kubenode-fidelity-${process.pid}`;
    let failures = 0;
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      metrics: null,
      minSyncPeriodMs: 50,
      nodeName: node,
      onError: () => {
        failures++;
      },
    });
    const nodeEvents = async () =>
      (await core.listNamespacedEvent({ namespace: 'default' })).items.filter(
        (e) => e.involvedObject?.kind === 'Node' && e.involvedObject?.name === node,
      );
    try {
      await r.start();
      await waitUntil('the failed pass', () => failures >= 1);
      await r.flush();
      // Another failing pass: an endpoint change re-arms the gate.
      await updateSlice('dns-1', (s) => {
        s.endpoints = [ep(EP[0] as string)];
      });
      await waitUntil('a second failed pass', () => failures >= 2);
      await r.flush();
      const list = await nodeEvents();
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({
        type: 'Warning',
        reason: 'ConntrackCleanupFailed',
        count: 2,
        reportingComponent: 'kubenode-conntrack-reconciler',
        reportingInstance: node,
        source: { component: 'kubenode-conntrack-reconciler', host: node },
        involvedObject: { kind: 'Node', name: node, uid: node },
      });
      expect(list[0]?.message).toMatch(/^IPv4 conntrack cleanup failed: /);
      expect(new Set(list[0]?.metadata?.managedFields?.map((m) => m.manager))).toEqual(
        new Set(['kubenode-conntrack-reconciler']),
      );
    } finally {
      await r.stop();
    }
  }, 60_000);

  it('a failing pass with a throwing onError and onSync leaves the process running', async () => {
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    const handle = await conntrack.Conntrack.open({ netns: ns.path });
    handle.close(); // every pass fails
    let calls = 0;
    const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
      conntrack: handle,
      metrics: null,
      minSyncPeriodMs: 50,
      onSync: () => {
        throw new Error('onSync failed');
      },
      onError: () => {
        calls++;
        throw new Error('onError failed');
      },
    });
    try {
      await r.start();
      await waitUntil('the failed pass', () => calls >= 1);
      await r.flush();
      await sleep(200);
      expect(rejections).toEqual([]);
    } finally {
      await r.stop();
      process.off('unhandledRejection', onRejection);
    }
  }, 60_000);
});
