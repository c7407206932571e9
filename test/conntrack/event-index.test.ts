// Real kernel: the event-fed flow index. nftables DNAT makes a UDP service in a throwaway
// namespace, real UDP traffic creates the flows (some only after the index was built, so it
// knows them from events alone), and `conntrack -L` checks what the indexed pass left.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conntrack } from '../../ts/index.js';
import { TestNetns } from './netns.js';

const VIP = '10.96.0.10';
const [EP1, EP2] = ['10.244.0.1', '10.244.0.2'];
// Source ports 40000–44999 are DNATed to EP1, 45000–49999 to EP2.
const NFT = `table ip kn {
 chain out {
  type nat hook output priority -100; policy accept;
  ip daddr ${VIP} udp dport 53 udp sport 40000-44999 dnat to ${EP1}:5353
  ip daddr ${VIP} udp dport 53 udp sport 45000-49999 dnat to ${EP2}:5353
 }
}
`;

const tables = (eps: string[]) => ({
  services: [{ name: 'kube-system/dns:dns', protocol: 'UDP' as const, clusterIP: VIP, port: 53 }],
  endpoints: {
    'kube-system/dns:dns': eps.map((ip) => ({ ip, port: 5353, serving: true })),
  },
});

/** `n` flows to the VIP from source ports `from`… */
const sends = (from: number, n: number): [number, string, number][] =>
  Array.from({ length: n }, (_, i): [number, string, number] => [from + i, VIP, 53]);

async function until(what: string, cond: () => boolean): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function setup(prefix: string): TestNetns {
  const ns = new TestNetns(prefix);
  ns.nft(NFT);
  // Unreplied UDP entries live 30 s by default; the test must not race their expiry.
  ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  return ns;
}

const clean = (ct: conntrack.Conntrack, eps: string[]) => {
  const t = tables(eps);
  return conntrack.cleanStaleEntries(ct, 'IPv4', t.services, t.endpoints);
};

describe('the event-fed flow index on the real kernel', () => {
  let ns: TestNetns;
  let ct: conntrack.Conntrack;

  beforeAll(async () => {
    ns = setup('kn-ct-ix');
    ct = await conntrack.Conntrack.open({ netns: ns.path });
  });

  afterAll(() => {
    ct?.close();
    ns?.destroy();
  });

  it('is built by the first pass and deletes exactly the stale flows, those known only from events too', async () => {
    expect(conntrack.eventIndexStats(ct)).toBeUndefined();
    await conntrack.enableEventIndex(ct);
    expect(conntrack.eventIndexStats(ct)).toMatchObject({ ipv4: 'notBuilt', flows: 0 });
    ns.sendUdp([...sends(40000, 3), ...sends(45000, 3), [42999, '203.0.113.5', 9999]]);
    const first = await clean(ct, [EP1, EP2]);
    expect(first).toMatchObject({ path: 'full', fullReason: 'first', deleted: 0 });
    expect(conntrack.eventIndexStats(ct)).toMatchObject({ ipv4: 'valid', flows: 7 });

    // After the dump: the index learns these from NEW events only.
    ns.sendUdp([...sends(40100, 4), ...sends(45100, 4)]);
    await until('the new flows in the index', () => conntrack.eventIndexStats(ct)?.flows === 15);

    const r = await clean(ct, [EP1]);
    expect(r).toMatchObject({ path: 'indexed', listed: 0, stale: 7, deleted: 7, notFound: 0, failed: 0 });
    const left = ns.conntrackL('ipv4');
    expect(left.filter((e) => e.replySrc === EP2)).toEqual([]);
    expect(left.filter((e) => e.replySrc === EP1)).toHaveLength(7);
    expect(left.filter((e) => e.origDst === '203.0.113.5')).toHaveLength(1);
    // Taken out of the index at once; their DESTROY events change nothing more.
    expect(conntrack.eventIndexStats(ct)?.flows).toBe(8);
    const again = await clean(ct, [EP1]);
    expect(again).toMatchObject({ path: 'indexed', stale: 0 });

    // A flow that expires (here: is deleted by another client) leaves the index by its event.
    ns.exec('conntrack', ['-D', '-p', 'udp', '--sport', '40000']);
    await until('the DESTROY event applied', () => conntrack.eventIndexStats(ct)?.flows === 7);
    // A requested full pass (the reconciler's resync period) still walks, and rebuilds.
    const full = await conntrack.cleanStaleEntries(
      ct,
      'IPv4',
      tables([EP1]).services,
      tables([EP1]).endpoints,
      {
        full: true,
      },
    );
    expect(full).toMatchObject({ path: 'full', fullReason: 'requested', stale: 0 });
    expect(conntrack.eventIndexStats(ct)).toMatchObject({ ipv4: 'valid', flows: 7 });
  });

  it('checks its options by shape here and by range in the core', async () => {
    await expect(conntrack.enableEventIndex(ct, { maxFlows: '10' as unknown as number })).rejects.toThrow(
      /options.maxFlows must be an integer/,
    );
    await expect(conntrack.enableEventIndex(ct, { maxFlows: 0 })).rejects.toThrow(
      /maxFlows must be a whole number/,
    );
    await expect(conntrack.enableEventIndex(ct, { bufferSize: 1.5 })).rejects.toThrow(
      /bufferSize must be a whole number/,
    );
  });
});

describe('lost events on the real kernel', () => {
  let ns: TestNetns;
  let ct: conntrack.Conntrack;

  beforeAll(async () => {
    ns = setup('kn-ct-ixl');
    ct = await conntrack.Conntrack.open({ netns: ns.path });
  });

  afterAll(() => {
    ct?.close();
    ns?.destroy();
  });

  it('make the next pass full, which still cleans exactly and rebuilds the index', async () => {
    // The smallest receive buffer the kernel grants: a burst of new flows overflows it.
    await conntrack.enableEventIndex(ct, { bufferSize: 1 });
    ns.sendUdp([...sends(40000, 2), ...sends(45000, 2)]);
    expect(await clean(ct, [EP1, EP2])).toMatchObject({ path: 'full', fullReason: 'first' });
    ns.sendUdp([...sends(40100, 1500), ...sends(45100, 1500)]);
    await until('a loss', () => (conntrack.eventIndexStats(ct)?.losses ?? 0) > 0);
    expect(conntrack.eventIndexStats(ct)?.ipv4).toBe('eventsLost');

    const r = await clean(ct, [EP1]);
    expect(r).toMatchObject({
      path: 'full',
      fullReason: 'indexResync',
      stale: 1502,
      deleted: 1502,
      failed: 0,
    });
    const left = ns.conntrackL('ipv4');
    expect(left.filter((e) => e.replySrc === EP2)).toEqual([]);
    expect(left.filter((e) => e.replySrc === EP1)).toHaveLength(1502);
    // Rebuilt from the dump; the DESTROY events of the pass's own deletes overflow this
    // buffer again, so it may be marked once more. With room for them, the index recovers.
    expect(conntrack.eventIndexStats(ct)?.flows).toBe(1502);
    await conntrack.enableEventIndex(ct);
    expect(await clean(ct, [EP1])).toMatchObject({ path: 'full', fullReason: 'indexResync', stale: 0 });
    expect(conntrack.eventIndexStats(ct)).toMatchObject({ ipv4: 'valid', flows: 1502, losses: 0 });
    expect(await clean(ct, [EP1])).toMatchObject({ path: 'indexed', stale: 0 });
  });
});
