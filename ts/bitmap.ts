// Allocation bitmap with upstream Kubernetes AllocationBitmap semantics
// (pkg/registry/core/service/allocator). State and search live in Rust; this class checks
// arguments and maps errors, one native call per operation. Single calls and number[] batches
// are staged (./bitmap-stage.ts): zero-argument native calls, falling back to the class methods.
import type { BitmapSnapshot, AllocationBitmap as NativeBitmap } from './binding.js';
import * as staged from './bitmap-stage.js';
import { assertInteger, assertNumber, assertString, callNative, KubenodeTypeError } from './errors.js';
import { native } from './native.js';
import { uint32ArrayLength } from './typed-array.js';

/** How `allocateNext` picks a free slot (upstream's `randomScanStrategy`/`contiguousScanStrategy`). */
export type Strategy = 'random-scan' | 'contiguous-scan';

/** Options of the `AllocationBitmap` constructor. */
export interface AllocationBitmapOptions {
  /** `random-scan` (upstream's default) or `contiguous-scan` (lowest free slot first). */
  strategy?: Strategy;
  /**
   * Random scan: slots below `offset` are handed out only once the rest is full. An offset at or
   * past `max` is accepted, as upstream's `NewAllocationMapWithOffset`; such a map restores,
   * answers `has` and `count`, but `allocateNext` throws a `KubenodeRangeError`.
   */
  offset?: number;
  /** Seed for the random scan, for reproducible sequences. */
  seed?: number;
}

// A bitmap's persisted state: the binding's shape, documented where the binding declares it.
export type { BitmapSnapshot } from './binding.js';

/** Largest supported size: one slot per 32-bit ID. */
export const MAX_SLOTS = 2 ** 32;

/**
 * Largest `n` of `allocateNext(n)`, whose answer is a fresh JS array (16 Mi slots, a /8 of IPv4
 * addresses): a larger batch would build gigabytes of numbers. `allocateNextInto` takes any size.
 */
export const MAX_BATCH = 2 ** 24;

/**
 * A fixed-size set of slots `[0, max)`, upstream's `AllocationBitmap`.
 * @param max number of slots, 0 to `MAX_SLOTS`.
 * @param rangeSpec text identifying the range (e.g. a CIDR), stored in snapshots.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) for a non-integer `max`/`offset`/`seed`, a non-string
 * `rangeSpec` or an unknown strategy; KubenodeRangeError (`ERR_KUBENODE_OUT_OF_RANGE`) for `max` or
 * `offset` outside [0, 2^32].
 */
export class AllocationBitmap {
  readonly #n: NativeBitmap;
  /** This map's number in the binding's registry, which staged calls name it by. */
  readonly #slot: number;

  constructor(max: number, rangeSpec: string, options: AllocationBitmapOptions = {}) {
    assertNumber('max', max);
    assertString('rangeSpec', rangeSpec);
    const { strategy, offset, seed } = options;
    // The names, the default and the message for an unknown one are the native side's.
    if (strategy !== undefined) assertString('strategy', strategy);
    // Only the JS shapes here: whole numbers in range is the core's rule, in its words.
    if (offset !== undefined) assertNumber('offset', offset);
    if (seed !== undefined) assertNumber('seed', seed);
    this.#n = callNative(() => new native.AllocationBitmap(max, rangeSpec, { strategy, offset, seed }));
    this.#slot = this.#n.slot;
    staged.loadStage();
  }

