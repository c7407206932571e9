// Typed errors. Every binding failure has one shape (`NativeError`: `code`, `kind`, `scope`,
// `message`), thrown by synchronous calls and carried as `error` by task outcomes;
// `fromNative` turns either into an instance of the classes below, picked from `code`, `kind`
// and `scope` alone (never from message text), so callers can use `instanceof` as well as
// `code`.
import type { NativeError, ErrorScope as NativeScope, Outcome } from './binding.js';
import {
  ConntrackClosedError,
  ConntrackFamilyError,
  ConntrackPermissionError,
  ConntrackUnavailableError,
} from './conntrack/error-classes.js';
import {
  type AnyKubenodeError,
  type KubenodeErrorCode as ErrorCode,
  type KubenodeErrorKind as ErrorKind,
  isKubenodeError,
  KubenodeError,
  type KubenodeErrorOptions,
  KubenodeRangeError,
  KubenodeTypeError,
} from './error-classes.js';
import { UsernsError } from './userns/errors.js';

export * from './error-classes.js';

/** The subsystem a failure comes from (the binding's `ErrorScope` values). */
export type ErrorScope = `${NativeScope}`;

/** The fields a failure carries; `kind` and `scope` may be absent on errors from elsewhere. */
export interface NativeErrorLike {
  code: ErrorCode;
  kind?: ErrorKind;
  scope?: ErrorScope | null;
  message: string;
}

type Make = (e: NativeErrorLike & { kind: ErrorKind }, options: KubenodeErrorOptions) => AnyKubenodeError;

/** The generic class of each code. */
const BY_CODE: Record<ErrorCode, Make> = {
  ERR_KUBENODE_INVALID_ARG: (e, o) => new KubenodeTypeError(e.message, o),
  ERR_KUBENODE_OUT_OF_RANGE: (e, o) => new KubenodeRangeError(e.message, o),
  ERR_KUBENODE_IO: (e, o) => new KubenodeError(e.code, e.message, o),
  ERR_KUBENODE_PERMISSION: (e, o) => new KubenodeError(e.code, e.message, o),
  ERR_KUBENODE_PARSE: (e, o) => new KubenodeError(e.code, e.message, o),
  ERR_KUBENODE_CONFLICT: (e, o) => new KubenodeError(e.code, e.message, o),
  ERR_KUBENODE_UNSUPPORTED: (e, o) => new KubenodeError(e.code, e.message, o),
  ERR_KUBENODE_BINDING_MISSING: (e, o) => new KubenodeError(e.code, e.message, o),
  ERR_KUBENODE_INTERNAL: (e, o) => new KubenodeError(e.code, e.message, o),
};

const userns: Make = (e, o) => new UsernsError(e.code, e.kind, e.message, o);
const ctUnavailable: Make = (e, o) => new ConntrackUnavailableError(e.message, o);

/**
 * The subsystem classes, by kind then scope; a kind or scope without an entry takes the
 * code's generic class. Every kind has a row, so a new kind needs a decision here.
 */
export const ERROR_CLASSES: Record<ErrorKind, { readonly [S in ErrorScope]?: Make }> = {
  'invalid-argument': {},
  'out-of-range': {},
  family: { conntrack: (e, o) => new ConntrackFamilyError(e.message, o) },
  closed: { conntrack: (e, o) => new ConntrackClosedError(e.message, o) },
  busy: {},
  permission: { conntrack: (e, o) => new ConntrackPermissionError(e.message, o), userns },
  unavailable: { conntrack: ctUnavailable },
  // A conntrack error known only by its code ERR_KUBENODE_UNSUPPORTED.
  unsupported: { conntrack: ctUnavailable, userns },
  parse: { userns },
  io: { userns },
  config: { userns },
  conflict: { userns },
  exhausted: { userns },
  locked: { userns },
  'invalid-pod-uid': { userns },
  'kubernetes-version': {},
};

