// kubenode against upstream itself: the Go peer (benches/peers/cmd/conntrack-bench, kube-proxy's
// CleanStaleEntries of v1.37.2) and cleanStaleEntries each clean their own namespace filled by the
// same nftables DNAT rules and UDP traffic; both must leave exactly the same flows. The tables
// hold a service whose endpoints all went (v1.37 cleans its VIPs and keeps its node port).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it, vi } from 'vitest';
import { goPeerBinary } from '../../benches/lib/harness.js';
import { conntrack } from '../../ts/index.js';
import { type CtEntry, TestNetns, teardown } from './netns.js';

vi.setConfig({ testTimeout: 300_000 });

const tables = {
  services: [
    {
      name: 'dns',
      protocol: 'UDP' as const,
      clusterIP: '10.96.0.10',
      port: 53,
      nodePort: 30053,
      externalIPs: ['192.0.2.10'],
      loadBalancerIPs: ['198.51.100.10'],
    },
    { name: 'web', protocol: 'UDP' as const, clusterIP: '10.96.0.20', port: 53, nodePort: 30054 },
  ],
  endpoints: {
    // Every endpoint gone but one terminating (not serving).
    dns: [{ ip: '10.244.0.1', port: 5353, serving: false }],
    web: [{ ip: '10.244.0.9', port: 5353, serving: true }],
  },
};

// [source port, destination, port, DNAT target or none]
const FLOWS: [number, string, number, string | null][] = [
  [40000, '10.96.0.10', 53, '10.244.0.1'],
  [40001, '10.96.0.10', 53, '10.244.0.2'],
  [40002, '192.0.2.10', 53, '10.244.0.2'],
  [40003, '198.51.100.10', 53, '10.244.0.1'],
  [40004, '10.0.0.1', 30053, '10.244.0.1'], // dns's node port
  [40005, '10.96.0.10', 53, null], // to the VIP itself
  [40006, '10.96.0.20', 53, '10.244.0.9'], // web, serving
  [40007, '10.96.0.20', 53, '10.244.0.8'], // web, removed endpoint
  [40008, '10.0.0.1', 30054, '10.244.0.8'], // web's node port, removed endpoint
  [40009, '203.0.113.5', 9999, null], // unrelated
];

const namespaces: TestNetns[] = [];
const dir = mkdtempSync(join(tmpdir(), 'kn-ct-peer-'));
afterAll(() => {
  for (const ns of namespaces) teardown(ns, undefined);
  teardown(undefined, dir);
});

function filled(): TestNetns {
  const ns = new TestNetns('kn-ct-peer');
  namespaces.push(ns);
  const rules = FLOWS.flatMap(([sport, dst, dport, to]) =>
    to ? [`ip daddr ${dst} udp dport ${dport} udp sport ${sport} dnat to ${to}:5353`] : [],
  );
  ns.nft(
    `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n`,
  );
  ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  ns.sendUdp(FLOWS.map(([sport, dst, dport]) => [sport, dst, dport]));
  expect(ns.conntrackL('ipv4')).toHaveLength(FLOWS.length);
  return ns;
}

const key = (e: CtEntry) => `${e.origDst}:${e.dport} ${e.sport} -> ${e.replySrc}:${e.replySport}`;
const left = (ns: TestNetns) => ns.conntrackL('ipv4').map(key).sort();

it('a service without serving endpoints: kubenode (v1.37) leaves what kube-proxy v1.37.2 leaves', async () => {
  const peer = goPeerBinary('conntrack-bench');
  const file = join(dir, 'tables.json');
  writeFileSync(file, JSON.stringify(tables));

  const goNs = filled();
  const go = spawnSync('ip', ['netns', 'exec', goNs.name, peer, '-json', '-services', file], {
    encoding: 'utf8',
  });
  expect(go.status, go.stderr).toBe(0);
  const goResult = JSON.parse(go.stdout.trim().split('\n').pop() ?? '{}') as { deleted: number };

  const knNs = filled();
  const ct = await conntrack.Conntrack.open({ netns: knNs.path });
  try {
    const r = await conntrack.cleanStaleEntries(ct, 'IPv4', tables.services, tables.endpoints, {
      metrics: null,
    });
    expect(r.deleted).toBe(goResult.deleted);
  } finally {
    ct.close();
  }

  expect(left(knNs)).toEqual(left(goNs));
  // What v1.37 keeps: dns's node-port flow, web's serving flow, the unrelated one.
  expect(left(knNs).map((k) => Number(k.split(' ')[1]))).toEqual([40004, 40006, 40009]);
});