  /** Number of slots. */
  get max(): number {
    return callNative(() => this.#n.max);
  }

  /** The range this map was created for. */
  get rangeSpec(): string {
    return callNative(() => this.#n.rangeSpec);
  }

  /** Reserves slot `i`: true when newly taken, false when already taken. Throws outside [0, max). */
  allocate(i: number): boolean {
    assertNumber('offset', i);
    return callNative(() => this.#n.allocate(i));
  }

  /**
   * Reserves a free slot chosen by the strategy, or returns null when the map is full. Throws a
   * `KubenodeRangeError` on a random-scan map whose offset is not below `max` (upstream panics).
   */
  allocateNext(): number | null;
  /**
   * Reserves up to `n` slots in one native call, exactly as `n` calls of `allocateNext()` would;
   * the result holds exactly the slots taken (fewer than `n` only when the map filled up).
   */
  allocateNext(n: number): number[];
  allocateNext(n?: number): number | null | number[] {
    if (n === undefined) {
      const r = staged.allocateNext(this.#slot);
      return r !== undefined ? r : callNative(() => this.#n.allocateNext());
    }
    assertInteger('n', n, 0, MAX_BATCH);
    const many = staged.allocateNextMany(this.#slot, n);
    if (many !== undefined) return many;
    // Sized by what can still be taken: at most `free()` slots, whatever `n` asks for.
    const out = new Uint32Array(
      Math.min(
        n,
        callNative(() => this.#n.free()),
      ),
    );
    return Array.from(
      out.subarray(
        0,
        callNative(() => this.#n.allocateNextInto(out)),
      ),
    );
  }

  /**
   * Fills `out` with newly reserved slots in one native call and returns how many it wrote:
   * `out.length` unless the map filled up, and then `out.subarray(0, returned)` is exactly what
   * was taken. Reuse one array across calls to allocate nothing per batch.
   */
  allocateNextInto(out: Uint32Array): number {
    // Only a real typed array, and its real length: a proxy or a subclass's `length` getter could
    // run code mid-copy or ask for more slots than the array can store (the rest would leak).
    uint32ArrayLength('out', out);
    return callNative(() => this.#n.allocateNextInto(out));
  }

  /** Frees slot `i`; releasing a free or out-of-range slot is a no-op, as upstream. */
  release(i: number): void {
    assertNumber('offset', i);
    if (!staged.release(this.#slot, i)) callNative(() => this.#n.release(i));
  }

  /**
   * Releases every slot in one native call, as `release` would one by one; returns how many were
   * taken before. A non-integer or negative value throws before anything is released.
   */
  releaseMany(slots: Uint32Array | readonly number[]): number {
    if (!Array.isArray(slots)) {
      // Typed input must be a real Uint32Array (not a proxy, whose reads run code).
      uint32ArrayLength('slots', slots, 'slots must be a Uint32Array or an array of numbers');
      return callNative(() => this.#n.releaseMany(slots as Uint32Array));
    }
    const r = staged.releaseManyNumbers(this.#slot, slots);
    if (r >= 0) return r;
    // Each element read once (a getter may answer differently each time), checked, then released.
    const n = slots.length;
    const copy = new Float64Array(n);
    for (let k = 0; k < n; k++) copy[k] = assertNumber('offset', slots[k]);
    return callNative(() => this.#n.releaseManyNumbers(copy));
  }

  /** True when slot `i` is taken; false for a free or out-of-range slot. */
  has(i: number): boolean {
    assertNumber('offset', i);
    return callNative(() => this.#n.has(i));
  }

  /** `max - count()`. */
  free(): number {
    return callNative(() => this.#n.free());
  }

  /** Number of taken slots. */
  count(): number {
    return callNative(() => this.#n.count());
  }

  /** Calls `fn` for every taken slot in ascending order (one native call for the whole set). */
  forEach(fn: (i: number) => void): void {
    for (const i of callNative(() => this.#n.toArray())) fn(i);
  }

  /** Every taken slot in ascending order. */
  toArray(): number[] {
    return callNative(() => this.#n.toArray());
  }

  /** The current state, to persist and later pass to `restore`. */
  snapshot(): BitmapSnapshot {
    return callNative(() => this.#n.snapshot());
  }

  /** Replaces the state with a snapshot; the range must equal this map's `rangeSpec`. */
  restore(range: string, data: Uint8Array): void {
    assertString('range', range);
    if (!(data instanceof Uint8Array)) {
      throw new KubenodeTypeError('data must be a Buffer or Uint8Array');
    }
    callNative(() => this.#n.restore(range, data));
  }
}
