// The general flow filter on the real kernel: real UDP flows through nftables DNAT in a
// throwaway namespace, with marks, labels and zones set by nftables rules, TCP flows made with
// `conntrack -I`; `conntrack -L` is the reference for what delete and flush leave.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conntrack, KubenodeRangeError, KubenodeTypeError } from '../../ts/index.js';
import { TestNetns, teardown } from './netns.js';

const VIP = '10.96.0.10';
// Source port → endpoint; 40002 is marked, 40003 labelled (bit 5), 40004 in zone 7.
const DNAT: [number, string][] = [
  [40001, '10.244.0.1'],
  [40002, '10.244.0.2'],
  [40003, '10.244.1.3'],
  [40004, '10.244.1.4'],
];
const TCP = [
  // A client's connection to a service, DNATed to 10.244.0.1.
  '-s 10.0.0.1 -d 10.96.0.30 --sport 5001 --dport 80 -r 10.244.0.1 -q 10.0.0.1 --reply-port-src 8080 --reply-port-dst 5001',
  // One the pod 10.244.0.2 opened itself.
  '-s 10.244.0.2 -d 10.96.0.1 --sport 5002 --dport 443 -r 192.0.2.1 -q 10.244.0.2 --reply-port-src 6443 --reply-port-dst 5002',
];

let ns: TestNetns;
let ct: conntrack.Conntrack;

/** Recreates the whole table: four DNATed UDP flows, one IPv6 UDP flow, two TCP flows. */
function fill(): void {
  ns.exec('conntrack', ['-F']);
  ns.exec('conntrack', ['-F', '-f', 'ipv6']);
  ns.sendUdp([...DNAT.map(([p]): [number, string, number] => [p, VIP, 53]), [50001, 'fd00:96::a', 53]]);
  for (const t of TCP) {
    ns.exec('conntrack', [
      '-I',
      '-p',
      'tcp',
      ...t.split(' '),
      '--state',
      'ESTABLISHED',
      '-t',
      '600',
      '-u',
      'SEEN_REPLY',
    ]);
  }
}

