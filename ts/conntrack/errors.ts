// Conntrack-specific typed errors. Binding failures arrive as `{ code, message }` outcomes and
// become these (or the generic typed errors) here.
import { fromNative, KubenodeError, type KubenodeErrorCode, KubenodeTypeError } from '../errors.js';

/** An address or table of the wrong IP family for the requested cleanup. */
export class ConntrackFamilyError extends KubenodeTypeError {
  constructor(message: string) {
    super(message);
    this.name = 'ConntrackFamilyError';
  }
}

/** No CAP_NET_ADMIN in the network namespace of the socket. */
export class ConntrackPermissionError extends KubenodeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_KUBENODE_PERMISSION', message, options);
    this.name = 'ConntrackPermissionError';
  }
}

/** ctnetlink is not available (nf_conntrack_netlink not loaded, or no netfilter netlink). */
export class ConntrackUnavailableError extends KubenodeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_KUBENODE_UNSUPPORTED', message, options);
    this.name = 'ConntrackUnavailableError';
  }
}

/** The handle was closed: a state error, not bad input (like Node's EBADF on a closed file). */
export class ConntrackClosedError extends KubenodeError {
  constructor(message = 'the conntrack handle is closed', options?: { cause?: unknown }) {
    super('ERR_KUBENODE_IO', message, options);
    this.name = 'ConntrackClosedError';
  }
}

const CLOSED = 'the conntrack handle is closed';

/** Maps a task outcome's `{ code, message }` (or a thrown binding error) to a typed error. */
export function conntrackError(e: { code: string; message: string } | unknown): Error {
  const err =
    e instanceof Error
      ? fromNative(e)
      : fromNative(
          Object.assign(new Error((e as { message: string }).message), {
            code: (e as { code: string }).code,
          }),
        );
  if (err instanceof KubenodeError || err instanceof KubenodeTypeError) {
    const msg = err.message;
    // The binding's only report of a handle closed while an operation was queued.
    if (msg === CLOSED) return new ConntrackClosedError(msg, { cause: err });
    if (err.code === 'ERR_KUBENODE_PERMISSION') return new ConntrackPermissionError(msg, { cause: err });
    if (err.code === 'ERR_KUBENODE_UNSUPPORTED') return new ConntrackUnavailableError(msg, { cause: err });
    if (err.code === 'ERR_KUBENODE_INVALID_ARG' && /famil/i.test(msg)) return new ConntrackFamilyError(msg);
    return err;
  }
  return err instanceof Error
    ? err
    : new KubenodeError('ERR_KUBENODE_INTERNAL' as KubenodeErrorCode, String(err));
}
