// Staged bitmap calls: the map's slot number and the arguments are written into a staging area
// shared with Rust, and a zero-argument native function (no argument conversion, no unwrap of
// `this`) does the work and writes batch results back. Only the calls where that pays are staged
// (BENCHMARKS.md, "Staged calls"): single calls and batches as number[]; typed-array batches
// take the class methods, which read and write the caller's array in place. Each function here answers `undefined`
// (or -1 for counts) when it could not stage the call; the caller then takes the class method,
// which does the same work or throws the typed error. Nothing runs between staging a call's
// header and making it; data copied from a caller's array is checked against the generation
// word, which every staged call bumps (an element getter could make staged calls of its own).
import type { BitmapStageLayout } from './binding.js';
import { assertInteger } from './errors.js';
import { native } from './native.js';

interface Stage {
  /** Where each value goes; the binding's (crates/kubenode-node/src/bitmap/staged.rs). */
  readonly at: BitmapStageLayout;
  readonly words: Uint32Array;
  /** The same memory as JS numbers; the data starts at index `at.data / 2`. */
  readonly numbers: Float64Array;
  /** Data words: the largest staged batch of slots; half as many offsets as numbers. */
  readonly capacity: number;
  readonly allocateNext: () => number;
  readonly release: () => number;
  readonly allocateNextMany: () => number;
  readonly releaseMany: () => number;
  readonly releaseManyNumbers: () => number;
}

let stage: Stage | null = null;
let loaded = false;

/**
 * Fetches this thread's staging area once, when the first map is created (the binding is loaded
 * by then). Where the runtime refuses external buffers it stays null and every call takes the
 * class methods. Module-private: nothing else may hold the area.
 */
export function loadStage(): void {
  if (loaded) return;
  loaded = true;
  try {
    const at = native.bitmapStageLayout();
    const buffer = native.bitmapStagingBuffer();
    const words = new Uint32Array(buffer);
    stage = {
      at,
      words,
      numbers: new Float64Array(buffer),
      capacity: Math.min(at.capacity, words.length - at.data),
      // Held directly: the `native` proxy costs a trap per member access.
      allocateNext: native.bitmapStagedAllocateNext,
      release: native.bitmapStagedRelease,
      allocateNextMany: native.bitmapStagedAllocateNextMany,
      releaseMany: native.bitmapStagedReleaseMany,
      releaseManyNumbers: native.bitmapStagedReleaseManyNumbers,
    };
  } catch {
    stage = null;
  }
}

/** `allocateNext()` of the map in `slot`: the slot taken, null when full, undefined when not staged. */
export function allocateNext(slot: number): number | null | undefined {
  const s = stage;
  if (s === null) return undefined;
  s.words[s.at.slot] = slot;
  const r = s.allocateNext();
  return r >= 0 ? r : r === s.at.full ? null : undefined;
}

/** `release(i)` of the map in `slot` (`i` already checked): false when not staged. */
export function release(slot: number, i: number): boolean {
  const s = stage;
  if (s === null) return false;
  s.numbers[s.at.data / 2] = i;
  s.words[s.at.slot] = slot;
  return s.release() !== s.at.stagedError;
}

/** Up to `n` slots of the map in `slot`, or undefined when not staged. */
export function allocateNextMany(slot: number, n: number): number[] | undefined {
  const s = stage;
  if (s === null || n > s.capacity) return undefined;
  const { at, words } = s;
  words[at.slot] = slot;
  words[at.count] = n;
  const k = s.allocateNextMany();
  if (k === at.stagedError) return undefined;
  const out = new Array<number>(k);
  for (let j = 0; j < k; j++) out[j] = words[at.data + j] as number;
  return out;
}

/**
 * `releaseMany` of JS numbers: how many were taken, or -1 when not staged. Offsets that are all
 * u32 (the usual case: slots from `allocateNext`) are staged as u32; otherwise every value is
 * checked (`assertInteger`, throwing before anything is released) and staged as a number.
 */
export function releaseManyNumbers(slot: number, slots: readonly number[]): number {
  const s = stage;
  const n = slots.length;
  if (s === null || n > s.capacity) return -1;
  const { at, words: w } = s;
  const generation = w[at.generation];
  let j = 0;
  for (; j < n; j++) {
    const i = slots[j] as number;
    // True only for an integer in [0, 2^32): anything else is checked below (a BigInt first,
    // which `>>>` would refuse with a bare TypeError).
    if (typeof i !== 'number' || i >>> 0 !== i) break;
    w[at.data + j] = i;
  }
  let call = s.releaseMany;
  if (j < n) {
    if (n > s.capacity / 2) return -1;
    for (let k = 0; k < n; k++) s.numbers[at.data / 2 + k] = assertInteger('offset', slots[k]);
    call = s.releaseManyNumbers;
  }
  if (w[at.generation] !== generation) return -1;
  w[at.slot] = slot;
  w[at.count] = n;
  const r = call();
  return r === at.stagedError ? -1 : r;
}
