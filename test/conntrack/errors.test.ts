// Binding outcome codes → conntrack's typed errors. A missing ctnetlink cannot be produced on
// this kernel (nf_conntrack_netlink is built in), so the mapping is checked here and, for the
// kernel errnos, in the crate's unit tests (crates/kubenode-conntrack/src/error.rs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conntrackError } from '../../ts/conntrack/errors.js';
import { createEntries, injectFaults } from '../../ts/conntrack/testing.js';
import { conntrack, KubenodeError, KubenodeRangeError, KubenodeTypeError } from '../../ts/index.js';

const outcome = (code: string, message: string) => ({ code, message });

describe('conntrackError', () => {
  it('permission and unsupported outcomes become their own classes, message kept', () => {
    const perm = conntrackError(
      outcome(
        'ERR_KUBENODE_PERMISSION',
        "dump conntrack table: permission denied (CAP_NET_ADMIN is required in the socket's network namespace)",
      ),
    );
    expect(perm).toBeInstanceOf(conntrack.ConntrackPermissionError);
    expect(perm).toBeInstanceOf(KubenodeError);
    expect(perm).toMatchObject({ name: 'ConntrackPermissionError', code: 'ERR_KUBENODE_PERMISSION' });
    expect(perm.message).toMatch(/CAP_NET_ADMIN is required/);

    const missing = conntrackError(
      outcome(
        'ERR_KUBENODE_UNSUPPORTED',
        'dump conntrack table: conntrack netlink is not available (EINVAL (22): the kernel has no ctnetlink subsystem); is nf_conntrack_netlink loaded?',
      ),
    );
    expect(missing).toBeInstanceOf(conntrack.ConntrackUnavailableError);
    expect(missing).toMatchObject({ name: 'ConntrackUnavailableError', code: 'ERR_KUBENODE_UNSUPPORTED' });
    expect(missing.message).toMatch(/is nf_conntrack_netlink loaded\?$/);
  });

  it('other bad input stays generic', () => {
    const arg = conntrackError(outcome('ERR_KUBENODE_INVALID_ARG', 'dstPort needs a protocol'));
    expect(arg).toBeInstanceOf(KubenodeTypeError);
    expect(arg).not.toBeInstanceOf(conntrack.ConntrackFamilyError);
    expect(conntrackError(outcome('ERR_KUBENODE_OUT_OF_RANGE', 'zone out of range'))).toBeInstanceOf(
      KubenodeRangeError,
    );
  });

  it('kernel and parse failures keep their code; thrown binding errors map the same way', () => {
    const io = conntrackError(outcome('ERR_KUBENODE_IO', 'conntrack batch: kernel returned EBUSY (16)'));
    expect(io).toBeInstanceOf(KubenodeError);
    expect(io).toMatchObject({
      code: 'ERR_KUBENODE_IO',
      message: 'conntrack batch: kernel returned EBUSY (16)',
    });
    expect(conntrackError(outcome('ERR_KUBENODE_PARSE', 'malformed netlink message: x'))).toMatchObject({
      code: 'ERR_KUBENODE_PARSE',
    });
    const thrown = Object.assign(new Error('open netlink socket: permission denied'), {
      code: 'ERR_KUBENODE_PERMISSION',
    });
    expect(conntrackError(thrown)).toBeInstanceOf(conntrack.ConntrackPermissionError);
    // An error without a kubenode code (a napi status) is still a KubenodeError, keeping the cause.
    const plain = new Error('unrelated');
    expect(conntrackError(plain)).toMatchObject({
      code: 'ERR_KUBENODE_INTERNAL',
      message: 'unrelated',
      cause: plain,
    });
    expect(conntrackError(plain)).toBeInstanceOf(KubenodeError);
  });
});

describe('typed errors through the public API (checked before any netlink work)', () => {
  let ct: conntrack.Conntrack;
  beforeAll(async () => {
    ct = await conntrack.Conntrack.open();
  });
  afterAll(() => ct?.close());

  const v4Flow: conntrack.Flow = {
    protocol: 17,
    forward: { srcIP: '10.0.0.1', dstIP: '10.96.0.10', srcPort: 1000, dstPort: 53 },
    reverse: { srcIP: '10.244.0.1', dstIP: '10.0.0.1', srcPort: 5353, dstPort: 1000 },
    zone: 0,
    mark: 0,
    status: 0,
    timeout: 30,
  };

  it('family mismatches are ConntrackFamilyError (a KubenodeTypeError)', async () => {
    // Started one at a time: a call started early could reject before its handler is attached.
    for (const call of [
      () => ct.delete('IPv6', [v4Flow]),
      () => createEntries(ct, 'IPv6', [v4Flow]),
      () => ct.list('IPv6', { protocol: 'udp', dstIP: '10.96.0.10' }),
    ]) {
      const e = await call().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(conntrack.ConntrackFamilyError);
      expect(e).toBeInstanceOf(KubenodeTypeError);
      expect((e as Error).message).toMatch(/is not an IPv6 address \(family mismatch\)/);
    }
  });

  it('non-array flows and a non-handle are type errors', async () => {
    await expect(createEntries(ct, 'IPv4', {} as never)).rejects.toThrow(/flows must be an array/);
    await expect(createEntries(ct, 'IPv4', {} as never)).rejects.toBeInstanceOf(KubenodeTypeError);
    const r = conntrack.cleanStaleEntries({} as never, 'IPv4', [], {}, { metrics: null });
    await expect(r).rejects.toBeInstanceOf(KubenodeTypeError);
    await expect(conntrack.cleanStaleEntries({} as never, 'IPv4', [], {}, { metrics: null })).rejects.toThrow(
      /ct must be a Conntrack handle/,
    );
  });

  it('a closed handle is a state error, not a type error', async () => {
    const c = await conntrack.Conntrack.open();
    c.close();
    expect(c.closed).toBe(true);
    const e = await c.listEntries('IPv4').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(conntrack.ConntrackClosedError);
    expect(e).toBeInstanceOf(KubenodeError);
    expect(e).not.toBeInstanceOf(TypeError);
    expect(() => injectFaults(c, {})).toThrow(conntrack.ConntrackClosedError);
    await expect(conntrack.cleanStaleEntries(c, 'IPv4', [], {}, { metrics: null })).rejects.toBeInstanceOf(
      conntrack.ConntrackClosedError,
    );
  });
});
