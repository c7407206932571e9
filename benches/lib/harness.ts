// Shared benchmark plumbing: time JS code with tinybench, run the upstream Go peers from
// benches/peers, and render medians with ratios against peers measured in the same run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Bench } from 'tinybench';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** One measured implementation of one scenario. */
export interface Measurement {
  scenario: string;
  /** Who implements it: `kubenode`, `plain-ts`, `go-upstream`, `conntrack-tools`, … */
  peer: string;
  medianNsPerOp: number;
  p25NsPerOp?: number;
  p75NsPerOp?: number;
  samples: number;
  opsPerSample: number;
  extra?: Record<string, unknown>;
}

export interface BenchContext {
  /** Shorter runs, for smoke-testing the bench code itself. */
  quick: boolean;
  log(message: string): void;
}

export interface MeasureOptions {
  /** Operations performed by one call of `fn` (loop inside `fn` for sub-microsecond work). */
  opsPerCall?: number;
  timeMs?: number;
  warmupMs?: number;
  /** Untimed work around each call of `fn` (e.g. undoing what it changed). */
  beforeEach?: () => void;
  afterEach?: () => void;
}

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] ?? 0) + ((sorted[hi] ?? 0) - (sorted[lo] ?? 0)) * (pos - lo);
}

/** Times `fn` with tinybench and reports nanoseconds per operation. */
export async function measureJs(
  ctx: BenchContext,
  scenario: string,
  peer: string,
  fn: () => unknown,
  opts: MeasureOptions = {},
): Promise<Measurement> {
  const opsPerCall = opts.opsPerCall ?? 1;
  const bench = new Bench({
    time: opts.timeMs ?? (ctx.quick ? 100 : 1500),
    warmupTime: opts.warmupMs ?? (ctx.quick ? 20 : 300),
    retainSamples: true,
  });
  const { beforeEach, afterEach } = opts;
  bench.add(`${peer}:${scenario}`, fn, {
    ...(beforeEach ? { beforeEach: () => beforeEach() } : {}),
    ...(afterEach ? { afterEach: () => afterEach() } : {}),
  });
  await bench.run();
  const task = bench.tasks[0];
  const result = task?.result;
  if (result?.state !== 'completed') {
    const err = result && 'error' in result ? (result as { error?: unknown }).error : undefined;
    throw new Error(`benchmark ${peer}:${scenario} did not complete: ${String(err ?? result?.state)}`);
  }
  const lat = result.latency;
  const samples = [...(lat.samples ?? [])].sort((a, b) => a - b);
  const toNs = (ms: number) => (ms * 1e6) / opsPerCall;
  const m: Measurement = {
    scenario,
    peer,
    medianNsPerOp: toNs(lat.p50),
    p25NsPerOp: samples.length ? toNs(percentile(samples, 0.25)) : undefined,
    p75NsPerOp: toNs(lat.p75),
    samples: lat.samplesCount,
    opsPerSample: opsPerCall,
  };
  ctx.log(`  ${peer.padEnd(14)} ${scenario.padEnd(34)} ${fmtNs(m.medianNsPerOp)}/op`);
  return m;
}

/** The reference Kubernetes release and its etcd, as benches/peers/go.mod pins them. */
export function peersVersions(): { kubernetes: string; etcd: string } {
  const mod = readFileSync(join(repoRoot, 'benches', 'peers', 'go.mod'), 'utf8');
  const pin = (m: string) =>
    new RegExp(`^\\s*${m.replaceAll('.', '\\.')} (v[0-9][^\\s]*)`, 'm').exec(mod)?.[1] ?? '?';
  return { kubernetes: pin('k8s.io/kubernetes'), etcd: pin('go.etcd.io/etcd/server/v3').replace(/^v/, '') };
}

/**
 * Path of a Go peer binary, building it (cached) with benches/peers/prepare.sh: from the reference
 * release of benches/peers/go.mod, or from an older `release` (e.g. `1.36.3`) kept buildable there.
 */
