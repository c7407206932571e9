// Native failures are classified by the core's `kind`, never by message text, and the binding
// reports the kind in every task outcome.
import { describe, expect, it } from 'vitest';
import { conntrackError } from '../../ts/conntrack/errors.js';
import { nativeTestHooks } from '../../ts/conntrack/testing.js';
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
    const h = o.value;
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
      const hooks = nativeTestHooks(h);
      expect(hooks.injectFault('dumpIntr', 0)).toMatchObject({ code: 'ERR_KUBENODE_IO', kind: 'closed' });
      expect(hooks.pinCostChoice(null)).toMatchObject({ code: 'ERR_KUBENODE_IO', kind: 'closed' });
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

describe('a bad argument to a queued call takes the path of every other failure', () => {
  it("is the outcome's error, never a synchronous throw", async () => {
    const o = await native.Conntrack.open();
    const h = o.value;
    if (!h) throw new Error(o.error?.message);
    try {
      // Each call hands back its promise: converting the arguments is part of the task.
      const svc = { name: 'a', protocol: 'UDP', clusterIp: '10.96.0.10', port: 70000 };
      const tuple = { srcPort: 1.5, dstPort: 53 };
      const flow = { protocol: 17, forward: tuple, reverse: tuple, zone: 0, mark: 0, status: 0, timeout: 30 };
      // None of these throws (the old binding threw from each call).
      const list = h.list('ipv4');
      const clean = h.cleanStale('IPv4', [svc], {}, true);
      const del = h.delete('IPv4', [flow]);
      expect((await list).error).toMatchObject({
        code: 'ERR_KUBENODE_INVALID_ARG',
        kind: 'invalid-argument',
        scope: 'conntrack',
        message: 'family must be "IPv4" or "IPv6", got "ipv4"',
      });
      expect((await clean).error).toMatchObject({
        code: 'ERR_KUBENODE_OUT_OF_RANGE',
        kind: 'out-of-range',
        message: 'services[0] (a).port must be in [0, 65535], got 70000',
      });
      const batch = await del;
      expect(batch.error).toMatchObject({
        code: 'ERR_KUBENODE_INVALID_ARG',
        message: 'flows[0].forward.srcPort must be an integer, got 1.5',
      });
      // A batch refused as a whole reports nothing done: the outcome is its error alone.
      expect(Object.keys(batch)).toEqual(['error']);
    } finally {
      h.close();
    }
  });

  it('reaches the public API as the same typed error', async () => {
    const ct = await conntrack.Conntrack.open();
    try {
      await expect(ct.list('ipv4' as never)).rejects.toThrow(
        expect.objectContaining({ name: 'KubenodeTypeError', code: 'ERR_KUBENODE_INVALID_ARG' }),
      );
      const svc = { name: 'a', protocol: 'UDP' as const, clusterIP: '10.96.0.10', port: 70000 };
      await expect(conntrack.cleanStaleEntries(ct, 'IPv4', [svc], {}, { metrics: null })).rejects.toThrow(
        expect.objectContaining({ code: 'ERR_KUBENODE_OUT_OF_RANGE' }),
      );
    } finally {
      ct.close();
    }
  });
});
