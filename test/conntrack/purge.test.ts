// The reconciler's opt-in modes end to end: the pod-IP purge (off by default, as upstream keeps
// TCP flows of a removed endpoint on purpose) and the event-fed index. EndpointSlices in a real
// kube-apiserver, nftables DNAT and real UDP flows in a throwaway namespace, TCP flows made
// with `conntrack -I`; `conntrack -L` checks what is left.
import { CoreV1Api, DiscoveryV1Api, type V1EndpointSlice } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { conntrack } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { TestNetns, teardown } from './netns.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

const NS = 'default';
const VIP = '10.96.0.10';
const EP = ['10.244.0.1', '10.244.0.2'];

let api: ApiServer;
let ns: TestNetns;
let disc: DiscoveryV1Api;

const slice = (ips: string[]): V1EndpointSlice => ({
  metadata: { name: 'dns-1', namespace: NS, labels: { 'kubernetes.io/service-name': 'dns' } },
  addressType: 'IPv4',
  ports: [{ name: 'p', protocol: 'UDP', port: 5353 }],
  endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true, serving: true } })),
});

async function setSlice(ips: string[]): Promise<void> {
  const cur = await disc.readNamespacedEndpointSlice({ name: 'dns-1', namespace: NS });
  cur.endpoints = slice(ips).endpoints;
  await disc.replaceNamespacedEndpointSlice({ name: 'dns-1', namespace: NS, body: cur });
}

/** UDP flows to both endpoints; TCP: a client's to EP[1] (reply source), EP[1]'s own, one to EP[0]. */
function flows(): void {
  ns.exec('conntrack', ['-F']);
  ns.sendUdp([
    [40001, VIP, 53],
    [40002, VIP, 53],
  ]);
  const tcp = (orig: string, reply: string, sport: number, dport: number, rport: number) =>
    ns.exec('conntrack', [
      '-I',
      '-p',
      'tcp',
      '-s',
      orig.split('>')[0] as string,
      '-d',
      orig.split('>')[1] as string,
      '--sport',
      String(sport),
      '--dport',
      String(dport),
      '-r',
      reply.split('>')[0] as string,
      '-q',
      reply.split('>')[1] as string,
      '--reply-port-src',
      String(rport),
      '--reply-port-dst',
      String(sport),
      '--state',
      'ESTABLISHED',
      '-t',
      '600',
      '-u',
      'SEEN_REPLY',
    ]);
  tcp(`10.0.0.1>10.96.0.30`, `${EP[1]}>10.0.0.1`, 5001, 80, 8080);
  tcp(`${EP[1]}>10.96.0.1`, `192.0.2.1>${EP[1]}`, 5002, 443, 6443);
  tcp(`10.0.0.1>10.96.0.31`, `${EP[0]}>10.0.0.1`, 5003, 80, 8080);
}

