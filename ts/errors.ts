// Typed errors. The binding reports failures with an `ERR_KUBENODE_*` code; `fromNative` turns
// them into instances of these classes so callers can use `instanceof` as well as `code`.

/** Stable `code` of every kubenode error, one per kind of failure. */
export type KubenodeErrorCode =
  | 'ERR_KUBENODE_INVALID_ARG'
  | 'ERR_KUBENODE_OUT_OF_RANGE'
  | 'ERR_KUBENODE_IO'
  | 'ERR_KUBENODE_PERMISSION'
  | 'ERR_KUBENODE_PARSE'
  | 'ERR_KUBENODE_CONFLICT'
  | 'ERR_KUBENODE_UNSUPPORTED'
  | 'ERR_KUBENODE_BINDING_MISSING'
  | 'ERR_KUBENODE_INTERNAL';

const CODES = new Set<string>([
  'ERR_KUBENODE_INVALID_ARG',
  'ERR_KUBENODE_OUT_OF_RANGE',
  'ERR_KUBENODE_IO',
  'ERR_KUBENODE_PERMISSION',
  'ERR_KUBENODE_PARSE',
  'ERR_KUBENODE_CONFLICT',
  'ERR_KUBENODE_UNSUPPORTED',
  'ERR_KUBENODE_BINDING_MISSING',
  'ERR_KUBENODE_INTERNAL',
]);

// One hierarchy, as Node's own `ERR_*` errors: every error kubenode throws is
// `instanceof KubenodeError` and carries a stable `code`; the kinds that Node reports as
// TypeError/RangeError are also `instanceof TypeError`/`RangeError`. JavaScript has single
// inheritance, so the subclasses extend the built-in kind and carry a brand that
// `KubenodeError[Symbol.hasInstance]` recognises.
const BRAND: unique symbol = Symbol('kubenode.error');

function brand(e: object): void {
  Object.defineProperty(e, BRAND, { value: true });
}

/** Base class of every error kubenode throws on purpose. */
export class KubenodeError extends Error {
  /** Stable `ERR_KUBENODE_*` code saying what kind of failure this is. */
  readonly code: KubenodeErrorCode;
  constructor(code: KubenodeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubenodeError';
    this.code = code;
    brand(this);
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

/** A value of the wrong type or shape (not a number, not an integer, malformed text). */
export class KubenodeTypeError extends TypeError {
  /** Always `ERR_KUBENODE_INVALID_ARG`. */
  readonly code = 'ERR_KUBENODE_INVALID_ARG' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubenodeTypeError';
    brand(this);
  }
}

/** A number outside the range an operation accepts. */
export class KubenodeRangeError extends RangeError {
  /** Always `ERR_KUBENODE_OUT_OF_RANGE`. */
  readonly code = 'ERR_KUBENODE_OUT_OF_RANGE' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KubenodeRangeError';
    brand(this);
  }
}

/** Every kubenode error: `KubenodeError` and its TypeError/RangeError kinds. */
export type AnyKubenodeError = KubenodeError | KubenodeTypeError | KubenodeRangeError;

/** True for every error kubenode throws (same as `e instanceof KubenodeError`). */
export function isKubenodeError(e: unknown): e is AnyKubenodeError {
  return e instanceof KubenodeError;
}

/**
 * Converts an error thrown by the binding into a typed error; non-errors pass through. A
 * binding error without a kubenode code (a napi status) becomes ERR_KUBENODE_INTERNAL, so
 * callers only ever see KubenodeErrors.
 */
export function fromNative(e: unknown): unknown {
  if (!(e instanceof Error) || isKubenodeError(e)) {
    return e;
  }
  const code = (e as { code?: unknown }).code;
  if (typeof code !== 'string' || !CODES.has(code)) {
    // Argument conversion failures from napi itself (e.g. a string where a number belongs).
    if (code === 'InvalidArg' || code === 'NumberExpected' || code === 'StringExpected') {
      return new KubenodeTypeError(e.message, { cause: e });
    }
    return new KubenodeError('ERR_KUBENODE_INTERNAL', e.message, { cause: e });
  }
  if (code === 'ERR_KUBENODE_INVALID_ARG') {
    return new KubenodeTypeError(e.message, { cause: e });
  }
  if (code === 'ERR_KUBENODE_OUT_OF_RANGE') {
    return new KubenodeRangeError(e.message, { cause: e });
  }
  return new KubenodeError(code as KubenodeErrorCode, e.message, { cause: e });
}

/** Runs `fn`, rethrowing binding errors as typed errors. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw fromNative(e);
  }
}

/** Awaits a binding promise, rejecting with typed errors. */
export async function awaitNative<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw fromNative(e);
  }
}

export function assertInteger(what: string, v: unknown, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new KubenodeTypeError(`${what} must be an integer, got ${describe(v)}`);
  }
  if (v < min || v > max) {
    throw new KubenodeRangeError(`${what} must be in [${min}, ${max}], got ${v}`);
  }
  return v;
}

export function assertString(what: string, v: unknown): string {
  if (typeof v !== 'string') {
    throw new KubenodeTypeError(`${what} must be a string, got ${describe(v)}`);
  }
  return v;
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v);
  return typeof v;
}
