// Conntrack-specific typed errors (a leaf module: `ts/errors.ts` maps binding failures onto
// them by `code`, `kind` and `scope`).
import { KubenodeError, type KubenodeErrorOptions, KubenodeTypeError } from '../error-classes.js';

/** An address or table of the wrong IP family for the requested cleanup. */
export class ConntrackFamilyError extends KubenodeTypeError {
  constructor(message: string, options?: KubenodeErrorOptions) {
    super(message, options);
    this.name = 'ConntrackFamilyError';
  }
}

/** No CAP_NET_ADMIN in the network namespace of the socket. */
export class ConntrackPermissionError extends KubenodeError {
  constructor(message: string, options?: KubenodeErrorOptions) {
    super('ERR_KUBENODE_PERMISSION', message, options);
    this.name = 'ConntrackPermissionError';
  }
}

/** ctnetlink is not available (nf_conntrack_netlink not loaded, or no netfilter netlink). */
export class ConntrackUnavailableError extends KubenodeError {
  constructor(message: string, options?: KubenodeErrorOptions) {
    super('ERR_KUBENODE_UNSUPPORTED', message, options);
    this.name = 'ConntrackUnavailableError';
  }
}

/** The handle was closed: a state error, not bad input (like Node's EBADF on a closed file). */
export class ConntrackClosedError extends KubenodeError {
  constructor(message = 'the conntrack handle is closed', options?: KubenodeErrorOptions) {
    super('ERR_KUBENODE_IO', message, options);
    this.name = 'ConntrackClosedError';
  }
}