export function goPeerBinary(target: string, release?: string): string {
  const args = [...(release ? ['--release', release] : []), target];
  const r = spawnSync('bash', [join(repoRoot, 'benches', 'peers', 'prepare.sh'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  // prepare.sh prints the path of each binary it was asked for.
  const bin =
    r.stdout
      ?.trim()
      .split('\n')
      .find((l) => l.endsWith(`/${target}`)) ?? '';
  if (r.status !== 0 || !existsSync(bin)) {
    throw new Error(`could not build Go peer ${target} (prepare.sh exit ${r.status})`);
  }
  return bin;
}

export interface GoPeerOptions {
  /** Command prefix, e.g. ['ip', 'netns', 'exec', 'bench'] to run inside a namespace. */
  wrap?: string[];
  env?: NodeJS.ProcessEnv;
}

/** Runs a Go peer bench with `-json` and returns its result lines. */
export async function runGoPeer(
  ctx: BenchContext,
  target: string,
  args: string[],
  opts: GoPeerOptions = {},
): Promise<Array<Measurement & Record<string, unknown>>> {
  const bin = goPeerBinary(target);
  return runJsonLines(ctx, [...(opts.wrap ?? []), bin, '-json', ...args], opts.env);
}

/** Runs a command that prints one JSON measurement per line (the peers' protocol). */
export async function runJsonLines(
  ctx: BenchContext,
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Array<Measurement & Record<string, unknown>>> {
  const [cmd, ...rest] = argv as [string, ...string[]];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(cmd, rest, { env, cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(buf) : reject(new Error(`${cmd} exited with ${code}`)),
    );
  });
  const rows = out
    .split('\n')
    .filter((l) => l.trim().startsWith('{'))
    .map((l) => JSON.parse(l) as Measurement & Record<string, unknown>);
  for (const r of rows) {
    ctx.log(`  ${String(r.peer).padEnd(14)} ${String(r.scenario).padEnd(34)} ${fmtNs(r.medianNsPerOp)}/op`);
  }
  return rows;
}

export function fmtNs(ns: number): string {
  if (!Number.isFinite(ns)) return 'n/a';
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(1)} ns`;
}

export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return 'n/a';
  return r >= 10 ? `${r.toFixed(0)}×` : `${r.toFixed(2)}×`;
}

/**
 * A Markdown table of one scenario group: each row's median, its interquartile range, and how
 * many times faster `subject` is than that row (row median / subject median).
 */
export function comparisonTable(rows: Measurement[], subject = 'kubenode'): string {
  const lines = [
    '| scenario | implementation | median / op | p25–p75 | samples | kubenode speed-up |',
    '|---|---|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const mine = rows.find((x) => x.scenario === r.scenario && x.peer === subject);
    const ratio = mine ? r.medianNsPerOp / mine.medianNsPerOp : Number.NaN;
    const iqr =
      r.p25NsPerOp !== undefined && r.p75NsPerOp !== undefined
        ? `${fmtNs(r.p25NsPerOp)}–${fmtNs(r.p75NsPerOp)}`
        : '';
    lines.push(
      `| ${r.scenario} | ${r.peer} | ${fmtNs(r.medianNsPerOp)} | ${iqr} | ${r.samples} | ${
        r.peer === subject ? '1×' : fmtRatio(ratio)
      } |`,
    );
  }
  return lines.join('\n');
}

/** Ratio of medians `other / subject` for one scenario, or NaN when either is missing. */
export function speedup(rows: Measurement[], scenario: string, other: string, subject = 'kubenode'): number {
  const a = rows.find((r) => r.scenario === scenario && r.peer === other);
  const b = rows.find((r) => r.scenario === scenario && r.peer === subject);
  return a && b ? a.medianNsPerOp / b.medianNsPerOp : Number.NaN;
}
