// Allocation bitmap: AllocateNext + Release cycles on a 65,536-slot map, empty and 99 % full,
// for kubenode (Rust via JS), two plain TypeScript bitmaps (straightforward and careful), upstream
// Go's AllocationBitmap and the Rust core alone; and batches of 16/64/256 per slot from JS.
import { bitmap } from '../ts/index.js';
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

export async function run(ctx: BenchContext): Promise<string> {
  const rows: Measurement[] = [];
  for (const size of BATCHES) {
    const scenario = `batch${size}-empty`;
    const mine = new bitmap.AllocationBitmap(SLOTS, 'user namespaces');
    rows.push(await measureJs(ctx, scenario, 'kubenode', batchCycle(mine, size), { opsPerCall: OPS }));
    const arrays = new bitmap.AllocationBitmap(SLOTS, 'user namespaces');
    rows.push(
      await measureJs(ctx, scenario, 'kubenode-arrays', arrayBatchCycle(arrays, size), { opsPerCall: OPS }),
    );
    const naive = new NaiveBitmap(SLOTS);
    rows.push(await measureJs(ctx, scenario, 'plain-ts', singlesCycle(naive, size), { opsPerCall: OPS }));
    const careful = new CarefulBitmap(SLOTS);
    rows.push(
      await measureJs(ctx, scenario, 'plain-ts-careful', singlesCycle(careful, size), { opsPerCall: OPS }),
    );
  }
  for (const [scenario, filled] of [
    ['alloc-release-99full', FULL],
    ['alloc-release-empty', 0],
  ] as const) {
    const mine = prefill(new bitmap.AllocationBitmap(SLOTS, 'user namespaces'), filled);
    rows.push(await measureJs(ctx, scenario, 'kubenode', cycle(mine), { opsPerCall: OPS }));
    const naive = prefill(new NaiveBitmap(SLOTS), filled);
    rows.push(await measureJs(ctx, scenario, 'plain-ts', cycle(naive), { opsPerCall: OPS }));
    const careful = prefill(new CarefulBitmap(SLOTS), filled);
    rows.push(await measureJs(ctx, scenario, 'plain-ts-careful', cycle(careful), { opsPerCall: OPS }));
  }
  // Long samples (tens of ms) on both sides, so a preempted timeslice moves a median less.
  const go = await runGoPeer(
    ctx,
    'bitmap-bench',
    ctx.quick ? ['-iters', '2000', '-samples', '3'] : ['-iters', '200000', '-samples', '21'],
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
    ...(ctx.quick ? ['2000', '3'] : ['2000000', '21']),
  ]);
  rows.push(...core);
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
  const summary = [...single, ...batches].join('\n');
  return `${comparisonTable(rows)}\n\n${summary}\n\n\`kubenode\` is the Rust core called from JavaScript (one staged call per operation; one per batch in the \`batchN\`\nrows, into a reused Uint32Array); \`kubenode-arrays\` batches through \`allocateNext(n)\`, which returns a new number[]; \`kubenode-core\` is\nthe Rust core timed in Rust the way the Go peer times upstream; \`plain-ts\` is a straightforward TypeScript bitmap\n(benches/lib/naive-bitmap.ts); \`plain-ts-careful\` scans a word at a time (benches/lib/careful-bitmap.ts).\n`;
}
