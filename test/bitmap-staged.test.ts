// The staged calls of AllocationBitmap (one staging area per thread shared with Rust): batches
// larger than the area, maps interleaved on the one area, code that runs while a batch is being
// staged, and errors, all giving exactly what the unstaged single calls give.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { bitmap, KubenodeRangeError, KubenodeTypeError } from '../ts/index.js';
import { native, nativePath } from '../ts/native.js';

const { AllocationBitmap } = bitmap;
const { capacity } = native.bitmapStageLayout();

/** `n` single calls, the reference for any batch. */
function singles(m: bitmap.AllocationBitmap, n: number): number[] {
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    const i = m.allocateNext();
    if (i === null) break;
    out.push(i);
  }
  return out;
}

describe('AllocationBitmap staged calls', () => {
  it('batches larger than the staging area hand out what single calls would', () => {
    const max = 4 * capacity;
    const a = new AllocationBitmap(max, 's', { seed: 21 });
    const b = new AllocationBitmap(max, 's', { seed: 21 });
    const n = capacity + 7;
    const batch = a.allocateNext(n);
    expect(batch).toEqual(singles(b, n));
    const out = new Uint32Array(2 * capacity + 3);
    expect(a.allocateNextInto(out)).toBe(out.length);
    expect(Array.from(out)).toEqual(singles(b, out.length));
    // Releases larger than the area, as numbers (two words each) and as u32 slots.
    const numbers = batch.slice(0, capacity / 2 + 1);
    expect(a.releaseMany(numbers)).toBe(numbers.length);
    expect(a.releaseMany(out)).toBe(out.length);
    for (const i of [...numbers, ...out]) expect(a.has(i)).toBe(false);
    expect(a.count()).toBe(n - numbers.length);
  });

  it('two maps interleaved on the one staging area each get their own sequence', () => {
    const map = (seed: number) => new AllocationBitmap(300, 'i', { seed });
    const [a, b, a2, b2] = [map(1), map(2), map(1), map(2)];
    const got: { a: number[]; b: number[] } = { a: [], b: [] };
    for (let k = 0; k < 20; k++) {
      got.a.push(a.allocateNext() as number, ...a.allocateNext(k % 5));
      got.b.push(...b.allocateNext(3), b.allocateNext() as number);
      a.release(got.a[k] as number);
      b.releaseMany([got.b[k] as number]);
    }
    // The same calls map by map, never interleaved.
    const want: { a: number[]; b: number[] } = { a: [], b: [] };
    for (let k = 0; k < 20; k++) {
      want.a.push(a2.allocateNext() as number, ...a2.allocateNext(k % 5));
      a2.release(want.a[k] as number);
    }
    for (let k = 0; k < 20; k++) {
      want.b.push(...b2.allocateNext(3), b2.allocateNext() as number);
      b2.releaseMany([want.b[k] as number]);
    }
    expect(got).toEqual(want);
    expect(a.toArray()).toEqual(a2.toArray());
    expect(b.toArray()).toEqual(b2.toArray());
  });

  it('a batch whose element reads make staged calls on another map releases exactly its own slots', () => {
    const a = new AllocationBitmap(64, 'r', { strategy: 'contiguous-scan' });
    const other = new AllocationBitmap(64, 'r', { strategy: 'contiguous-scan' });
    a.allocateNext(8);
    const slots = [1, 2, 3, 4];
    let calls = 0;
    // An element getter that stages calls of its own: an allocation, a release of an offset
    // far from `a`'s slots, and a batch that overwrites the staged data.
    Object.defineProperty(slots, 2, {
      get: () => {
        calls++;
        other.allocateNext();
        other.release(40);
        other.releaseMany(Uint32Array.of(50, 51, 52, 53, 54));
        return 3;
      },
    });
    expect(a.releaseMany(slots)).toBe(4);
    expect(a.toArray()).toEqual([0, 5, 6, 7]);
    // However often the element was read, `other` holds just what its getter calls took.
    expect(calls).toBeGreaterThan(0);
    expect(other.toArray()).toEqual(Array.from({ length: calls }, (_, i) => i));
    // A proxy of a Uint32Array, whose element reads would run code too, is refused unread.
    const before = calls;
    const typed = new Proxy(Uint32Array.of(0, 5), {
      get: (t, k) => {
        calls++;
        other.allocateNext(3);
        const v = Reflect.get(t, k, t);
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
    expect(() => a.releaseMany(typed)).toThrow(KubenodeTypeError);
    expect(calls).toBe(before);
    expect(a.toArray()).toEqual([0, 5, 6, 7]);
  });

  it('a batch releasing free, repeated and out-of-range offsets counts only what was taken', () => {
    const m = new AllocationBitmap(16, 'f', { strategy: 'contiguous-scan' });
    m.allocateNext(6); // 0…5
    expect(m.releaseMany([4, 9, 4, 15, 16, 2 ** 40])).toBe(1);
    expect(m.releaseMany(Uint32Array.of(1, 1, 12, 0xffffffff))).toBe(1);
    m.release(10); // free: a no-op
    m.release(2 ** 52); // past 2^32: still a no-op, not truncated to a u32
    m.release(2 ** 32 + 2); // would be slot 2 if cut to 32 bits
    expect(m.toArray()).toEqual([0, 2, 3, 5]);
    expect(m.count()).toBe(4);
  });

  it('a full map and a map that cannot allocate answer as the unstaged calls do', () => {
    const full = new AllocationBitmap(3, 'x');
    expect(full.allocateNext(5)).toHaveLength(3);
    expect(full.allocateNext()).toBeNull();
    expect(full.allocateNext(2)).toEqual([]);
    expect(full.allocateNextInto(new Uint32Array(2))).toBe(0);

    const bad = new AllocationBitmap(10, 'x', { offset: 16 });
    const message = 'offset 16 must be smaller than the bitmap size 10';
    expect(() => bad.allocateNext()).toThrow(KubenodeRangeError);
    expect(() => bad.allocateNext()).toThrow(message);
    expect(() => bad.allocateNext(4)).toThrow(message);
    expect(() => bad.allocateNextInto(new Uint32Array(4))).toThrow(KubenodeRangeError);
    expect(bad.count()).toBe(0);
    // Bad offsets are refused before anything is released.
    bad.allocate(1);
    expect(() => bad.releaseMany([1, -1])).toThrow(KubenodeRangeError);
    expect(() => bad.releaseMany([1, 0.5])).toThrow(KubenodeTypeError);
    expect(() => bad.release(Number.NaN)).toThrow(KubenodeTypeError);
    expect(bad.toArray()).toEqual([1]);
  });

  it('each worker thread gets its own staging area and registry', async () => {
    const here = new AllocationBitmap(1 << 16, 'w', { strategy: 'contiguous-scan' });
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      const n = require(workerData.path);
      const at = n.bitmapStageLayout();
      const words = new Uint32Array(n.bitmapStagingBuffer());
      const before = Array.from(words.subarray(0, 4));
      const m = new n.AllocationBitmap(4000, 'w', { strategy: 'contiguous-scan' });
      const out = [];
      for (let i = 0; i < 2000; i++) {
        words[at.slot] = m.slot;
        out.push(n.bitmapStagedAllocateNext());
      }
      parentPort.postMessage({ before, slot: m.slot, out, count: m.count() });
    `;
    const done = new Promise<{ before: number[]; slot: number; out: number[]; count: number }>(
      (resolve, reject) => {
        const w = new Worker(source, { eval: true, workerData: { path: nativePath() } });
        w.once('message', resolve);
        w.once('error', reject);
      },
    );
    // Keep this thread's staging area busy meanwhile.
    for (let i = 0; i < 2000; i++) here.allocateNext(2);
    const r = await done;
    expect(r.before).toEqual([0, 0, 0, 0]);
    expect(r.out).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(r.count).toBe(2000);
    expect(here.count()).toBe(4000);
    expect(here.toArray()).toEqual(Array.from({ length: 4000 }, (_, i) => i));
  });
});
