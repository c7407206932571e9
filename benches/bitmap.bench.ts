// Allocation bitmap: AllocateNext + Release cycles on a 65,536-slot map, empty and 99 % full,
// for kubenode (Rust via JS), two plain TypeScript bitmaps (straightforward and careful), upstream
// Go's AllocationBitmap and the Rust core alone; and batches of 16/64/256 per slot from JS.
import { bitmap } from '../ts/index.js';
import { native } from '../ts/native.js';
import { CarefulBitmap } from './lib/careful-bitmap.js';
import {
  type BenchContext,
  comparisonTable,
  fmtNs,
  fmtRatio,
  type Measurement,
  measureJs,
  runGoPeer,
  runJsonLines,
  speedup,
} from './lib/harness.js';
import { NaiveBitmap } from './lib/naive-bitmap.js';

const SLOTS = 65_536;
const FULL = Math.floor((SLOTS * 99) / 100);
const OPS = 1024;
/** Batch sizes for allocateNextInto + releaseMany (each divides OPS). */
const BATCHES = [16, 64, 256] as const;
/** Rounds of every row; each row reports the median of its per-round medians. */
const ROUNDS = 3;

interface Allocator {
  allocate(i: number): boolean;
  allocateNext(): number | null;
  release(i: number): void;
  free(): number;
}

/** Deterministic permutation prefix, so every implementation starts from the same holes. */
function randomSlots(count: number, seed: number): number[] {
  const a = Array.from({ length: SLOTS }, (_, i) => i);
  let s = seed >>> 0;
  for (let i = a.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j] as number, a[i] as number];
  }
  return a.slice(0, count);
}

function prefill(m: Allocator, count: number): Allocator {
  for (const i of randomSlots(count, 20240613)) m.allocate(i);
  if (m.free() !== SLOTS - count) throw new Error('prefill failed');
  return m;
}

function cycle(m: Allocator): () => void {
  return () => {
    for (let k = 0; k < OPS; k++) {
      const i = m.allocateNext();
      if (i === null) throw new Error('map unexpectedly full');
      m.release(i);
    }
  };
}

/** Batches of `size`: reserve `size` slots into a reused array, then release them. */
function batchCycle(m: bitmap.AllocationBitmap, size: number): () => void {
  const out = new Uint32Array(size);
  return () => {
    for (let k = 0; k < OPS; k += size) {
      if (m.allocateNextInto(out) !== size) throw new Error('map unexpectedly full');
      m.releaseMany(out);
    }
  };
}

/** The same batches through the array API: `allocateNext(n)` gives a fresh number[] each time. */
function arrayBatchCycle(m: bitmap.AllocationBitmap, size: number): () => void {
  return () => {
    for (let k = 0; k < OPS; k += size) {
      if (m.releaseMany(m.allocateNext(size)) !== size) throw new Error('map unexpectedly full');
    }
  };
}

/** The same batches through single calls (plain TS has no crossing to save). */
function singlesCycle(m: Allocator, size: number): () => void {
  const out: number[] = new Array(size).fill(0);
  return () => {
    for (let k = 0; k < OPS; k += size) {
      for (let j = 0; j < size; j++) {
        const i = m.allocateNext();
        if (i === null) throw new Error('map unexpectedly full');
        out[j] = i;
      }
      for (let j = 0; j < size; j++) m.release(out[j] as number);
    }
  };
}

/** One round: every row once, JS first, then the Go peer and the Rust core. */
async function round(ctx: BenchContext, samples: number): Promise<Measurement[]> {
  const rows: Measurement[] = [];
  const js = { opsPerCall: OPS, timeMs: ctx.quick ? 100 : 700 };
  for (const size of BATCHES) {
    const scenario = `batch${size}-empty`;
    const mine = new bitmap.AllocationBitmap(SLOTS, 'user namespaces');
    rows.push(await measureJs(ctx, scenario, 'kubenode', batchCycle(mine, size), js));
    const arrays = new bitmap.AllocationBitmap(SLOTS, 'user namespaces');
    rows.push(await measureJs(ctx, scenario, 'kubenode-arrays', arrayBatchCycle(arrays, size), js));
    const naive = new NaiveBitmap(SLOTS);
    rows.push(await measureJs(ctx, scenario, 'plain-ts', singlesCycle(naive, size), js));
    const careful = new CarefulBitmap(SLOTS);
    rows.push(await measureJs(ctx, scenario, 'plain-ts-careful', singlesCycle(careful, size), js));
  }
  for (const [scenario, filled] of [
    ['alloc-release-99full', FULL],
    ['alloc-release-empty', 0],
  ] as const) {
    const mine = prefill(new bitmap.AllocationBitmap(SLOTS, 'user namespaces'), filled);
    rows.push(await measureJs(ctx, scenario, 'kubenode', cycle(mine), js));
    const naive = prefill(new NaiveBitmap(SLOTS), filled);
    rows.push(await measureJs(ctx, scenario, 'plain-ts', cycle(naive), js));
    const careful = prefill(new CarefulBitmap(SLOTS), filled);
    rows.push(await measureJs(ctx, scenario, 'plain-ts-careful', cycle(careful), js));
  }
  // Long samples (tens of ms) on both sides, so a preempted timeslice moves a median less.
  const go = await runGoPeer(
    ctx,
    'bitmap-bench',
    ctx.quick ? ['-iters', '2000', '-samples', '3'] : ['-iters', '200000', '-samples', String(samples)],
  );
  rows.push(...go);
  // The Rust core alone, timed like the Go peer: core against core, without the JS crossing.
  const core = await runJsonLines(ctx, [
    'cargo',
    'run',
    '--release',
    '--quiet',
    '-p',
    'kubenode-bitmap',
    '--example',
    'bench_json',
    '--',
    ...(ctx.quick ? ['2000', '3'] : ['2000000', String(samples)]),
  ]);
  rows.push(...core);
  return rows;
}

