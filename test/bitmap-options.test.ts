// The constructor's options are checked by the core (kubenode_bitmap::BitmapOptions); called on
// the binding directly or through the façade (which checks only JS shapes), they fail with the typed errors.
import { describe, expect, it } from 'vitest';
import { fromNative, KubenodeRangeError, KubenodeTypeError } from '../ts/errors.js';
import { native } from '../ts/native.js';

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return fromNative(e);
  }
  throw new Error('did not throw');
}

describe('AllocationBitmap options, checked natively', () => {
  it('a fractional or non-finite number is a type error, one out of range a range error', () => {
    const make = (o: object) => () => new native.AllocationBitmap(8, 'r', o);
    const cases: Array<[object, unknown, string, string]> = [
      [{ offset: 1.5 }, KubenodeTypeError, 'ERR_KUBENODE_INVALID_ARG', 'offset must be an integer, got 1.5'],
      [
        { offset: 2 ** 32 + 1 },
        KubenodeRangeError,
        'ERR_KUBENODE_OUT_OF_RANGE',
        'offset must be in [0, 4294967296], got 4294967297',
      ],
      [
        { seed: Number.NaN },
        KubenodeTypeError,
        'ERR_KUBENODE_INVALID_ARG',
        'seed must be an integer, got NaN',
      ],
      [
        { seed: -1 },
        KubenodeRangeError,
        'ERR_KUBENODE_OUT_OF_RANGE',
        'seed must be in [0, 9007199254740991], got -1',
      ],
      // The strategy is checked first; a contiguous scan has no offset to check.
      [
        { strategy: 'x', offset: 0.5 },
        KubenodeTypeError,
        'ERR_KUBENODE_INVALID_ARG',
        'strategy must be "random-scan" or "contiguous-scan", got "x"',
      ],
    ];
    for (const [o, cls, code, message] of cases) {
      const e = thrown(make(o));
      expect(e, JSON.stringify(o)).toBeInstanceOf(cls);
      expect(e).toMatchObject({ code, message });
    }
    expect(new native.AllocationBitmap(8, 'r', { strategy: 'contiguous-scan', offset: -3 }).max).toBe(8);
  });

  it('the seed and offset reach the map: equal seeds, equal sequences above the offset', () => {
    const seq = (seed: number) => {
      const m = new native.AllocationBitmap(64, 'r', { offset: 16, seed });
      return Array.from({ length: 48 }, () => m.allocateNext());
    };
    const a = seq(7);
    expect(seq(7)).toEqual(a);
    expect(seq(8)).not.toEqual(a);
    // The 48 slots at or above the offset go first.
    expect([...a].sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual(Array.from({ length: 48 }, (_, i) => i + 16));
  });
});
