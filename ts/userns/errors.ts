// Typed errors of the user-namespace manager. `kind` tells failures apart; the message is
// upstream's text wherever upstream has one.
import { KubenodeError, type KubenodeErrorCode } from '../errors.js';

/** What went wrong in the user-namespace manager; finer than the `code`. */
export type UsernsErrorKind =
  | 'config'
  | 'parse'
  | 'conflict'
  | 'exhausted'
  | 'locked'
  | 'invalid-pod-uid'
  | 'io'
  | 'permission'
  | 'unsupported';

/** An error of the user-namespace manager (`UserNsManager`), with upstream's message where it has one. */
export class UsernsError extends KubenodeError {
  /**
   * The kind of failure, e.g. `exhausted` when no range is free, `locked` when another
   * process holds the pods directory's lock.
   */
  readonly kind: UsernsErrorKind;
  constructor(
    code: KubenodeErrorCode,
    kind: UsernsErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'UsernsError';
    this.kind = kind;
  }
}

/** Converts a binding task error (`{ code, kind, message }`) into a `UsernsError`. */
export function fromTask(e: { code: string; kind: string; message: string }): UsernsError {
  return new UsernsError(e.code as KubenodeErrorCode, e.kind as UsernsErrorKind, e.message);
}
