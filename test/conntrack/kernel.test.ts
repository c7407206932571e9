// Real kernel: nftables DNAT rules make UDP services in a throwaway namespace, real UDP traffic
// creates the conntrack entries, and `conntrack -L` checks what the cleanup left.
import { spawnSync } from 'node:child_process';
import { register as globalRegistry, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEntries, injectFaults } from '../../ts/conntrack/testing.js';
import { conntrack, KubenodeRangeError, KubenodeTypeError } from '../../ts/index.js';
import { type CtEntry, TestNetns, teardown } from './netns.js';

const EP = ['10.244.0.1', '10.244.0.2', '10.244.0.3'];
const FRONTENDS: [string, number][] = [
  ['10.96.0.10', 53], // ClusterIP
  ['192.0.2.10', 53], // external IP
  ['198.51.100.10', 53], // load-balancer IP
  ['10.0.0.1', 30053], // NodePort on the node's address
];
const sport = (fi: number, ei: number) => 40000 + fi * 10 + ei;

const dns = (endpoints: conntrack.EndpointEntry[]) => ({
  services: [
    {
      name: 'kube-system/dns:dns',
      protocol: 'UDP' as const,
      clusterIP: '10.96.0.10',
      port: 53,
      nodePort: 30053,
      externalIPs: ['192.0.2.10', '2001:db8::99'],
      loadBalancerIPs: ['198.51.100.10'],
    },
    { name: 'default/other:udp', protocol: 'UDP' as const, clusterIP: '10.96.0.20', port: 53 },
    { name: 'default/web:http', protocol: 'TCP' as const, clusterIP: '10.96.0.30', port: 53 },
  ],
  endpoints: {
    'kube-system/dns:dns': endpoints,
    'default/other:udp': [{ ip: '10.244.0.9', port: 53, serving: true }],
    'default/web:http': [{ ip: '10.244.0.7', port: 53, serving: true }],
  },
});

const key = (e: CtEntry) => `${e.origDst}:${e.dport} ${e.sport} -> ${e.replySrc}:${e.replySport}`;

