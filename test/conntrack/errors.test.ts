// Binding outcome codes → conntrack's typed errors. A missing ctnetlink cannot be produced on
// this kernel (nf_conntrack_netlink is built in), so the mapping is checked here and, for the
// kernel errnos, in the crate's unit tests (crates/kubenode-conntrack/src/error.rs).
import { describe, expect, it } from 'vitest';
import { conntrackError } from '../../ts/conntrack/errors.js';
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

  it('family problems are ConntrackFamilyError (a KubenodeTypeError); other bad input stays generic', () => {
    const fam = conntrackError(
      outcome('ERR_KUBENODE_INVALID_ARG', 'flows[0]: 10.0.0.1 is not an IPv6 flow (family mismatch)'),
    );
    expect(fam).toBeInstanceOf(conntrack.ConntrackFamilyError);
    expect(fam).toBeInstanceOf(KubenodeTypeError);
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
    // Something that is not a binding error passes through unchanged.
    const plain = new Error('unrelated');
    expect(conntrackError(plain)).toBe(plain);
  });
});
