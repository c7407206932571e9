// Typed errors of the user-namespace manager. `kind` tells failures apart; the message is
// upstream's text wherever upstream has one.
import {
  KubenodeError,
  type KubenodeErrorCode,
  type KubenodeErrorKind,
  type KubenodeErrorOptions,
} from '../error-classes.js';

/** What went wrong in the user-namespace manager; finer than the `code`. */
export type UsernsErrorKind = KubenodeErrorKind;

/** An error of the user-namespace manager (`UserNsManager`), with upstream's message where it has one. */
export class UsernsError extends KubenodeError {
  /**
   * The kind of failure, e.g. `exhausted` when no range is free, `locked` when another
   * process holds the pods directory's lock.
   */
  declare readonly kind: UsernsErrorKind;
  constructor(
    code: KubenodeErrorCode,
    kind: UsernsErrorKind,
    message: string,
    options?: KubenodeErrorOptions,
  ) {
    super(code, message, { ...options, kind });
    this.name = 'UsernsError';
  }
}