/** The kind of an error that reports only a code (one not built by the binding). */
const KIND_OF_CODE: Record<ErrorCode, ErrorKind> = {
  ERR_KUBENODE_INVALID_ARG: 'invalid-argument',
  ERR_KUBENODE_OUT_OF_RANGE: 'out-of-range',
  ERR_KUBENODE_IO: 'io',
  ERR_KUBENODE_PERMISSION: 'permission',
  ERR_KUBENODE_PARSE: 'parse',
  ERR_KUBENODE_CONFLICT: 'conflict',
  ERR_KUBENODE_UNSUPPORTED: 'unsupported',
  ERR_KUBENODE_BINDING_MISSING: 'io',
  ERR_KUBENODE_INTERNAL: 'io',
};

function isCode(v: unknown): v is ErrorCode {
  return typeof v === 'string' && Object.hasOwn(BY_CODE, v);
}

function isKind(v: unknown): v is ErrorKind {
  return typeof v === 'string' && Object.hasOwn(ERROR_CLASSES, v);
}

// napi's own argument-conversion statuses (e.g. a string where a number belongs).
const NAPI_TYPE_STATUSES = new Set([
  'InvalidArg',
  'NumberExpected',
  'StringExpected',
  'BooleanExpected',
  'ObjectExpected',
  'ArrayExpected',
  'FunctionExpected',
  'BigintExpected',
]);

/**
 * Converts a binding failure into a typed error: an error thrown by a synchronous call, or a
 * task outcome's `error` (`NativeError`). `scope` stands in when the failure names none (an
 * error built elsewhere). Non-errors and kubenode errors pass through; a thrown error without
 * a kubenode code (a napi status) becomes ERR_KUBENODE_INTERNAL, so callers only ever see
 * KubenodeErrors.
 */
export function fromNative(e: unknown, scope?: ErrorScope): unknown {
  if (isKubenodeError(e)) return e;
  const thrown = e instanceof Error;
  if (!thrown && (typeof e !== 'object' || e === null)) return e;
  const f = e as Partial<Record<keyof NativeErrorLike, unknown>>;
  const message = typeof f.message === 'string' ? f.message : String(e);
  const options: KubenodeErrorOptions = thrown ? { cause: e } : {};
  if (!isCode(f.code)) {
    if (!thrown) return new KubenodeError('ERR_KUBENODE_INTERNAL', message);
    if (typeof f.code === 'string' && NAPI_TYPE_STATUSES.has(f.code))
      return new KubenodeTypeError(message, options);
    return new KubenodeError('ERR_KUBENODE_INTERNAL', message, options);
  }
  const given = isKind(f.kind) ? f.kind : undefined;
  const kind = given ?? KIND_OF_CODE[f.code];
  const s = typeof f.scope === 'string' ? (f.scope as ErrorScope) : scope;
  const fields = { code: f.code, kind, message };
  if (given !== undefined) options.kind = given;
  const make = (s === undefined ? undefined : ERROR_CLASSES[kind][s]) ?? BY_CODE[f.code];
  return make(fields, options);
}

/** A task outcome's value, or its `error` thrown as a typed error. */
export function outcomeOrThrow<T extends { error?: NativeError | null }>(o: T, scope?: ErrorScope): T {
  if (o.error) throw fromNative(o.error, scope);
  return o;
}

/** The value a task's `Outcome` carries, or its `error` thrown as a typed error. */
export function outcomeValue<T>(o: Outcome<T>, scope?: ErrorScope): T {
  if (o.error) throw fromNative(o.error, scope);
  if (o.value === undefined) throw new KubenodeError('ERR_KUBENODE_INTERNAL', 'the outcome carries no value');
  return o.value;
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

/**
 * The JS shape of a number the core checks: only `typeof`. Whether it is whole and in range is
 * the core's rule (and message); a non-number is refused here in the same words.
 */
export function assertNumber(what: string, v: unknown): number {
  if (typeof v !== 'number') {
    throw new KubenodeTypeError(`${what} must be an integer, got ${describe(v)}`);
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
  if (Array.isArray(v)) return 'array';
  return typeof v;
}
