// Staged bitmap calls: the map's slot number and the arguments are written into a staging area
// shared with Rust, and a zero-argument native function (no argument conversion, no unwrap of
// `this`) does the work and writes batch results back. Each function here answers `undefined`
// (or -1 for counts) when it could not stage the call; the caller then takes the class method,
// which does the same work or throws the typed error. Nothing runs between staging a call's
// header and making it; data copied from a caller's array is checked against the generation
// word, which every staged call bumps (an element getter could make staged calls of its own).
import { assertInteger } from './errors.js';
import { native } from './native.js';

// Words: [slot, count, generation, 0, data…] (crates/kubenode-node/src/bitmap/staged.rs).
const SLOT = 0;
const COUNT = 1;
const GENERATION = 2;
const HEADER = 4;
/** Returned by the native count calls when they could not use the staged words. */
const STAGED_ERROR = 0xffffffff;
/** `bitmapStagedAllocateNext`: the map is full. */
const FULL = -1;

interface Stage {
  readonly words: Uint32Array;
  /** The same memory as JS numbers; the data starts at index `HEADER / 2`. */
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
    const buffer = native.bitmapStagingBuffer();
    const words = new Uint32Array(buffer);
    stage = {
      words,
      numbers: new Float64Array(buffer),
      capacity: Math.min(native.bitmapStagedCapacity(), words.length - HEADER),
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
  s.words[SLOT] = slot;
  const r = s.allocateNext();
  return r >= 0 ? r : r === FULL ? null : undefined;
}

/** `release(i)` of the map in `slot` (`i` already checked): false when not staged. */
export function release(slot: number, i: number): boolean {
  const s = stage;
  if (s === null) return false;
  s.numbers[HEADER / 2] = i;
  s.words[SLOT] = slot;
  return s.release() !== STAGED_ERROR;
}

/** Stages `n` allocateNext calls of the map in `slot`: how many slots are in the data, or -1. */
function allocateStaged(s: Stage, slot: number, n: number): number {
  s.words[SLOT] = slot;
  s.words[COUNT] = n;
  const k = s.allocateNextMany();
  return k === STAGED_ERROR ? -1 : k;
}

/** Up to `n` slots of the map in `slot`, or undefined when not staged. */
export function allocateNextMany(slot: number, n: number): number[] | undefined {
  const s = stage;
  const k = s === null || n > s.capacity ? -1 : allocateStaged(s, slot, n);
  if (s === null || k < 0) return undefined;
  const out = new Array<number>(k);
  for (let j = 0; j < k; j++) out[j] = s.words[HEADER + j] as number;
  return out;
}

/** Fills `out` (a real typed array of `length` elements) from the map in `slot`: how many slots
 * were taken, or -1. */
export function allocateNextInto(slot: number, out: Uint32Array, length: number): number {
  const s = stage;
  const k = s === null || length > s.capacity ? -1 : allocateStaged(s, slot, length);
  if (s === null || k < 0) return -1;
  for (let j = 0; j < k; j++) out[j] = s.words[HEADER + j] as number;
  return k;
}

/** `releaseMany` of slots in a real Uint32Array of `n` elements: how many were taken, or -1 when
 * not staged. */
export function releaseMany(slot: number, slots: Uint32Array, n: number): number {
  const s = stage;
  if (s === null || n > s.capacity) return -1;
  const w = s.words;
  const generation = w[GENERATION];
  for (let j = 0; j < n; j++) w[HEADER + j] = slots[j] as number;
  if (w[GENERATION] !== generation) return -1;
  w[SLOT] = slot;
  w[COUNT] = n;
  const r = s.releaseMany();
  return r === STAGED_ERROR ? -1 : r;
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
  const w = s.words;
  const generation = w[GENERATION];
  let j = 0;
  for (; j < n; j++) {
    const i = slots[j] as number;
    // True only for an integer in [0, 2^32): anything else is checked below (a BigInt first,
    // which `>>>` would refuse with a bare TypeError).
    if (typeof i !== 'number' || i >>> 0 !== i) break;
    w[HEADER + j] = i;
  }
  let call = s.releaseMany;
  if (j < n) {
    if (n > s.capacity / 2) return -1;
    for (let k = 0; k < n; k++) s.numbers[HEADER / 2 + k] = assertInteger('offset', slots[k]);
    call = s.releaseManyNumbers;
  }
  if (w[GENERATION] !== generation) return -1;
  w[SLOT] = slot;
  w[COUNT] = n;
  const r = call();
  return r === STAGED_ERROR ? -1 : r;
}
