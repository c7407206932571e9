// Batch calls of AllocationBitmap: the same slots as single calls, typed errors on bad input,
// and a failing batch loses nothing.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bitmap, KubenodeRangeError, KubenodeTypeError } from '../ts/index.js';

const { AllocationBitmap, MAX_BATCH } = bitmap;

describe('AllocationBitmap batches', () => {
  it('allocateNext(n) hands out exactly what n single calls would, and reports a short batch exactly', () => {
    const a = new AllocationBitmap(100, 'b', { seed: 9 });
    const b = new AllocationBitmap(100, 'b', { seed: 9 });
    const batch = a.allocateNext(60);
    const single = Array.from({ length: 60 }, () => b.allocateNext());
    expect(batch).toEqual(single);
    const rest = a.allocateNext(60);
    expect(rest).toHaveLength(40);
    expect(new Set([...batch, ...rest]).size).toBe(100);
    expect(a.free()).toBe(0);
    expect(a.allocateNext(5)).toEqual([]);
    expect(a.allocateNext(0)).toEqual([]);
  });

  it('allocateNextInto fills a caller array and leaves the rest untouched when the map fills', () => {
    const m = new AllocationBitmap(10, 'b', { strategy: 'contiguous-scan' });
    const out = new Uint32Array(16).fill(0xffffffff);
    expect(m.allocateNextInto(out)).toBe(10);
    expect(Array.from(out.subarray(0, 10))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(Array.from(out.subarray(10))).toEqual(new Array(6).fill(0xffffffff));
  });

  it('releaseMany frees each slot once and counts what was taken', () => {
    const m = new AllocationBitmap(64, 'b', { strategy: 'contiguous-scan' });
    m.allocateNext(10);
    expect(m.releaseMany([1, 1, 3, 50, 1e12])).toBe(2);
    expect(m.releaseMany(Uint32Array.of(0, 2, 2, 4294967295))).toBe(2);
    expect(m.toArray()).toEqual([4, 5, 6, 7, 8, 9]);
  });

  it('bad input throws a typed error and changes nothing', () => {
    const m = new AllocationBitmap(32, 'b', { seed: 3 });
    const taken = m.allocateNext(20);
    const before = m.toArray();
    for (const bad of [
      [1, 2.5],
      [3, Number.NaN],
      [4, '5'],
    ] as unknown[][]) {
      expect(() => m.releaseMany(bad as number[])).toThrow(KubenodeTypeError);
      expect(m.toArray()).toEqual(before);
    }
    for (const bad of [
      [1, 2, -1],
      [2, 2 ** 60],
    ]) {
      expect(() => m.releaseMany(bad)).toThrow(KubenodeRangeError);
      expect(m.toArray()).toEqual(before);
    }
    expect(() => m.releaseMany('12' as unknown as number[])).toThrow(KubenodeTypeError);
    expect(() => m.allocateNext(-1)).toThrow(KubenodeRangeError);
    expect(() => m.allocateNext(1.5)).toThrow(KubenodeTypeError);
    expect(() => m.allocateNext(2 ** 33)).toThrow(KubenodeRangeError);
    expect(() => m.allocateNextInto(new Float64Array(4) as unknown as Uint32Array)).toThrow(
      KubenodeTypeError,
    );
    expect(m.toArray()).toEqual(before);
    expect(m.count()).toBe(taken.length);
  });

  it('hostile batch inputs get typed errors, run no caller code and leak or lose no slot', () => {
    const m = new AllocationBitmap(10_000, 'r', { strategy: 'contiguous-scan' });
    m.allocateNext(10);
    const before = m.toArray();
    const unchanged = () => expect(m.toArray()).toEqual(before);
    // A BigInt, alone or after valid offsets, staged or not.
    for (const bad of [[1n], [1, 2, 3n], [...Array.from({ length: 3000 }, () => 1), 2n]]) {
      expect(() => m.releaseMany(bad as unknown as number[])).toThrow(KubenodeTypeError);
      unchanged();
    }
    // A proxy of a Uint32Array is refused before any of its traps run.
    let traps = 0;
    const handler = {
      get: (t: Uint32Array, k: PropertyKey) => {
        traps++;
        return Reflect.get(t, k, t);
      },
      getPrototypeOf: (t: Uint32Array) => {
        traps++;
        return Reflect.getPrototypeOf(t);
      },
    };
    expect(() => m.releaseMany(new Proxy(new Uint32Array(2), {}))).toThrow(KubenodeTypeError);
    expect(() => m.releaseMany(new Proxy(Uint32Array.of(0, 1), handler))).toThrow(KubenodeTypeError);
    expect(() => m.allocateNextInto(new Proxy(new Uint32Array(2), handler))).toThrow(KubenodeTypeError);
    expect(traps).toBe(0);
    unchanged();
    // A batch too large to return as an array: refused before anything is taken.
    for (const n of [2 ** 32, MAX_BATCH + 1]) {
      expect(() => m.allocateNext(n)).toThrow(KubenodeRangeError);
      unchanged();
    }
    // A subclass whose `length` lies: exactly the array's real length is taken and stored.
    class Liar extends Uint32Array {
      constructor(
        n: number,
        readonly claimed: number,
      ) {
        super(n);
      }
      override get length(): number {
        return this.claimed;
      }
    }
    for (const [real, claimed] of [
      [2, 50],
      [3000, 2],
      [2, 5000],
    ] as const) {
      const out = new Liar(real, claimed);
      const count = m.count();
      expect(m.allocateNextInto(out)).toBe(real);
      expect(m.count()).toBe(count + real);
      expect(new Set(Array.from(Uint32Array.from(out.subarray(0, real)))).size).toBe(real);
      expect(m.releaseMany(out)).toBe(real);
      expect(m.count()).toBe(count);
    }
    unchanged();
    // Each element of a large array is read once: what was checked is what is released.
    const slots = Array.from({ length: 3000 }, () => 0);
    let reads = 0;
    Object.defineProperty(slots, 1, { get: () => (reads++ === 0 ? 5 : 1.5) });
    expect(m.releaseMany(slots)).toBe(2);
    expect(reads).toBe(1);
    expect(m.toArray()).toEqual(before.filter((i) => i !== 0 && i !== 5));
  });

  it('agrees with a plain TypeScript model under random batch sequences', () => {
    type Op = { kind: 'next'; n: number } | { kind: 'release'; slots: number[]; typed: boolean };
    const op = (max: number): fc.Arbitrary<Op> =>
      fc.oneof(
        fc.record({ kind: fc.constant('next' as const), n: fc.integer({ min: 0, max: max + 4 }) }),
        fc.record({
          kind: fc.constant('release' as const),
          slots: fc.array(fc.integer({ min: 0, max: max + 4 }), { maxLength: 40 }),
          typed: fc.boolean(),
        }),
      );
    fc.assert(
      fc.property(
        fc
          .integer({ min: 0, max: 200 })
          .chain((max) => fc.tuple(fc.constant(max), fc.array(op(max), { maxLength: 30 }))),
        ([max, ops]) => {
          const m = new AllocationBitmap(max, 'p', { seed: 5 });
          const model = new Set<number>();
          for (const o of ops) {
            if (o.kind === 'next') {
              const got = m.allocateNext(o.n);
              expect(got).toHaveLength(Math.min(o.n, max - model.size));
              for (const i of got) {
                expect(i >= 0 && i < max && !model.has(i)).toBe(true);
                model.add(i);
              }
            } else {
              let freed = 0;
              for (const i of new Set(o.slots)) if (model.delete(i)) freed++;
              expect(m.releaseMany(o.typed ? Uint32Array.from(o.slots) : o.slots)).toBe(freed);
            }
            expect(m.count()).toBe(model.size);
          }
          expect(m.toArray()).toEqual([...model].sort((x, y) => x - y));
        },
      ),
      { numRuns: 200 },
    );
  });
});
