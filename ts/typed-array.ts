// Brand and length checks of typed arrays that run no caller code: `instanceof` asks a proxy's
// `getPrototypeOf` trap, and `.length` calls whatever getter a subclass or proxy defines.
import { KubenodeTypeError } from './errors.js';

const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
const intrinsic = (key: PropertyKey): ((this: unknown) => unknown) => {
  const get = Object.getOwnPropertyDescriptor(typedArrayPrototype, key)?.get;
  if (!get) throw new Error(`TypedArray.prototype has no ${String(key)} getter`);
  return get;
};
const tagOf = intrinsic(Symbol.toStringTag);
const lengthOf = intrinsic('length');

/**
 * The element count of `v` when it is a real `Uint32Array` (a subclass's own `length` getter is
 * ignored); otherwise throws a KubenodeTypeError (`<what> must be a Uint32Array`, or `message`).
 */
export function uint32ArrayLength(what: string, v: unknown, message?: string): number {
  // isView is false for a proxy; the intrinsic tag getter answers only for real typed arrays.
  if (!ArrayBuffer.isView(v) || tagOf.call(v) !== 'Uint32Array') {
    throw new KubenodeTypeError(message ?? `${what} must be a Uint32Array`);
  }
  return lengthOf.call(v) as number;
}
