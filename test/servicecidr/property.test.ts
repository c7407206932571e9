// Property: across randomised create/delete sequences of ServiceCIDRs and IPAddresses, the
// controller never removes a finalizer while an IPAddress would be left outside every
// ServiceCIDR. Checked through a watch on the real API server: whenever a ServiceCIDR vanishes,
// every managed IPAddress must still be contained in a remaining ServiceCIDR. The watch must stay
// up for the whole test, and deletions the controller blocked are counted: a run where none was
// ever blocked would prove nothing.
import { type NetworkingV1Api, type V1ServiceCIDR, Watch } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { apis, createCIDR, createIP, readCIDR, runController, waitFor } from './helpers.js';

let api: ApiServer;
let net: NetworkingV1Api;

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
});
afterAll(async () => {
  await api?.stop();
});

const CIDRS = ['10.240.0.0/24', '10.240.0.0/25', '10.240.0.128/25', '10.240.0.0/16', '10.240.1.0/24'];
const IPS = ['10.240.0.5', '10.240.0.130', '10.240.1.7', '10.240.2.2'];

type Op = { kind: 'createCIDR' | 'deleteCIDR'; i: number } | { kind: 'createIP' | 'deleteIP'; i: number };

describe('property: no orphan IPAddress', () => {
  it('a finalizer is never removed while an orphan IPAddress exists', async () => {
    const ctl = runController({ kubeConfig: api.kubeConfig, deletionGracePeriodMs: 200, workers: 5 });
    // Per-run state (reset at the start of each run); `cidrs` mirrors the server.
    let violations: string[] = [];
    let ips = new Set<string>();
    let blocked = new Set<string>();
    const cidrs = new Map<string, string[]>();
    let blockedTotal = 0;
    // The API server's own default ServiceCIDR (`kubernetes`) is not ours.
    const ours = () => [...cidrs.keys()].filter((n) => /^p\d+$/.test(n));
    let watchStopping = false;
    let watchDropped: string | undefined;
    // Mirror of the API state from a watch, so checks see the order the server applied.
    const w = await new Watch(api.kubeConfig).watch(
      '/apis/networking.k8s.io/v1/servicecidrs',
      {},
      (phase, obj: V1ServiceCIDR) => {
        const name = obj.metadata?.name ?? '';
        if (phase === 'DELETED') {
          cidrs.delete(name);
          const remaining = [...cidrs.entries()].map(([n, c]) => ({
            metadata: { name: n },
            spec: { cidrs: c },
          }));
          for (const ip of ips) {
            const was = servicecidr.containsAddress(
              [{ metadata: { name }, spec: { cidrs: obj.spec?.cidrs ?? [] } }],
              ip,
            );
            if (was.length > 0 && servicecidr.containsAddress(remaining, ip).length === 0) {
              violations.push(`${name} removed while ${ip} had no other ServiceCIDR`);
            }
          }
        } else {
          cidrs.set(name, obj.spec?.cidrs ?? []);
          const r = obj.status?.conditions?.find((c) => c.type === 'Ready');
          if (obj.metadata?.deletionTimestamp && r?.reason === servicecidr.REASON_TERMINATING)
            blocked.add(name);
        }
      },
      (err) => {
        if (!watchStopping) watchDropped = `ServiceCIDR watch ended early: ${err ?? 'closed by the server'}`;
      },
    );
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              fc.record({ kind: fc.constantFrom('createCIDR', 'deleteCIDR'), i: fc.nat(CIDRS.length - 1) }),
              fc.record({ kind: fc.constantFrom('createIP', 'deleteIP'), i: fc.nat(IPS.length - 1) }),
            ) as fc.Arbitrary<Op>,
            { minLength: 5, maxLength: 14 },
          ),
          async (ops) => {
            violations = [];
            ips = new Set();
            blocked = new Set();
            expect(watchDropped).toBeUndefined();
            expect(ours()).toEqual([]);
            for (const op of ops) {
              const name = `p${op.i}`;
              try {
                if (op.kind === 'createCIDR') await createCIDR(net, name, [CIDRS[op.i] as string]);
                if (op.kind === 'deleteCIDR') await net.deleteServiceCIDR({ name });
                if (op.kind === 'createIP') {
                  await createIP(net, IPS[op.i] as string, 'IPv4');
                  ips.add(IPS[op.i] as string);
                }
                if (op.kind === 'deleteIP') {
                  await net.deleteIPAddress({ name: IPS[op.i] as string });
                  ips.delete(IPS[op.i] as string);
                }
              } catch (e) {
                const code = (e as { code?: number }).code;
                if (code !== 404 && code !== 409) throw e; // absent / already exists: skip
              }
              await new Promise((r) => setTimeout(r, 30));
            }
            await new Promise((r) => setTimeout(r, 600));
            expect(watchDropped).toBeUndefined();
            expect(violations).toEqual([]);
            blockedTotal += blocked.size;
            // Clean up for the next run: IPs first, then every ServiceCIDR must go.
            for (const ip of [...ips]) {
              await net.deleteIPAddress({ name: ip }).catch(() => {});
              ips.delete(ip);
            }
            for (let i = 0; i < CIDRS.length; i++)
              await net.deleteServiceCIDR({ name: `p${i}` }).catch(() => {});
            for (let i = 0; i < CIDRS.length; i++) {
              await waitFor(`p${i} gone`, async () => (await readCIDR(net, `p${i}`)) === undefined, 20_000);
            }
            await waitFor('watch mirror empty', async () => ours().length === 0, 10_000);
          },
        ),
        {
          numRuns: 8,
          // One sequence known to need a blocked deletion: an IP only p0 holds, then p0 deleted
          // (the repeated creates are 409s, giving the controller time to add its finalizer).
          examples: [
            [
              [
                { kind: 'createCIDR', i: 0 },
                { kind: 'createIP', i: 0 },
                { kind: 'createIP', i: 0 },
                { kind: 'createCIDR', i: 0 },
                { kind: 'createIP', i: 0 },
                { kind: 'deleteCIDR', i: 0 },
              ],
            ],
          ],
        },
      );
    } finally {
      watchStopping = true;
      w.abort();
      await ctl.stop();
    }
    expect(watchDropped).toBeUndefined();
    expect(violations).toEqual([]);
    expect(blockedTotal).toBeGreaterThan(0);
  }, 300_000);
});
