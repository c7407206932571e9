// Conntrack-specific typed errors. Binding failures become these (or the generic typed errors)
// in `fromNative` (ts/errors.ts), by `code`, `kind` and `scope`, never by message.
import type { NativeError } from '../binding.js';
import { fromNative, KubenodeError, outcomeOrThrow } from '../errors.js';

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

/** The core's report a task outcome carries, or its `error` thrown as a typed error. */
export function reportOf<R>(o: { report?: R | null; error?: NativeError | null }): R {
  const { report } = outcomeOrThrow(o);
  if (report == null) throw new KubenodeError('ERR_KUBENODE_INTERNAL', 'no report');
  return report;
}
