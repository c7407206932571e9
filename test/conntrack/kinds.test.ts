// Native failures are classified by the core's `kind`, never by message text, and the binding
// reports the kind in every task outcome.
import { describe, expect, it } from 'vitest';
import { conntrackError } from '../../ts/conntrack/errors.js';
import { conntrack, KubenodeTypeError } from '../../ts/index.js';
import { native } from '../../ts/native.js';

describe('failures are classified by kind, never by message text', () => {
  it('kind "family" and "closed" pick the class; look-alike messages do not', () => {
    const fam = conntrackError({
      code: 'ERR_KUBENODE_INVALID_ARG',
      kind: 'family',
      message: 'x: 10.0.0.1 is off',
    });
    expect(fam).toBeInstanceOf(conntrack.ConntrackFamilyError);
    expect(fam.message).toBe('x: 10.0.0.1 is off');
    const notFam = conntrackError({
      code: 'ERR_KUBENODE_INVALID_ARG',
      kind: 'invalid-argument',
      message: 'family must be "IPv4" or "IPv6", got "ipv4"',
    });
    expect(notFam).toBeInstanceOf(KubenodeTypeError);
    expect(notFam).not.toBeInstanceOf(conntrack.ConntrackFamilyError);
    expect(conntrackError({ code: 'ERR_KUBENODE_IO', kind: 'closed', message: 'gone' })).toBeInstanceOf(
      conntrack.ConntrackClosedError,
    );
    const notClosed = conntrackError({
      code: 'ERR_KUBENODE_IO',
      kind: 'io',
      message: 'the conntrack handle is closed',
    });
    expect(notClosed).not.toBeInstanceOf(conntrack.ConntrackClosedError);
    expect(notClosed).toMatchObject({ code: 'ERR_KUBENODE_IO' });
  });

  it('the binding reports kinds in task outcomes', async () => {
    const o = await native.Conntrack.open();
    const h = o.handle;
    if (!h) throw new Error(o.error?.message);
    try {
      const flow = {
        protocol: 17,
        forward: { srcIp: '10.0.0.1', dstIp: '10.96.0.10', srcPort: 1000, dstPort: 53 },
        reverse: { srcIp: '10.244.0.1', dstIp: '10.0.0.1', srcPort: 5353, dstPort: 1000 },
        zone: 0,
        mark: 0,
        status: 0,
        timeout: 30,
      };
      const del = await h.delete('IPv6', [flow]);
      expect(del.error).toMatchObject({
        code: 'ERR_KUBENODE_INVALID_ARG',
        kind: 'family',
        message: 'flows[0].forward.srcIP: 10.0.0.1 is not an IPv6 address (family mismatch)',
      });
      const svc = { name: 'a', protocol: 'UDP', clusterIp: '10.96.0.10', port: 53 };
      const eps = { a: [{ ip: 'fd00::1', port: 53, serving: true }] };
      expect((await h.cleanStale('IPv6', [svc], eps, true)).error).toMatchObject({ kind: 'family' });
      const zero = await h.cleanStale('IPv4', [{ ...svc, port: 0 }], {}, true);
      expect(zero.error).toMatchObject({ code: 'ERR_KUBENODE_OUT_OF_RANGE', kind: 'out-of-range' });
      h.close();
      expect(h.injectFaults({})).toMatchObject({ code: 'ERR_KUBENODE_IO', kind: 'closed' });
      expect((await h.list('IPv4')).error).toMatchObject({ kind: 'closed' });
    } finally {
      h.close();
    }
  });

  it('a service port of 0 is a range error through the public API', async () => {
    const ct = await conntrack.Conntrack.open();
    try {
      const svc = { name: 'a', protocol: 'UDP' as const, clusterIP: '10.96.0.10', port: 0 };
      await expect(conntrack.cleanStaleEntries(ct, 'IPv4', [svc], {}, { metrics: null })).rejects.toThrow(
        /port must be in \[1, 65535\], got 0/,
      );
    } finally {
      ct.close();
    }
  });
});
