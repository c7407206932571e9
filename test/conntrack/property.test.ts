// Property on the real kernel: random services, endpoints and flows (created with CT_NEW);
// after the cleanup (v1.37's rules) no flow to a serving endpoint of its service is gone, and
// every flow through a frontend to a non-serving or unknown endpoint is, except node-port flows
// of a service without serving endpoints.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEntries } from '../../ts/conntrack/testing.js';
import { conntrack } from '../../ts/index.js';
import { TestNetns } from './netns.js';

describe('no flow to a serving endpoint is ever deleted (real kernel)', () => {
  let ns: TestNetns;
  let ct: conntrack.Conntrack;
  beforeAll(async () => {
    ns = new TestNetns();
    ct = await conntrack.Conntrack.open({ netns: ns.path });
  });
  afterAll(() => {
    ct?.close();
    ns?.destroy();
  });

  it('holds for random tables', async () => {
    // Distinct service ports and node ports, so upstream's port-collision quirk cannot apply.
    const svcArb = fc.record({
      eps: fc.uniqueArray(fc.integer({ min: 1, max: 6 }), { maxLength: 4 }),
      serving: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      nodePort: fc.boolean(),
    });
    const flowArb = fc.record({
      svc: fc.integer({ min: 0, max: 2 }),
      ep: fc.integer({ min: 1, max: 6 }),
      via: fc.constantFrom('vip', 'nodeport', 'ext'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(svcArb, { minLength: 3, maxLength: 3 }),
        fc.array(flowArb, { maxLength: 40 }),
        async (svcs, flows) => {
          const services: conntrack.ServiceEntry[] = svcs.map((s, i) => ({
            name: `s${i}`,
            protocol: 'UDP',
            clusterIP: `10.96.0.${10 + i}`,
            port: 53 + i,
            nodePort: s.nodePort ? 30000 + i : 0,
            externalIPs: [`192.0.2.${10 + i}`],
          }));
          const endpoints = Object.fromEntries(
            svcs.map((s, i) => [
              `s${i}`,
              s.eps.map((e, j) => ({ ip: `10.244.${i}.${e}`, port: 5353, serving: s.serving[j] ?? true })),
            ]),
          );
          const created = flows.map((f, k) => {
            const dst =
              f.via === 'vip'
                ? [`10.96.0.${10 + f.svc}`, 53 + f.svc]
                : f.via === 'ext'
                  ? [`192.0.2.${10 + f.svc}`, 53 + f.svc]
                  : ['10.0.0.1', 30000 + f.svc];
            return {
              protocol: 17,
              forward: {
                srcIP: '10.0.0.2',
                dstIP: dst[0] as string,
                srcPort: 1024 + k,
                dstPort: dst[1] as number,
              },
              reverse: {
                srcIP: `10.244.${f.svc}.${f.ep}`,
                dstIP: '10.0.0.2',
                srcPort: 5353,
                dstPort: 1024 + k,
              },
              zone: 0,
              mark: 0,
              status: 0,
              timeout: 120,
            };
          });
          try {
            expect((await createEntries(ct, 'IPv4', created)).created).toBe(flows.length);
            // Flows are created between passes with any backend, so each pass must be full.
            await conntrack.cleanStaleEntries(ct, 'IPv4', services, endpoints, { metrics: null, full: true });
            const left = await ct.listEntries('IPv4', { protocol: 'udp' });
            const leftPorts = new Set(left.map((f) => f.forward.srcPort));
            flows.forEach((f, k) => {
              const svc = svcs[f.svc];
              const j = svc?.eps.indexOf(f.ep) ?? -1;
              const serving = j >= 0 && (svc?.serving[j] ?? true);
              const reachable = f.via !== 'nodeport' || svc?.nodePort;
              // A service port without any serving endpoint keeps its node-port flows (v1.37):
              // matched on the port alone, they could be anyone's.
              const anyServing = svc?.eps.some((_, i) => svc.serving[i] ?? true) ?? false;
              const what = `flow ${k} ${JSON.stringify(f)}`;
              if (reachable && serving) expect(leftPorts.has(1024 + k), `${what} kept`).toBe(true);
              if (reachable && !anyServing && f.via === 'nodeport')
                expect(leftPorts.has(1024 + k), `${what} kept`).toBe(true);
              // Via a frontend of its service to a non-serving or unknown endpoint: stale, so
              // gone (with no serving endpoint at all, through its VIPs only).
              if (reachable && !serving && (anyServing || f.via !== 'nodeport'))
                expect(leftPorts.has(1024 + k), `${what} deleted`).toBe(false);
            });
          } finally {
            await ct.deleteEntries('IPv4', await ct.listEntries('IPv4', { protocol: 'udp' }));
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
