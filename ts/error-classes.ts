// The error classes: a leaf module (the subsystem classes extend these, and `errors.ts` maps
// binding errors onto all of them).
import type { ErrorCode, ErrorKind } from './binding.js';

/** Stable `code` of every kubenode error, one per kind of failure (the binding's `ErrorCode` values). */
export type KubenodeErrorCode = `${ErrorCode}`;

/** What went wrong, finer than the code: the core's class of failure (the binding's `ErrorKind` values). */
export type KubenodeErrorKind = `${ErrorKind}`;

/** Options of the kubenode error constructors. */
export interface KubenodeErrorOptions {
  /** The underlying error. */
  cause?: unknown;
  /** The core's class of failure, when known. */
  kind?: KubenodeErrorKind;
}

// One hierarchy, as Node's own `ERR_*` errors: every error kubenode throws is
// `instanceof KubenodeError` and carries a stable `code`; the kinds that Node reports as
// TypeError/RangeError are also `instanceof TypeError`/`RangeError`. JavaScript has single
// inheritance, so the subclasses extend the built-in kind and carry a brand that
// `KubenodeError[Symbol.hasInstance]` recognises.
const BRAND: unique symbol = Symbol('kubenode.error');

function brand(e: object, options: KubenodeErrorOptions | undefined): void {
  Object.defineProperty(e, BRAND, { value: true });
  // Set only when known, so errors built in TypeScript carry no `kind: undefined`.
  if (options?.kind !== undefined) Object.assign(e, { kind: options.kind });
}

/** Base class of every error kubenode throws on purpose. */
export class KubenodeError extends Error {
  /** Stable `ERR_KUBENODE_*` code saying what kind of failure this is. */
  readonly code: KubenodeErrorCode;
  /** What went wrong, finer than `code`, when the core said (e.g. `family`, `exhausted`). */
  declare readonly kind?: KubenodeErrorKind;
  constructor(code: KubenodeErrorCode, message: string, options?: KubenodeErrorOptions) {
    super(message, options);
    this.name = 'KubenodeError';
    this.code = code;
    brand(this, options);
  }
}

// `x instanceof KubenodeError` is true for every kubenode error, the TypeError/RangeError kinds
// included; subclasses (`class X extends KubenodeError`) keep the ordinary prototype check, so
// the receiver (the class `instanceof` was asked about) decides.
Object.defineProperty(KubenodeError, Symbol.hasInstance, {
  value: function hasInstance(this: unknown, v: unknown): boolean {
    if (this !== KubenodeError) return Function.prototype[Symbol.hasInstance].call(this, v);
    return typeof v === 'object' && v !== null && (v as { [BRAND]?: boolean })[BRAND] === true;
  },
});

/** A kubenode error that is also a built-in error `E` (a `TypeError`, a `RangeError`) with a fixed `code`. */
export type BuiltinKubenodeError<E extends Error, C extends KubenodeErrorCode> = E & {
  /** Always the kind's one code. */
  readonly code: C;
  /** What went wrong, finer than `code`, when the core said. */
  readonly kind?: KubenodeErrorKind;
};

/** The constructor of a {@link BuiltinKubenodeError}. */
export type BuiltinKubenodeErrorClass<E extends Error, C extends KubenodeErrorCode> = new (
  message: string,
  options?: KubenodeErrorOptions,
) => BuiltinKubenodeError<E, C>;

// One definition for every built-in kind, as Node's own `ERR_INVALID_ARG_TYPE` is a TypeError.
function builtinKind<E extends Error, const C extends KubenodeErrorCode>(
  Base: new (message?: string, options?: ErrorOptions) => E,
  code: C,
  name: string,
): BuiltinKubenodeErrorClass<E, C> {
  const Kind = class extends (Base as new (message?: string, options?: ErrorOptions) => Error) {
    readonly code = code;
    constructor(message: string, options?: KubenodeErrorOptions) {
      super(message, options);
      this.name = name;
      brand(this, options);
    }
  };
  Object.defineProperty(Kind, 'name', { value: name });
  return Kind as unknown as BuiltinKubenodeErrorClass<E, C>;
}

/** A value of the wrong type or shape (not a number, not an integer, malformed text). */
export const KubenodeTypeError = builtinKind<TypeError, 'ERR_KUBENODE_INVALID_ARG'>(
  TypeError,
  'ERR_KUBENODE_INVALID_ARG',
  'KubenodeTypeError',
);
/** A value of the wrong type or shape (not a number, not an integer, malformed text). */
export type KubenodeTypeError = BuiltinKubenodeError<TypeError, 'ERR_KUBENODE_INVALID_ARG'>;

/** A number outside the range an operation accepts. */
export const KubenodeRangeError = builtinKind<RangeError, 'ERR_KUBENODE_OUT_OF_RANGE'>(
  RangeError,
  'ERR_KUBENODE_OUT_OF_RANGE',
  'KubenodeRangeError',
);
/** A number outside the range an operation accepts. */
export type KubenodeRangeError = BuiltinKubenodeError<RangeError, 'ERR_KUBENODE_OUT_OF_RANGE'>;

/** Every kubenode error: `KubenodeError` and its TypeError/RangeError kinds. */
export type AnyKubenodeError = KubenodeError | KubenodeTypeError | KubenodeRangeError;

/** True for every error kubenode throws (same as `e instanceof KubenodeError`). */
export function isKubenodeError(e: unknown): e is AnyKubenodeError {
  return e instanceof KubenodeError;
}
