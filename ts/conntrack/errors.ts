// Conntrack-specific typed errors. Binding failures become these (or the generic typed errors)
// in `fromNative` (ts/errors.ts), by `code`, `kind` and `scope`, never by message.
import { fromNative, KubenodeError } from '../errors.js';

export {
  ConntrackClosedError,
  ConntrackFamilyError,
  ConntrackPermissionError,
  ConntrackUnavailableError,
} from './error-classes.js';

/** `fromNative` for conntrack: a failure that names no scope is taken as conntrack's. */
export function conntrackError(e: unknown): Error {
  const err = fromNative(e, 'conntrack');
  return err instanceof Error ? err : new KubenodeError('ERR_KUBENODE_INTERNAL', String(err));
}
