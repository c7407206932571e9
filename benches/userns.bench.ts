// User-namespace manager: getOrCreate + release cycles through the whole manager (file write
// with file and directory fsyncs, then removal) for 110 and 65,000 pods on tmpfs and disk, and
// the allocator alone near full — kubenode against upstream Go pkg/kubelet/userns in one run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bitmap, userns } from '../ts/index.js';
import {
  type BenchContext,
  comparisonTable,
  fmtRatio,
  type Measurement,
  measureJs,
  runGoPeer,
  speedup,
} from './lib/harness.js';

const SLOTS = 65535; // the kubelet's default pool in 65536-ID blocks
const OPS = 1000;

function podUids(n: number): string[] {
  let s = 0x9e3779b9;
  const hex = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s.toString(16).padStart(8, '0');
  };
  return Array.from(
    { length: n },
    (_, i) => `${hex()}-${hex().slice(0, 4)}-4${hex().slice(0, 3)}-${i.toString(16).padStart(12, '0')}`,
  );
}

async function allocNearFull(ctx: BenchContext): Promise<Measurement> {
  const m = new bitmap.AllocationBitmap(SLOTS, 'user namespaces');
  const order = Array.from({ length: SLOTS }, (_, i) => i);
  let s = 7;
  for (let i = order.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  for (const i of order.slice(0, Math.floor((SLOTS * 99) / 100))) m.allocate(i);
  return measureJs(
    ctx,
    'alloc-near-full',
    'kubenode',
    () => {
      for (let k = 0; k < OPS; k++) {
        const i = m.allocateNext();
        if (i === null) throw new Error('full');
        m.release(i);
      }
    },
    { opsPerCall: OPS },
  );
}

/** One sample = getOrCreate for every pod (sequentially, as the kubelet's lock serialises
 * them), then release for every pod; reported per pod. */
async function cycles(ctx: BenchContext, scenario: string, parent: string, n: number, samples: number) {
  const root = mkdtempSync(path.join(parent, 'kubenode-userns-bench-'));
  const podsDir = path.join(root, 'pods');
  const m = await userns.UserNsManager.create({ podsDir, maxPods: n });
  const pods = podUids(n).map((uid) => ({ metadata: { uid }, spec: { hostUsers: false } }));
  const times: number[] = [];
  try {
    for (let k = 0; k < samples; k++) {
      const t0 = process.hrtime.bigint();
      for (const p of pods) await m.getOrCreateUserNamespaceMappings(p);
      for (const p of pods) await m.release(p.metadata.uid);
      times.push(Number(process.hrtime.bigint() - t0) / n);
    }
  } finally {
    m.close();
    rmSync(root, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  const med = times[Math.floor(times.length / 2)] ?? Number.NaN;
  ctx.log(`  kubenode       ${scenario.padEnd(34)} ${(med / 1000).toFixed(1)} µs/op`);
  return { scenario, peer: 'kubenode', medianNsPerOp: med, samples, opsPerSample: n } satisfies Measurement;
}

export async function run(ctx: BenchContext): Promise<string> {
  const rows: Measurement[] = [];
  rows.push(await allocNearFull(ctx));
  const go = await runGoPeer(ctx, 'userns-bench', [
    '-scenario',
    'alloc-near-full',
    ...(ctx.quick ? ['-iters', '2000', '-samples', '3'] : []),
  ]);
  rows.push(...go);

  const shm = '/dev/shm';
  const disk = tmpdir();
  const plans: Array<[string, string, number, number]> = [
    ['getorcreate-release-110-tmpfs', shm, 110, ctx.quick ? 3 : 15],
    ['getorcreate-release-110-disk', disk, 110, ctx.quick ? 2 : 7],
    ['getorcreate-release-65000-tmpfs', shm, 65000, 1],
  ];
  for (const [scenario, dir, n, samples] of plans) {
    rows.push(await cycles(ctx, scenario, dir, n, samples));
    const g = await runGoPeer(ctx, 'userns-bench', [
      '-scenario',
      'getorcreate-release',
      '-pods',
      String(n),
      '-dir',
      dir,
      '-samples',
      String(samples),
    ]);
    rows.push(...g.map((r) => ({ ...r, scenario })));
  }
  const summary = [
    `- Allocator alone, 99 % full (AllocateNext + Release, each a call from JavaScript): ${fmtRatio(speedup(rows, 'alloc-near-full', 'go-upstream'))} faster than upstream Go (target ≥10×).`,
    ...plans.map(
      ([s]) =>
        `- ${s}: ${fmtRatio(speedup(rows, s, 'go-upstream'))} vs upstream (same file fsync, rename and directory fsync per create).`,
    ),
    '- 65,000 pods on disk is not run: with two fsyncs per pod it takes minutes per sample for both implementations.',
  ].join('\n');
  return `${comparisonTable(rows)}\n\n${summary}\n`;
}
