// Property on the real kernel: random sequences of endpoint changes (removals, additions,
// serving flips, services gaining their first endpoints), with real UDP traffic DNATed by
// nftables to the endpoints serving at the time. After every sync on one handle (full first,
// then targeted or full as the handle chooses, or pinned to targeted) the table equals what
// upstream's full CleanStaleEntries pass would leave — computed here by a plain transcription
// of upstream's rules over `conntrack -L` — so no flow to a serving endpoint is ever deleted.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { injectFaults } from '../../ts/conntrack/testing.js';
import { conntrack } from '../../ts/index.js';
import { type CtEntry, TestNetns } from './netns.js';

const SERVICES = 3;
const CANDIDATES = 4;
const vip = (i: number) => `10.96.0.${10 + i}`;
const ext = (i: number) => `192.0.2.${10 + i}`;
const nodePort = (i: number) => 30000 + i;
const epIP = (i: number, e: number) => `10.244.${i}.${e + 1}`;

type EpState = 'absent' | 'serving' | 'terminating';
type Tables = EpState[][];

const services: conntrack.ServiceEntry[] = Array.from({ length: SERVICES }, (_, i) => ({
  name: `s${i}`,
  protocol: 'UDP',
  clusterIP: vip(i),
  port: 53 + i,
  nodePort: nodePort(i),
  externalIPs: [ext(i)],
}));

const endpointsOf = (t: Tables): conntrack.EndpointsTable =>
  Object.fromEntries(
    t.map((eps, i) => [
      `s${i}`,
      eps.flatMap((st, e) =>
        st === 'absent' ? [] : [{ ip: epIP(i, e), port: 5353, serving: st === 'serving' }],
      ),
    ]),
  );

/** Upstream's CleanStaleEntries decision (v1.37's cleanup.go), string-keyed like the Go code. */
function upstreamStale(t: Tables, f: CtEntry): boolean {
  if (f.proto !== 'udp') return false;
  const vipSets = new Map<string, Set<string>>();
  const npSets = new Map<number, Set<string>>();
  t.forEach((eps, i) => {
    const set = new Set(eps.flatMap((st, e) => (st === 'serving' ? [`${epIP(i, e)}:5353`] : [])));
    const svc = services[i] as conntrack.ServiceEntry;
    for (const ip of [svc.clusterIP, ...(svc.externalIPs ?? [])]) vipSets.set(`${ip}:${svc.port}`, set);
    // No serving endpoint: every VIP flow is stale, but the node port is not matched.
    if (set.size > 0) npSets.set(svc.nodePort ?? 0, set);
  });
  const backend = `${f.replySrc}:${f.replySport}`;
  const v = vipSets.get(`${f.origDst}:${f.dport}`);
  if (v && !v.has(backend)) return true;
  const n = npSets.get(f.dport);
  return n !== undefined && !n.has(backend);
}

const key = (f: CtEntry) => `${f.origDst}:${f.dport} ${f.sport} -> ${f.replySrc}:${f.replySport}`;

describe('targeted cleanup leaves what the full pass leaves (real kernel, real DNAT)', () => {
  let ns: TestNetns;
  let nextPort = 20000;
  beforeAll(() => {
    ns = new TestNetns('kn-ct-flush');
    ns.exec('sh', ['-c', 'echo 600 > /proc/sys/net/netfilter/nf_conntrack_udp_timeout']);
  });
  afterAll(() => ns?.destroy());

  /**
   * One flow per service and frontend, DNATed to a serving endpoint (`pick` chooses which); none
   * when no endpoint serves, since kube-proxy rejects new flows to such a service (a rejected
   * packet leaves no entry).
   */
  function traffic(t: Tables, pick: number): void {
    const rules: string[] = [];
    const sends: [number, string, number][] = [];
    t.forEach((eps, i) => {
      const serving = eps.flatMap((st, e) => (st === 'serving' ? [e] : []));
      for (const [dst, dport] of [
        [vip(i), 53 + i],
        [ext(i), 53 + i],
        ['10.0.0.1', nodePort(i)],
      ] as [string, number][]) {
        const sport = nextPort++;
        const e = serving[(pick + sport) % Math.max(serving.length, 1)];
        if (e === undefined) continue;
        rules.push(`ip daddr ${dst} udp dport ${dport} udp sport ${sport} dnat to ${epIP(i, e)}:5353`);
        sends.push([sport, dst, dport]);
      }
    });
    // Rules only steer new flows; existing entries keep the NAT they were created with.
    ns.nft(
      `table ip kn {}\ndelete table ip kn\ntable ip kn {\n chain out {\n  type nat hook output priority -100; policy accept;\n  ${rules.join('\n  ')}\n }\n}\n`,
    );
    ns.sendUdp(sends);
  }

  it('holds for random sequences of endpoint changes', async () => {
    const state = fc.constantFrom<EpState>('absent', 'serving', 'terminating');
    const tables = fc.array(fc.array(state, { minLength: CANDIDATES, maxLength: CANDIDATES }), {
      minLength: SERVICES,
      maxLength: SERVICES,
    });
    const paths: string[] = [];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ tables, pick: fc.nat(7) }), { minLength: 2, maxLength: 5 }),
        async (steps) => {
          // Every other run pins the targeted path; the rest let the measured costs choose.
          const pinned = run++ % 2 === 0;
          ns.exec('conntrack', ['-F']);
          const ct = await conntrack.Conntrack.open({ netns: ns.path });
          try {
            if (pinned) injectFaults(ct, { preferTargeted: true });
            for (const { tables: t, pick } of steps) {
              traffic(t, pick);
              const before = ns.conntrackL('ipv4');
              const want = before.filter((f) => !upstreamStale(t, f)).map(key);
              const r = await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpointsOf(t), {
                metrics: null,
              });
              paths.push(r.path);
              expect(r.failed).toBe(0);
              const after = ns.conntrackL('ipv4').map(key);
              expect(after.sort(), `${r.path} pass on ${JSON.stringify(t)}`).toEqual(want.sort());
              // A flush reports no count: the targeted path reports the drop of the table's entry
              // count, where entries still held by packets in flight (here: queued behind ARP
              // for the dead backends) only count once freed.
              if (r.path === 'full') expect(r.deleted).toBe(before.length - after.length);
              else expect(r.deleted).toBeLessThanOrEqual(before.length - after.length);
            }
          } finally {
            ct.close();
          }
        },
      ),
      { numRuns: 6 },
    );
    expect(paths[0]).toBe('full');
    expect(paths).toContain('targeted');
  }, 120_000);
});