/** Per row, the median over rounds of each round's median (and quartiles); samples add up. */
function mergeRounds(rounds: Measurement[][]): Measurement[] {
  const median = (xs: (number | undefined)[]) => {
    const s = xs.filter((x): x is number => x !== undefined).sort((a, b) => a - b);
    return s.length ? (s[(s.length - 1) >> 1] as number) : undefined;
  };
  const first = rounds[0] ?? [];
  return first.map((row) => {
    const same = rounds.flatMap((r) => r.filter((m) => m.scenario === row.scenario && m.peer === row.peer));
    return {
      ...row,
      medianNsPerOp: median(same.map((m) => m.medianNsPerOp)) ?? Number.NaN,
      p25NsPerOp: median(same.map((m) => m.p25NsPerOp)),
      p75NsPerOp: median(same.map((m) => m.p75NsPerOp)),
      samples: same.reduce((n, m) => n + m.samples, 0),
    };
  });
}

export async function run(ctx: BenchContext): Promise<string> {
  // Rounds interleave the peers over time, so load from other processes on a shared machine
  // falls on all of them alike rather than on whichever ran during a burst.
  const rounds: Measurement[][] = [];
  for (let r = 0; r < (ctx.quick ? 1 : ROUNDS); r++) rounds.push(await round(ctx, 7));
  const rows = mergeRounds(rounds);
  rows.sort((a, b) => a.scenario.localeCompare(b.scenario) || a.peer.localeCompare(b.peer));

  const met = (ratio: number, target: number) => (ratio >= target ? 'met' : 'not met');
  const single = (['alloc-release-empty', 'alloc-release-99full'] as const).map((scenario) => {
    const go = speedup(rows, scenario, 'go-upstream');
    return (
      `- ${scenario === 'alloc-release-empty' ? 'Empty' : '99 % full'}, one AllocateNext+Release from JS ` +
      `(two calls): ${fmtNs(rows.find((r) => r.scenario === scenario && r.peer === 'kubenode')?.medianNsPerOp ?? Number.NaN)}, ` +
      `${fmtRatio(go)} vs upstream Go (target ≥2×: ${met(go, 2)}), ` +
      `${fmtRatio(speedup(rows, scenario, 'plain-ts'))} vs plain TypeScript, ` +
      `${fmtRatio(speedup(rows, scenario, 'plain-ts-careful'))} vs careful plain TypeScript; ` +
      `the Rust core alone is ${fmtRatio(speedup(rows, scenario, 'go-upstream', 'kubenode-core'))} faster than upstream Go.`
    );
  });
  const batches = BATCHES.map((size) => {
    const scenario = `batch${size}-empty`;
    const plain = speedup(rows, scenario, 'plain-ts');
    const careful = speedup(rows, scenario, 'plain-ts-careful');
    return (
      `- Batches of ${size}, per slot: allocateNextInto + releaseMany ${fmtRatio(plain)} vs plain TypeScript's ` +
      `single calls (target ≥1.0×: ${met(plain, 1)}), ${fmtRatio(careful)} vs careful plain TypeScript (${met(careful, 1)}); ` +
      `allocateNext(n) + releaseMany(number[]) ${fmtRatio(speedup(rows, scenario, 'plain-ts', 'kubenode-arrays'))} vs plain TypeScript.`
    );
  });
  // Why a batch of 16 wins or loses: what a batch costs beyond its slots, against the floor of
  // an argument-free napi call measured now (a staged release naming no map returns at once).
  const at = native.bitmapStageLayout();
  new Uint32Array(native.bitmapStagingBuffer())[at.slot] = 0xffffffff;
  const staged = native.bitmapStagedRelease;
  const floor = await measureJs(
    ctx,
    'zero-argument-call',
    'napi-floor',
    () => {
      let n = 0;
      for (let k = 0; k < OPS; k++) n += staged();
      return n;
    },
    { opsPerCall: OPS, timeMs: ctx.quick ? 100 : 700 },
  );
  const perSlot = (size: number, peer = 'kubenode') =>
    rows.find((r) => r.scenario === `batch${size}-empty` && r.peer === peer)?.medianNsPerOp ?? Number.NaN;
  const fixed = (perSlot(16) - perSlot(256)) * 16;
  const why =
    `- What a batch costs beyond its slots: ≈${fmtNs(fixed)} per batch (16 × (batch16 − batch256 per slot)), ` +
    `two class-method calls, against an argument-free napi call alone at ${fmtNs(floor.medianNsPerOp)}; ` +
    `≈${fmtNs(fixed / 16)} per slot at 16. Each slot then costs ≈${fmtNs(perSlot(256))} (the batch-256 row) against ` +
    `${fmtNs(perSlot(16, 'plain-ts'))} for plain TypeScript's whole cycle, which on an empty map is one random bit probe.`;
  const summary = [...single, ...batches, why].join('\n');
  return `${comparisonTable(rows)}\n\n${summary}\n\n\`kubenode\` is the Rust core called from JavaScript (one staged call per operation; two class-method calls per batch in the \`batchN\`\nrows, into a reused Uint32Array); \`kubenode-arrays\` batches through \`allocateNext(n)\`, which returns a new number[] (staged); \`kubenode-core\` is\nthe Rust core timed in Rust the way the Go peer times upstream; \`plain-ts\` is a straightforward TypeScript bitmap\n(benches/lib/naive-bitmap.ts); \`plain-ts-careful\` scans a word at a time (benches/lib/careful-bitmap.ts).\nEach row is the median of ${ROUNDS} rounds' medians; a round runs every row once, JS rows first.\n`;
}
