// Conntrack-specific typed errors. Binding failures arrive as `{ code, kind, message }` outcomes
// and become these (or the generic typed errors) here, by `code` and `kind`, never by message.
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

/** A task outcome's `error`, or the same shape from elsewhere (`kind` may be absent). */
export interface NativeErrorLike {
  code: string;
  /** The core's class of failure (`family`, `closed`, `busy`, `permission`, …). */
  kind?: string;
  message: string;
}

/** Maps a task outcome's `{ code, kind, message }` (or a thrown binding error) to a typed error. */
export function conntrackError(e: NativeErrorLike | unknown): Error {
  const outcome = !(e instanceof Error) && typeof e === 'object' && e !== null;
  const kind = outcome ? (e as NativeErrorLike).kind : undefined;
  const err = outcome
    ? fromNative(
        Object.assign(new Error((e as NativeErrorLike).message), {
          code: (e as NativeErrorLike).code,
        }),
      )
    : fromNative(e);
  if (err instanceof KubenodeError || err instanceof KubenodeTypeError) {
    const msg = err.message;
    if (kind === 'closed') return new ConntrackClosedError(msg, { cause: err });
    if (err.code === 'ERR_KUBENODE_PERMISSION') return new ConntrackPermissionError(msg, { cause: err });
    if (err.code === 'ERR_KUBENODE_UNSUPPORTED') return new ConntrackUnavailableError(msg, { cause: err });
    if (kind === 'family') return new ConntrackFamilyError(msg);
    return err;
  }
  return err instanceof Error
    ? err
    : new KubenodeError('ERR_KUBENODE_INTERNAL' as KubenodeErrorCode, String(err));
}
