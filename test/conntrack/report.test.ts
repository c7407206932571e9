// The core's report of a cleanup pass reaches `CleanResult` whole, on the real kernel: the
// counts, the path and why it was taken, and the estimates a cost decision compared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEntries } from '../../ts/conntrack/testing.js';
import { conntrack } from '../../ts/index.js';
import { TestNetns } from './netns.js';

const svc: conntrack.ServiceEntry = { name: 'a', protocol: 'UDP', clusterIP: '10.96.0.10', port: 53 };
const endpoints = (ips: string[]): conntrack.EndpointsTable => ({
  a: ips.map((ip) => ({ ip, port: 53, serving: true })),
});
const flow = (k: number, backend: string): conntrack.Flow => ({
  protocol: 17,
  forward: { srcIP: '10.1.0.2', dstIP: '10.96.0.10', srcPort: 40000 + k, dstPort: 53 },
  reverse: { srcIP: backend, dstIP: '10.1.0.2', srcPort: 53, dstPort: 40000 + k },
  zone: 0,
  mark: 0,
  status: 0,
  timeout: 120,
});

describe('cleanStaleEntries reports what the pass did', () => {
  let ns: TestNetns;
  let ct: conntrack.Conntrack;

  beforeAll(async () => {
    ns = new TestNetns('kn-ct-report');
    ct = await conntrack.Conntrack.open({ netns: ns.path });
  });
  afterAll(() => {
    ct?.close();
    ns?.destroy();
  });

  it('counts, path, reason and the estimates of a cost decision', async () => {
    const flows = [flow(0, '10.244.0.1'), flow(1, '10.244.0.2'), flow(2, '10.244.0.2')];
    expect((await createEntries(ct, 'IPv4', flows)).created).toBe(3);

    const first = await conntrack.cleanStaleEntries(
      ct,
      'IPv4',
      [svc],
      endpoints(['10.244.0.1', '10.244.0.2']),
    );
    expect(first).toMatchObject({
      listed: 3,
      stale: 0,
      deleted: 0,
      notFound: 0,
      failed: 0,
      partial: false,
      attempts: 1,
      path: 'full',
      fullReason: 'first',
      pairs: 0,
    });
    expect(first.estimate).toBeUndefined();

    // The second pass is a cost decision: both estimates were measured on this handle.
    const second = await conntrack.cleanStaleEntries(ct, 'IPv4', [svc], endpoints(['10.244.0.1']));
    expect(second).toMatchObject({ stale: 2, deleted: 2, notFound: 0, failed: 0 });
    expect(second.path === 'targeted' || second.fullReason === 'cost').toBe(true);
    expect(Object.keys(second.estimate ?? {}).sort()).toEqual(['fullSeconds', 'targetedSeconds']);
    expect(second.estimate?.targetedSeconds).toBeGreaterThan(0);
    expect(second.estimate?.fullSeconds).toBeGreaterThan(0);
    expect((await ct.list('IPv4', { protocol: 'udp' })).flows.map((f) => f.reverse.srcIP)).toEqual([
      '10.244.0.1',
    ]);
  });
});
