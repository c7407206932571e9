import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bitmap, KubenodeError, KubenodeRangeError, KubenodeTypeError } from '../ts/index.js';
import { native } from '../ts/native.js';

const { AllocationBitmap } = bitmap;

describe('AllocationBitmap', () => {
  it('hands out every slot once, then null, and reuses a released slot', () => {
    const m = new AllocationBitmap(256, 'test', { seed: 1 });
    const seen = new Set<number>();
    for (let k = 0; k < 256; k++) {
      const i = m.allocateNext();
      expect(i).not.toBeNull();
      expect(seen.has(i as number)).toBe(false);
      seen.add(i as number);
    }
    expect(m.allocateNext()).toBeNull();
    expect(m.free()).toBe(0);
    expect(m.count()).toBe(256);
    m.release(17);
    expect(m.has(17)).toBe(false);
    expect(m.allocateNext()).toBe(17);
  });

  it('allocate reports taken slots and upstream out-of-range errors', () => {
    const m = new AllocationBitmap(32, 'test');
    expect(m.allocate(3)).toBe(true);
    expect(m.allocate(3)).toBe(false);
    expect(() => m.allocate(32)).toThrow(KubenodeRangeError);
    expect(() => m.allocate(32)).toThrow('offset 32 out of range [0,32]');
    expect(() => m.allocate(-1)).toThrow('offset -1 out of range [0,32]');
  });

  it('release of a free or out-of-range slot is a no-op', () => {
    const m = new AllocationBitmap(8, 'test');
    m.release(2);
    m.release(100);
    expect(m.free()).toBe(8);
  });

  it('contiguous scan returns the lowest free slot', () => {
    const m = new AllocationBitmap(10, 'test', { strategy: 'contiguous-scan' });
    expect(Array.from({ length: 10 }, () => m.allocateNext())).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(m.allocateNext()).toBeNull();
  });

  it('offset keeps the lower block for last', () => {
    const m = new AllocationBitmap(64, 'test', { offset: 16, seed: 3 });
    for (let k = 0; k < 48; k++) expect(m.allocateNext()).toBeGreaterThanOrEqual(16);
    for (let k = 0; k < 16; k++) expect(m.allocateNext()).toBeLessThan(16);
  });

  it('forEach and toArray visit taken slots in ascending order', () => {
    const m = new AllocationBitmap(100, 'test');
    for (const i of [42, 7, 99, 0]) m.allocate(i);
    const visited: number[] = [];
    m.forEach((i) => {
      visited.push(i);
    });
    expect(visited).toEqual([0, 7, 42, 99]);
    expect(m.toArray()).toEqual([0, 7, 42, 99]);
  });

  it('forEach callbacks may mutate or restore the map; the native class has no forEach', () => {
    // A native forEach would run JS while a Rust iterator borrows the map's words.
    expect('forEach' in native.AllocationBitmap.prototype).toBe(false);
    const m = new AllocationBitmap(4096, 'test');
    for (const i of [1, 70, 4000]) m.allocate(i);
    const empty = new AllocationBitmap(4096, 'test').snapshot();
    const visited: number[] = [];
    m.forEach((i) => {
      visited.push(i);
      m.restore(empty.range, empty.data);
      m.allocate(4095);
      m.release(70);
    });
    expect(visited).toEqual([1, 70, 4000]);
    expect(m.toArray()).toEqual([4095]);
  });

  it('snapshot uses big.Int bytes and restores into another map', () => {
    const m = new AllocationBitmap(32, 'user namespaces');
    expect(m.snapshot().data.length).toBe(0);
    m.allocate(0);
    m.allocate(9);
    const snap = m.snapshot();
    expect(snap.range).toBe('user namespaces');
    expect([...snap.data]).toEqual([0x02, 0x01]);
    const other = new AllocationBitmap(32, 'user namespaces');
    other.restore(snap.range, snap.data);
    expect(other.toArray()).toEqual([0, 9]);
    expect(() => other.restore('other', snap.data)).toThrow(
      'the provided range does not match the current range',
    );
    expect(() => other.restore('other', snap.data)).toThrow(KubenodeError);
  });

  it('accepts an offset past the size, as upstream NewAllocationMapWithOffset(10, "test", 16)', () => {
    // Upstream TestSnapshotAndRestore, its offset case.
    const m = new AllocationBitmap(10, 'test', { offset: 16 });
    expect(m.allocate(3)).toBe(true);
    const snap = m.snapshot();
    const m2 = new AllocationBitmap(10, 'test', { offset: 16 });
    m2.restore(snap.range, snap.data);
    expect(m2.count()).toBe(1);
    expect(m2.has(3)).toBe(true);
    // Where upstream's random scan would panic, a typed error; nothing is taken.
    expect(() => m2.allocateNext()).toThrow(KubenodeRangeError);
    expect(() => m2.allocateNext()).toThrow('offset 16 must be smaller than the bitmap size 10');
    expect(m2.count()).toBe(1);
    for (let i = 0; i < 10; i++) m2.allocate(i);
    expect(m2.allocateNext()).toBeNull();
  });

  it('takes the strategy names, their default and the unknown-name message from the native side', () => {
    const unknown = 'strategy must be "random-scan" or "contiguous-scan", got "best-fit"';
    const viaFacade = () => new AllocationBitmap(10, 'x', { strategy: 'best-fit' as 'random-scan' });
    expect(viaFacade).toThrow(KubenodeTypeError);
    expect(viaFacade).toThrow(unknown);
    expect(() => new native.AllocationBitmap(10, 'x', { strategy: 'best-fit' })).toThrow(
      expect.objectContaining({ code: 'ERR_KUBENODE_INVALID_ARG', message: unknown }),
    );
    expect(() => new AllocationBitmap(10, 'x', { strategy: 5 as unknown as 'random-scan' })).toThrow(
      'strategy must be a string, got 5',
    );
    // The default is the random scan: the offset applies (slots below it last).
    const m = new AllocationBitmap(8, 'x', { offset: 4, seed: 2 });
    expect([0, 1, 2, 3].map(() => m.allocateNext()).every((i) => i !== null && i >= 4)).toBe(true);
    // The contiguous scan has no offset: an out-of-range one is not looked at.
    const c = new native.AllocationBitmap(8, 'x', { strategy: 'contiguous-scan', offset: -1 });
    expect(c.allocateNext()).toBe(0);
  });

  it('rejects bad arguments with typed errors', () => {
    expect(() => new AllocationBitmap(-1, 'x')).toThrow(KubenodeRangeError);
    expect(() => new AllocationBitmap(Number.NaN, 'x')).toThrow(KubenodeTypeError);
    expect(() => new AllocationBitmap(1.5, 'x')).toThrow(KubenodeTypeError);
    expect(() => new AllocationBitmap(2 ** 33, 'x')).toThrow(KubenodeRangeError);
    expect(() => new AllocationBitmap('10' as unknown as number, 'x')).toThrow(KubenodeTypeError);
    expect(() => new AllocationBitmap(10, 5 as unknown as string)).toThrow(KubenodeTypeError);
    expect(() => new AllocationBitmap(10, 'x', { strategy: 'best-fit' as 'random-scan' })).toThrow(
      KubenodeTypeError,
    );
    const m = new AllocationBitmap(16, 'x');
    expect(() => m.allocate(Number.NaN)).toThrow(KubenodeTypeError);
    expect(() => m.allocate(0.5)).toThrow(KubenodeTypeError);
    expect(() => m.release(-1)).toThrow(KubenodeRangeError);
    expect(() => m.has(Number.POSITIVE_INFINITY)).toThrow(KubenodeTypeError);
    expect(() => m.restore('x', [1, 2] as unknown as Uint8Array)).toThrow(KubenodeTypeError);
    expect(() => m.restore('x', Buffer.from([1, 0, 0]))).toThrow(/at most 2/);
    expect(m.count()).toBe(0);
  });

  it('agrees with a boolean-array model on random operation sequences', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.array(fc.tuple(fc.constantFrom('alloc', 'next', 'release'), fc.nat(220)), { maxLength: 300 }),
        (max, ops) => {
          const m = new AllocationBitmap(max, 'p', { seed: 9 });
          const model = new Array<boolean>(max).fill(false);
          for (const [op, n] of ops) {
            if (op === 'alloc') {
              if (n >= max) expect(() => m.allocate(n)).toThrow(KubenodeRangeError);
              else {
                expect(m.allocate(n)).toBe(!model[n]);
                model[n] = true;
              }
            } else if (op === 'next') {
              const i = m.allocateNext();
              if (i === null) expect(model.every(Boolean)).toBe(true);
              else {
                expect(model[i]).toBe(false);
                model[i] = true;
              }
            } else {
              m.release(n);
              if (n < max) model[n] = false;
            }
          }
          expect(m.toArray()).toEqual(model.flatMap((b, i) => (b ? [i] : [])));
        },
      ),
      { numRuns: 200 },
    );
  });
});