/** `proto sport` of every IPv4 flow left, sorted. */
function left(): string[] {
  const out = ns.exec('conntrack', ['-L', '-f', 'ipv4']);
  return [...out.matchAll(/^(\S+)\s.*?sport=(\d+)/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitUntil(what: string, f: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Runs a reconciler with `options` while EP[1] leaves the slice; returns what it purged. */
async function removeEndpoint(options: conntrack.ReconcilerOptions): Promise<conntrack.PurgeResult[]> {
  return (await run(options)).purges;
}

/** Runs a reconciler with `options` while EP[1] leaves the slice; returns its passes and purges. */
async function run(
  options: conntrack.ReconcilerOptions,
): Promise<{ purges: conntrack.PurgeResult[]; syncs: conntrack.CleanResult[] }> {
  const handle = await conntrack.Conntrack.open({ netns: ns.path });
  let passes = 0;
  const syncs: conntrack.CleanResult[] = [];
  const purges: conntrack.PurgeResult[] = [];
  const errors: unknown[] = [];
  const r = new conntrack.StaleFlowReconciler(api.kubeConfig, {
    ...options,
    families: ['IPv4'],
    conntrack: handle,
    minSyncPeriodMs: 100,
    onSync: (_, res) => {
      passes++;
      syncs.push(res);
    },
    onPurge: (_, p) => purges.push(p),
    onError: (e) => errors.push(e),
  });
  try {
    await r.start();
    await waitUntil('the first pass', () => passes >= 1);
    await r.flush();
    await setSlice([EP[0] as string]);
    await waitUntil('the pass after the endpoint left', () => passes >= 2);
    await r.flush();
    expect(errors).toEqual([]);
    return { purges, syncs };
  } finally {
    await r.stop();
    handle.close();
  }
}

beforeAll(async () => {
  ns = new TestNetns('kn-ct-purge');
  ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  const rules = EP.map((ip, i) => `ip daddr ${VIP} udp dport 53 udp sport ${40001 + i} dnat to ${ip}:5353`);
  ns.nft(
    `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n`,
  );
  api = await startApiServer();
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  disc = api.kubeConfig.makeApiClient(DiscoveryV1Api);
  await core.createNamespacedService({
    namespace: NS,
    body: {
      metadata: { name: 'dns', namespace: NS },
      spec: { clusterIP: VIP, clusterIPs: [VIP], ports: [{ name: 'p', protocol: 'UDP', port: 53 }] },
    },
  });
  await disc.createNamespacedEndpointSlice({ namespace: NS, body: slice(EP) });
});

afterAll(async () => {
  try {
    await api?.stop();
  } finally {
    teardown(ns, undefined);
  }
});

describe('pod-IP purge', () => {
  it('is off by default: the TCP flows of a removed endpoint stay, as upstream keeps them', async () => {
    await setSlice(EP);
    flows();
    expect(left()).toEqual(['tcp 5001', 'tcp 5002', 'tcp 5003', 'udp 40001', 'udp 40002']);
    const purges = await removeEndpoint({});
    expect(purges).toEqual([]);
    // Only kube-proxy's cleanup ran: the UDP flow to the removed endpoint is gone.
    expect(left()).toEqual(['tcp 5001', 'tcp 5002', 'tcp 5003', 'udp 40001']);
  });

  it('with purgePodIPs, every flow of the removed address goes, TCP too, and nothing else', async () => {
    await setSlice(EP);
    flows();
    const registry = new Registry();
    const purges = await removeEndpoint({ purgePodIPs: true, metrics: conntrack.conntrackMetrics(registry) });
    expect(purges.map((p) => p.ips)).toEqual([[EP[1]]]);
    expect(purges[0]?.result).toMatchObject({ path: 'dumpDelete', failed: 0 });
    expect(left()).toEqual(['tcp 5003', 'udp 40001']);
    // The purge's own counters: one address and its three flows (two TCP, the UDP one: the
    // purge runs before the pass).
    const text = await registry.metrics();
    expect(text).toContain('kubenode_conntrack_reconciler_purged_pod_ips_total{ip_family="IPv4"} 1\n');
    expect(text).toContain('kubenode_conntrack_reconciler_purged_entries_total{ip_family="IPv4"} 3\n');
  });
});

describe('event-fed index', () => {
  it('with eventIndex, the pass after an endpoint leaves takes its stale flow from the index', async () => {
    await setSlice(EP);
    flows();
    const registry = new Registry();
    const { syncs } = await run({ eventIndex: true, metrics: conntrack.conntrackMetrics(registry) });
    // The first pass is full (it builds the index from a dump); the change's pass needs no dump.
    expect(syncs[0]?.path).toBe('full');
    expect(syncs.at(-1)).toMatchObject({ path: 'indexed', stale: 1, deleted: 1, failed: 0 });
    expect(left()).toEqual(['tcp 5001', 'tcp 5002', 'tcp 5003', 'udp 40001']);
    expect(await registry.metrics()).toMatch(
      /^kubenode_conntrack_reconciler_passes_total\{ip_family="IPv4",path="indexed"\} 1$/m,
    );
  });
});