describe('cleanStaleEntries on the real kernel (IPv4 and IPv6)', () => {
  let ns: TestNetns;
  let ct: conntrack.Conntrack;

  beforeAll(async () => {
    ns = new TestNetns();
    const rules: string[] = [];
    FRONTENDS.forEach(([ip, port], fi) => {
      EP.forEach((ep, ei) => {
        rules.push(`ip daddr ${ip} udp dport ${port} udp sport ${sport(fi, ei)} dnat to ${ep}:5353`);
      });
    });
    rules.push('ip daddr 10.96.0.20 udp dport 53 dnat to 10.244.0.9:53');
    const rules6 = [
      'ip6 daddr fd00:96::a udp dport 53 udp sport 50000 dnat to [fd00:244::1]:5353',
      'ip6 daddr fd00:96::a udp dport 53 udp sport 50001 dnat to [fd00:244::2]:5353',
      'ip6 daddr 2001:db8::10 udp dport 53 udp sport 50002 dnat to [fd00:244::1]:5353',
      'ip6 daddr 2001:db8::10 udp dport 53 udp sport 50003 dnat to [fd00:244::2]:5353',
    ];
    const table = (fam: string, name: string, body: string[]) =>
      `table ${fam} ${name} {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${body.join('\n  ')}\n }\n}\n`;
    ns.nft(table('ip', 'kn', rules) + table('ip6', 'kn6', rules6));
    ct = await conntrack.Conntrack.open({ netns: ns.path });
  });

  afterAll(() => {
    ct?.close();
    teardown(ns, undefined);
  });

  function sendAll(): void {
    const sends: [number, string, number][] = [];
    FRONTENDS.forEach(([ip, port], fi) => {
      EP.forEach((_, ei) => {
        sends.push([sport(fi, ei), ip, port]);
      });
    });
    sends.push([41000, '10.96.0.20', 53], [41001, '10.96.0.20', 53]); // other service, healthy
    sends.push([42000, '203.0.113.5', 9999]); // unrelated
    sends.push([42001, '10.96.0.10', 54]); // the VIP, another port: no service
    sends.push([42002, '10.96.0.10', 53]); // the VIP, no DNAT rule for this source: stale
    sends.push([42003, '10.96.0.30', 53]); // a TCP service's VIP: UDP flows there are not its own
    ns.sendUdp(sends);
  }

  it('sees the DNATed flows the traffic created', async () => {
    sendAll();
    const l = ns.conntrackL('ipv4');
    expect(l).toHaveLength(18);
    const mine = await ct.listEntries('IPv4', { protocol: 'udp' });
    expect(mine).toHaveLength(18);
    const f = mine.find((x) => x.forward.srcPort === sport(0, 1));
    expect(f).toMatchObject({
      protocol: 17,
      forward: { dstIP: '10.96.0.10', dstPort: 53 },
      reverse: { srcIP: '10.244.0.2', srcPort: 5353, dstIP: '10.0.0.1' },
      zone: 0,
    });
    expect(f?.id).toBeTypeOf('number');
    const vip = await ct.listEntries('IPv4', { protocol: 'udp', dstIP: '10.96.0.10', dstPort: 53 });
    expect(vip).toHaveLength(4);
  });

  it('v1.36 skips a service with no serving endpoints', async () => {
    const { services, endpoints } = dns(EP.map((ip) => ({ ip, port: 5353, serving: false })));
    const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, {
      metrics: null,
      kubernetesVersion: 'v1.36',
    });
    expect(r).toMatchObject({ listed: 18, stale: 0, deleted: 0, partial: false });
    expect(ns.conntrackL('ipv4')).toHaveLength(18);
  });

  it('records metrics only where told: nothing lands in the global registry by default', async () => {
    const { services, endpoints } = dns(EP.map((ip) => ({ ip, port: 5353, serving: false })));
    const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, {
      kubernetesVersion: 'v1.36.3',
    });
    // The same tables as the handle's last pass: nothing can have become stale.
    expect(r).toMatchObject({ path: 'unchanged', listed: 0, stale: 0, partial: false });
    expect(globalRegistry.getSingleMetric(conntrack.SYNC_DURATION)).toBeUndefined();
    expect(globalRegistry.getSingleMetric(conntrack.DELETED_TOTAL)).toBeUndefined();
    expect(() => conntrack.conntrackMetrics(undefined as never)).toThrow(KubenodeTypeError);
  });

  it('dry run selects without deleting', async () => {
    const { services, endpoints } = dns([
      { ip: EP[0] as string, port: 5353, serving: true },
      { ip: EP[2] as string, port: 5353, serving: false },
    ]);
    const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, {
      dryRun: true,
      metrics: null,
    });
    expect(r).toMatchObject({ stale: 9, deleted: 0 });
    expect(ns.conntrackL('ipv4')).toHaveLength(18);
  });

  it('deletes exactly the stale flows (removed and non-serving endpoints, every frontend)', async () => {
    const before = ns.conntrackL('ipv4');
    const { services, endpoints } = dns([
      { ip: EP[0] as string, port: 5353, serving: true },
      { ip: EP[2] as string, port: 5353, serving: false }, // terminating: not serving
    ]);
    const registry = new Registry();
    const metrics = conntrack.conntrackMetrics(registry);
    const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics, full: true });
    expect(r).toMatchObject({ listed: 18, stale: 9, deleted: 9, failed: 0, partial: false, attempts: 1 });
    expect(r).toMatchObject({ path: 'full', fullReason: 'requested' });
    const after = ns.conntrackL('ipv4');
    const gone = before.filter((b) => !after.some((a) => key(a) === key(b)));
    const expectGone = [
      ...FRONTENDS.flatMap(([ip, port], fi) => [
        `${ip}:${port} ${sport(fi, 1)} -> 10.244.0.2:5353`,
        `${ip}:${port} ${sport(fi, 2)} -> 10.244.0.3:5353`,
      ]),
      '10.96.0.10:53 42002 -> 10.96.0.10:53',
    ];
    expect(gone.map(key).sort()).toEqual(expectGone.sort());
    expect(after).toHaveLength(9);
    const text = await registry.metrics();
    expect(text).toContain('kubenode_conntrack_reconciler_deleted_entries_total{ip_family="IPv4"} 9');
    expect(text).toContain('kubenode_conntrack_reconciler_sync_duration_seconds_count{ip_family="IPv4"} 1');
    expect(text).toContain(
      'kubenode_conntrack_reconciler_sync_duration_seconds_bucket{le="16.384",ip_family="IPv4"} 1',
    );
    expect(text).toContain(
      '# HELP kubenode_conntrack_reconciler_sync_duration_seconds [ALPHA] ReconcileConntrackFlowsLatency latency in seconds',
    );

    // A second pass finds nothing; the counter series stays, +0.
    const again = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics });
    expect(again).toMatchObject({ path: 'unchanged', stale: 0, deleted: 0 });
    expect(await registry.metrics()).toContain('sync_duration_seconds_count{ip_family="IPv4"} 2');
  });

  it('IPv6: ClusterIP and LB flows to a removed endpoint go, others stay', async () => {
    ns.sendUdp([
      [50000, 'fd00:96::a', 53],
      [50001, 'fd00:96::a', 53],
      [50002, '2001:db8::10', 53],
      [50003, '2001:db8::10', 53],
    ]);
    expect(ns.conntrackL('ipv6')).toHaveLength(4);
    const services: conntrack.ServiceEntry[] = [
      {
        name: 'default/dns6',
        protocol: 'UDP',
        clusterIP: 'fd00:96::a',
        port: 53,
        loadBalancerIPs: ['2001:db8::10', '198.51.100.10'],
      },
    ];
    const endpoints = { 'default/dns6': [{ ip: 'fd00:244::1', port: 5353, serving: true }] };
    const r = await conntrack.cleanStaleEntries(ct, 'IPv6', services, endpoints, { metrics: null });
    expect(r).toMatchObject({ listed: 4, stale: 2, deleted: 2 });
    const left = ns.conntrackL('ipv6');
    expect(left.map((e) => e.replySrc)).toEqual(['fd00:244::1', 'fd00:244::1']);
    // The IPv4 table is untouched by an IPv6 pass.
    expect(ns.conntrackL('ipv4')).toHaveLength(9);
  });

  it('an interrupted dump is retried, then used partially, and still observed', async () => {
    const registry = new Registry();
    const metrics = conntrack.conntrackMetrics(registry);
    injectFaults(ct, { dumpIntr: 10 });
    const { services, endpoints } = dns([{ ip: '10.244.0.1', port: 5353, serving: true }]);
    const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics, full: true });
    injectFaults(ct, {});
    expect(r).toMatchObject({ partial: true, attempts: 5, listed: 9 });
    // A partial pass is no base for a diff: the next pass is full.
    const next = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics: null });
    expect(next).toMatchObject({ path: 'full', fullReason: 'previousIncomplete', partial: false });
    expect(await registry.metrics()).toContain('sync_duration_seconds_count{ip_family="IPv4"} 1');
    const l = await ct.list('IPv4', {});
    expect(l.partial).toBe(false);
  });

  it('deleteEntries: ENOENT counts as deleted; a bad flow fails alone', async () => {
    const flows = await ct.listEntries('IPv4', { protocol: 'udp', dstIP: '10.96.0.20', dstPort: 53 });
    expect(flows).toHaveLength(2);
    expect(await ct.deleteEntries('IPv4', flows)).toBe(2);
    expect(await ct.delete('IPv4', flows)).toMatchObject({ deleted: 2, notFound: 2, failed: 0 });
    await expect(ct.deleteEntries('IPv6', flows)).rejects.toBeInstanceOf(KubenodeTypeError);
  });

  it('rejects bad tables with typed errors before any netlink work', async () => {
    const base = dns([{ ip: '10.244.0.1', port: 5353, serving: true }]);
    const bad = (patch: object, eps = base.endpoints) =>
      conntrack.cleanStaleEntries(
        ct,
        'IPv4',
        [{ ...base.services[0], ...patch } as conntrack.ServiceEntry],
        eps,
        {
          metrics: null,
        },
      );
    await expect(bad({ clusterIP: '10.96.0.300' })).rejects.toThrow(/invalid IP address "10.96.0.300"/);
    await expect(bad({ clusterIP: 'fd00::10' })).rejects.toBeInstanceOf(conntrack.ConntrackFamilyError);
    await expect(bad({ port: 70000 })).rejects.toBeInstanceOf(KubenodeRangeError);
    await expect(bad({ nodePort: 1.5 })).rejects.toBeInstanceOf(KubenodeTypeError);
    await expect(bad({ protocol: 'udp' })).rejects.toThrow(/protocol must be TCP, UDP or SCTP/);
    await expect(bad({ externalIPs: ['nope'] })).rejects.toThrow(/externalIPs\[0\]: invalid IP address/);
    await expect(
      bad({}, { 'kube-system/dns:dns': [{ ip: 'fd00::1', port: 53, serving: true }] } as never),
    ).rejects.toBeInstanceOf(conntrack.ConntrackFamilyError);
    await expect(bad({}, { 'kube-system/dns:dns': [{ ip: '10.0.0.1', port: 53 }] } as never)).rejects.toThrow(
      /serving must be a boolean/,
    );
    await expect(conntrack.cleanStaleEntries(ct, 'ipv4' as never, [], {})).rejects.toThrow(/family must be/);
    for (const [k, v] of [
      ['full', 'yes'],
      ['dryRun', 1],
    ] as const) {
      const r = conntrack.cleanStaleEntries(ct, 'IPv4', [], {}, { [k]: v } as never);
      await expect(r).rejects.toBeInstanceOf(KubenodeTypeError);
      await expect(r).rejects.toThrow(`options.${k} must be a boolean, got ${JSON.stringify(v)}`);
    }
    const release = (kubernetesVersion: unknown) =>
      conntrack.cleanStaleEntries(ct, 'IPv4', [], {}, { kubernetesVersion } as never);
    await expect(release('v1.35')).rejects.toMatchObject({
      code: 'ERR_KUBENODE_UNSUPPORTED',
      kind: 'kubernetes-version',
      message: 'Kubernetes version "v1.35" is not supported: kubenode has the tables of v1.36 to v1.37',
    });
    await expect(release('latest')).rejects.toMatchObject({
      code: 'ERR_KUBENODE_PARSE',
      kind: 'kubernetes-version',
    });
    await expect(release(137)).rejects.toBeInstanceOf(KubenodeTypeError);
    expect(conntrack.conntrackKubernetesVersion()).toBe('v1.37');
    expect(conntrack.conntrackKubernetesVersion('1.36.3')).toBe('v1.36');
  });

  it('a closed handle fails clearly', async () => {
    const c = await conntrack.Conntrack.open({ netns: ns.path });
    c.close();
    await expect(c.listEntries('IPv4')).rejects.toThrow(/closed/);
    await expect(c.listEntries('IPv4')).rejects.toBeInstanceOf(conntrack.ConntrackClosedError);
  });

  it('a TCP service with other-family addresses does not fail the UDP cleanup', async () => {
    const { services, endpoints } = dns(EP.map((ip) => ({ ip, port: 5353, serving: true })));
    const r = await conntrack.cleanStaleEntries(
      ct,
      'IPv4',
      [...services, { name: 'default/web6:http', protocol: 'TCP', clusterIP: 'fd00::30', port: 80 }],
      { ...endpoints, 'default/web6:http': [{ ip: 'fd00:244::7', port: 8080, serving: true }] },
      { metrics: null, dryRun: true },
    );
    expect(r.failed).toBe(0);
  });

  it('close() and injectFaults() never wait for a running pass', async () => {
    const c = await conntrack.Conntrack.open({ netns: ns.path });
    const flows: conntrack.Flow[] = Array.from({ length: 40_000 }, (_, k) => ({
      protocol: 17,
      forward: { srcIP: `10.1.${k >> 8}.${k & 255}`, dstIP: '10.96.0.99', srcPort: 7000, dstPort: 53 },
      reverse: { srcIP: '10.244.9.9', dstIP: `10.1.${k >> 8}.${k & 255}`, srcPort: 53, dstPort: 7000 },
      zone: 0,
      mark: 0,
      status: 0,
      timeout: 120,
    }));
    try {
      expect((await createEntries(c, 'IPv4', flows)).created).toBe(flows.length);
      const { services, endpoints } = dns(EP.map((ip) => ({ ip, port: 5353, serving: true })));
      const pass = conntrack.cleanStaleEntries(c, 'IPv4', services, endpoints, {
        metrics: null,
        dryRun: true,
      });
      // Wait until the pass holds the socket (it is dumping the table).
      const deadline = Date.now() + 10_000;
      while (c.progress().phase === 'idle' && Date.now() < deadline) await new Promise(setImmediate);
      expect(c.progress().phase).not.toBe('idle');
      // Blocking here would freeze the event loop for the rest of the dump.
      let busy: unknown;
      try {
        injectFaults(c, { recvEintr: 1 });
      } catch (e) {
        busy = e;
      }
      expect(busy).toMatchObject({ code: 'ERR_KUBENODE_CONFLICT', message: expect.stringMatching(/busy/) });
      c.close();
      // close() returned while the pass still runs; the pass finishes, then the socket is gone.
      expect(c.progress().phase).not.toBe('idle');
      expect((await pass).listed).toBeGreaterThanOrEqual(flows.length);
      await expect(c.listEntries('IPv4')).rejects.toBeInstanceOf(conntrack.ConntrackClosedError);
    } finally {
      c.close();
      await ct.deleteEntries('IPv4', await ct.listEntries('IPv4', { protocol: 'udp', dstIP: '10.96.0.99' }));
    }
  }, 60_000);
});