/** Original source ports of what `conntrack -L` shows for `family`. */
function reference(family: 'ipv4' | 'ipv6' = 'ipv4'): number[] {
  const out = ns.exec('conntrack', ['-L', '-f', family]);
  return [...out.matchAll(/^\S+\s+\d+\s+\d+\s.*?sport=(\d+)/gm)]
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
const sports = (flows: conntrack.Flow[]) => flows.map((f) => f.forward.srcPort).sort((a, b) => a - b);

beforeAll(async () => {
  ns = new TestNetns('kn-ct-filter');
  ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  const dnat = DNAT.map(([p, ip]) => `ip daddr ${VIP} udp dport 53 udp sport ${p} dnat to ${ip}:5353`);
  ns.nft(`table ip6 kn6 {
 chain nat {
  type nat hook output priority -100; policy accept;
  ip6 daddr fd00:96::a udp dport 53 udp sport 50001 dnat to [fd00:244::5]:5353
 }
}
table ip kn {
 chain raw {
  type filter hook output priority -300; policy accept;
  udp sport 40004 ct zone set 7
 }
 chain nat {
  type nat hook output priority -100; policy accept;
  ${dnat.join('\n  ')}
 }
 chain tag {
  type filter hook output priority 0; policy accept;
  udp sport 40002 ct mark set 0x1234
  udp sport 40003 ct label set 5
 }
}
`);
  ct = await conntrack.Conntrack.open({ netns: ns.path });
});

afterAll(() => {
  ct?.close();
  teardown(ns, undefined);
});

describe('list by filter', () => {
  it('each field selects exactly its flows', async () => {
    fill();
    expect(reference()).toEqual([5001, 5002, 40001, 40002, 40003, 40004]);
    const cases: [conntrack.ListOptions, number[]][] = [
      [{}, [5001, 5002, 40001, 40002, 40003, 40004]],
      [{ protocol: 'tcp' }, [5001, 5002]],
      [{ protocol: 17 }, [40001, 40002, 40003, 40004]],
      [{ orig: { src: '10.244.0.2' } }, [5002]],
      [{ orig: { src: '10.244.0.0/16' } }, [5002]],
      [{ orig: { dst: '10.96.0.0/24' } }, [5001, 5002, 40001, 40002, 40003, 40004]],
      [{ orig: { dst: '10.96.0.30' } }, [5001]],
      [{ reply: { src: '10.244.1.0/24' } }, [40003, 40004]],
      [{ reply: { src: '10.244.0.1' } }, [5001, 40001]],
      [{ reply: { dst: '10.244.0.2/32' } }, [5002]],
      [{ protocol: 'udp', orig: { srcPort: 40003 } }, [40003]],
      [{ protocol: 'tcp', orig: { dstPort: 443 } }, [5002]],
      [{ protocol: 'tcp', reply: { srcPort: 8080 } }, [5001]],
      [{ protocol: 'udp', reply: { dstPort: 40001 } }, [40001]],
      [{ zone: 7 }, [40004]],
      [{ mark: { value: 0x1234 } }, [40002]],
      [{ mark: { value: 0x1200, mask: 0xff00 } }, [40002]],
      // Without a mask every bit counts: exactly label 5.
      [{ labels: { value: 1n << 5n } }, [40003]],
      [{ labels: { value: 1n << 6n, mask: 1n << 6n } }, []],
      [{ labels: { value: 1n << 5n, mask: 1n << 5n } }, [40003]],
      // The older spelling still works, now without needing a protocol.
      [{ protocol: 'udp', dstIP: VIP, dstPort: 53 }, [40001, 40002, 40003, 40004]],
      [{ dstIP: '10.96.0.30' }, [5001]],
    ];
    for (const [filter, want] of cases) {
      expect(sports((await ct.list('IPv4', filter)).flows), show(filter)).toEqual(want);
    }
    const labelled = (await ct.list('IPv4', { protocol: 'udp', orig: { srcPort: 40003 } })).flows[0];
    expect(labelled?.labels).toBe(1n << 5n);
    expect(labelled?.zone).toBe(0);
    const zoned = (await ct.list('IPv4', { zone: 7 })).flows[0];
    expect([zoned?.zone, zoned?.mark, zoned?.labels]).toEqual([7, 0, undefined]);
    expect(sports((await ct.list('IPv6', { orig: { dst: 'fd00:96::/64' } })).flows)).toEqual([50001]);
  });

  it('bad filters are typed errors and touch nothing', async () => {
    const bad: [unknown, unknown, RegExp][] = [
      [
        { orig: { src: '10.0.0.0/33' } },
        KubenodeRangeError,
        /orig\.src: prefix length of 10\.0\.0\.0\/33 must be in \[0, 32\]/,
      ],
      [
        { orig: { src: '10.0.0.x' } },
        KubenodeTypeError,
        /orig\.src: invalid IP address or CIDR "10\.0\.0\.x"/,
      ],
      [
        { reply: { dst: 'fd00::/64' } },
        conntrack.ConntrackFamilyError,
        /reply destination filter: fd00:: is not an IPv4 address/,
      ],
      [{ orig: { dstPort: 53 } }, KubenodeTypeError, /a port filter needs a protocol filter as well/],
      [{ protocol: 1, orig: { dstPort: 53 } }, KubenodeTypeError, /needs a protocol with ports/],
      [
        { mark: { value: 0x100, mask: 0xff } },
        KubenodeTypeError,
        /mark value 0x100 has bits outside its mask 0xff/,
      ],
      [
        { labels: { value: -1n } },
        KubenodeTypeError,
        /labels\.value must be a non-negative integer below 2\^128/,
      ],
      [{ labels: { value: 1 } }, KubenodeTypeError, /labels\.value must be a bigint, got/],
      [{ zone: 65536 }, KubenodeRangeError, /zone/],
      [{ orig: { source: '10.0.0.1' } }, KubenodeTypeError, /unknown field "source"/],
      [{ dstIP: VIP, orig: { dst: VIP } }, KubenodeTypeError, /give dstIP or orig\.dst, not both/],
    ];
    for (const [filter, type, msg] of bad) {
      const e = await ct.list('IPv4', filter as conntrack.ListOptions).catch((x: unknown) => x);
      expect(e, show(filter)).toBeInstanceOf(type);
      expect((e as Error).message).toMatch(msg);
      const d = await ct.deleteMatching('IPv4', filter as conntrack.FlowFilter).catch((x: unknown) => x);
      expect(d).toBeInstanceOf(type);
      const f = await ct.flush('IPv4', filter as conntrack.FlowFilter).catch((x: unknown) => x);
      expect(f).toBeInstanceOf(type);
    }
    expect(reference()).toEqual([5001, 5002, 40001, 40002, 40003, 40004]);
  });
});

describe('delete and flush by filter', () => {
  it('deleteMatching removes exactly the matches', async () => {
    fill();
    const r = await ct.deleteMatching('IPv4', { reply: { src: '10.244.1.0/24' } });
    expect(r).toMatchObject({ path: 'dumpDelete', matched: 2, deleted: 2, failed: 0, partial: false });
    expect(reference()).toEqual([5001, 5002, 40001, 40002]);
    const labelled = await ct.deleteMatching('IPv4', { labels: { value: 1n << 5n, mask: 1n << 5n } });
    expect(labelled.deleted).toBe(0);
    expect(reference('ipv6')).toEqual([50001]);
  });

  it('flush by filter leaves the rest; unfiltered flush empties that family only', async () => {
    fill();
    let r = await ct.flush('IPv4', { mark: { value: 0x1234 } });
    expect(r).toMatchObject({ path: 'kernel', failed: 0 });
    expect(r.deleted).toBeUndefined();
    expect(reference()).toEqual([5001, 5002, 40001, 40003, 40004]);
    r = await ct.flush('IPv4', { labels: { value: 1n << 5n, mask: 1n << 5n } });
    expect(r).toMatchObject({ path: 'dumpDelete', matched: 1, deleted: 1 });
    expect(reference()).toEqual([5001, 5002, 40001, 40004]);
    r = await ct.flush('IPv4', { protocol: 'tcp', orig: { src: '10.244.0.0/16' } });
    expect(r).toMatchObject({ path: 'dumpDelete', deleted: 1 });
    expect(reference()).toEqual([5001, 40001, 40004]);
    r = await ct.flush('IPv4');
    expect(r).toMatchObject({ path: 'kernel', failed: 0 });
    expect(reference()).toEqual([]);
    expect(reference('ipv6')).toEqual([50001]);
  });
});

describe('purgeIps', () => {
  it('removes every flow of the address in any protocol and direction, and nothing else', async () => {
    fill();
    const r = await ct.purgeIps('IPv4', ['10.244.0.2']);
    // The pod's own TCP connection (orig src) and the UDP flow DNATed to it (reply src).
    expect(r).toMatchObject({ deleted: 2, failed: 0 });
    expect(reference()).toEqual([5001, 40001, 40003, 40004]);
    expect(reference('ipv6')).toEqual([50001]);
  });

  it('the rule: addresses gone from every slice, in any spelling', () => {
    expect(conntrack.goneIps('IPv6', ['fd00::1', 'fd00::2', '10.0.0.1'], ['fd00:0::2'])).toEqual(['fd00::1']);
    expect(() => conntrack.goneIps('IPv7' as conntrack.IPFamily, [], [])).toThrow(KubenodeTypeError);
  });
});