describe('a service without endpoints and a deleted service, on the real kernel', () => {
  // dns: VIP, external IP and node port DNATed to two endpoints (by source port); gone: a VIP
  // DNATed to one. Port 30053 on another host is foreign traffic, not the node port's.
  const DNS = ['10.244.0.1', '10.244.0.2'];
  const sends: [number, string, number][] = [
    [44000, '10.96.0.10', 53],
    [44001, '10.96.0.10', 53],
    [44010, '192.0.2.10', 53],
    [44011, '192.0.2.10', 53],
    [44020, '10.0.0.1', 30053],
    [44021, '10.0.0.1', 30053],
    [44030, '10.96.0.30', 53],
    [44040, '203.0.113.5', 30053],
  ];
  const dnat = (sport: number) => {
    const to = sport === 44030 ? '10.244.0.7' : DNS[sport % 2];
    return sport === 44040 ? null : `udp sport ${sport} dnat to ${to}:5353`;
  };
  const before = {
    services: [
      {
        name: 'default/dns:dns',
        protocol: 'UDP' as const,
        clusterIP: '10.96.0.10',
        port: 53,
        nodePort: 30053,
        externalIPs: ['192.0.2.10'],
      },
      { name: 'default/gone:dns', protocol: 'UDP' as const, clusterIP: '10.96.0.30', port: 53 },
    ],
    endpoints: {
      'default/dns:dns': DNS.map((ip) => ({ ip, port: 5353, serving: true })),
      'default/gone:dns': [{ ip: '10.244.0.7', port: 5353, serving: true }],
    },
  };
  // dns lost its endpoints (one terminating, not serving); gone was deleted.
  const after = {
    services: [before.services[0] as conntrack.ServiceEntry],
    endpoints: { 'default/dns:dns': [{ ip: DNS[0] as string, port: 5353, serving: false }] },
  };
  let ns: TestNetns | undefined;

  beforeAll(() => {
    ns = new TestNetns();
    const rules = sends.flatMap(([sport, ip, port]) => {
      const r = dnat(sport);
      return r ? [`ip daddr ${ip} udp dport ${port} ${r}`] : [];
    });
    ns.nft(
      `table ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n`,
    );
    ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  });
  afterAll(() => teardown(ns, undefined));

  it.each([
    ['v1.37', 'targeted', [44020, 44021, 44040]],
    ['v1.37', 'full', [44020, 44021, 44040]],
    ['v1.36', 'full', sends.map((x) => x[0])],
  ] as const)(
    '%s, %s path: VIP and external IP flows go, node-port and foreign flows stay',
    async (k8s, path, kept) => {
      const n = ns as TestNetns;
      const ct = await conntrack.Conntrack.open({ netns: n.path });
      try {
        const opts = { metrics: null, kubernetesVersion: k8s };
        n.sendUdp(sends.slice(0, -1));
        const first = await conntrack.cleanStaleEntries(ct, 'IPv4', before.services, before.endpoints, opts);
        expect(first).toMatchObject({ path: 'full', fullReason: 'first', deleted: 0 });
        // Sent after the first pass: while dns has endpoints, its node port takes flows to that
        // port on any address (upstream's rule), foreign ones included.
        n.sendUdp(sends.slice(-1));
        expect(n.conntrackL('ipv4')).toHaveLength(sends.length);
        injectFaults(ct, { preferTargeted: true });
        const r = await conntrack.cleanStaleEntries(ct, 'IPv4', after.services, after.endpoints, {
          ...opts,
          full: path === 'full',
        });
        expect(r).toMatchObject({ path, failed: 0, deleted: sends.length - kept.length });
        expect(
          n
            .conntrackL('ipv4')
            .map((e) => e.sport)
            .sort(),
        ).toEqual([...kept].sort());
      } finally {
        ct.close();
        n.exec('conntrack', ['-F']);
      }
    },
  );
});

describe('conntrack errors outside the happy path', () => {
  it('no CAP_NET_ADMIN gives a permission error', () => {
    const bin = new URL('../../prebuilds/linux-x64/kubenode.glibc.node', import.meta.url).pathname;
    const script = `const b = require(${JSON.stringify(bin)});
      b.Conntrack.open().then((h) => h.value.list('IPv4')).then((o) => console.log(JSON.stringify(o.error ?? null)));`;
    const r = spawnSync(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', process.execPath, '-e', script],
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    const err = JSON.parse(r.stdout) as { code: string; message: string };
    expect(err.code).toBe('ERR_KUBENODE_PERMISSION');
    expect(err.message).toMatch(/CAP_NET_ADMIN/);
  });

  it('a missing namespace is a clear error', async () => {
    await expect(conntrack.Conntrack.open({ netns: '/var/run/netns/does-not-exist-kn' })).rejects.toThrow(
      /does-not-exist-kn/,
    );
  });
});
