// Staged calls against the plain napi calls they replace, same run: each staged path (arguments
// written into a staging area shared with Rust, then a zero-argument native call) next to the
// class method that does the same work with arguments. A staged path earns its machinery only
// when it is at least 1.5× faster per call. Rows interleave over rounds, so load from other
// processes falls on both sides alike; each row is the median of the rounds' medians.
import * as stage from '../ts/bitmap-stage.js';
import { sysctl } from '../ts/index.js';
import { native } from '../ts/native.js';
import type { PodLike } from '../ts/sysctl/index.js';
import { type BenchContext, fmtNs, fmtRatio, type Measurement, measureJs } from './lib/harness.js';

const OPS = 1024;
const ROUNDS = 3;
const KEEP = 1.5;
/** Batch sizes (each divides OPS); `STAGED_SIZES=32,128` picks others. */
const SIZES = (process.env['STAGED_SIZES'] ?? '16,64,256').split(',').map(Number);

const SAFE = sysctl.safeSysctlAllowlist('6.1');
const NAMES = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.core.somaxconn',
  'kernel.msgmax',
  'net.ipv6.conf.all.disable_ipv6',
  'fs.mqueue.msg_max',
  'net.ipv4.neigh.default.gc_thresh1',
];
const PATTERNS = ['net.*', 'kernel.msg*', 'kernel.sem', 'fs.mqueue.*'];
/** The last sysctl is not allowlisted: the message is built. */
const REJECTED = [...NAMES.slice(0, 7), 'vm.swappiness'];

interface Pair {
  path: string;
  /** Calls per sample. */
  calls: number;
  staged: () => unknown;
  plain: () => unknown;
  /** Untimed set-up and clean-up around each sample (keeps the map in the same state). */
  before?: () => void;
  after?: () => void;
}

function sysctlPairs(): Pair[] {
  const raw = new native.SysctlAllowlist([...SAFE, ...PATTERNS]);
  const at = native.sysctlStageLayout();
  const words = new Uint32Array(native.sysctlStagingBuffer());
  const admitStaged = native.sysctlAdmitStaged;
  const encode = (names: string[]) => Uint32Array.from(names, (n) => raw.intern(n));
  const admitted = encode(NAMES);
  const rejected = encode(REJECTED);
  const slot = raw.slot;
  // The façade's staged sequence: ids, slot, count, flags, call (which returns the verdict).
  const viaStage = (ids: Uint32Array): string | null => {
    for (let i = 0; i < ids.length; i++) words[at.ids + i] = ids[i]!;
    words[at.slot] = slot;
    words[at.count] = ids.length;
    words[at.flags] = 0;
    const r = admitStaged();
    return typeof r === 'number' ? raw.admitIds(ids, ids.length, 0) : r;
  };
  const loop = (f: (ids: Uint32Array) => string | null, ids: Uint32Array, want: boolean) => () => {
    for (let k = 0; k < OPS; k++) if ((f(ids) === null) !== want) throw new Error('wrong verdict');
  };
  const direct = (ids: Uint32Array) => raw.admitIds(ids, ids.length, 0);
  return [
    {
      path: 'sysctl admit, 8 sysctls, admitted',
      calls: OPS,
      staged: loop(viaStage, admitted, true),
      plain: loop(direct, admitted, true),
    },
    {
      path: 'sysctl admit, 8 sysctls, rejected',
      calls: OPS,
      staged: loop(viaStage, rejected, false),
      plain: loop(direct, rejected, false),
    },
  ];
}

function façadePairs(): Pair[] {
  // For scale: the whole façade admit (pod read, name ids, the staged call) and the memoized
  // plain-JS admit of the sysctl bench (a Map from name to classification).
  const allow = sysctl.newAllowlist([...SAFE, ...PATTERNS]);
  const pod: PodLike = {
    spec: { securityContext: { sysctls: NAMES.map((name) => ({ name, value: '1' })) } },
  };
  const memo = new Map<string, string | null>();
  const memoAdmit = (p: PodLike) => {
    for (const s of p.spec!.securityContext!.sysctls!) {
      const n = s.name ?? '';
      let ns = memo.get(n);
      if (ns === undefined) {
        ns = sysctl.getNamespace(n).namespace || null;
        memo.set(n, ns);
      }
      if (ns === null) return false;
    }
    return true;
  };
  return [
    {
      path: 'sysctl façade admit vs memoized plain JS',
      calls: OPS,
      staged: () => {
        for (let k = 0; k < OPS; k++) if (!allow.admit({ pod }).admit) throw new Error('rejected');
      },
      plain: () => {
        for (let k = 0; k < OPS; k++) if (!memoAdmit(pod)) throw new Error('rejected');
      },
    },
  ];
}

function bitmapPairs(): Pair[] {
  const map = new native.AllocationBitmap(1 << 20, 'bench');
  const slot = map.slot;
  stage.loadStage();
  // The slots a sample takes or releases: released after an allocating sample, taken before a
  // releasing one, untimed.
  const held = new Uint32Array(OPS);
  const releaseHeld = () => {
    map.releaseMany(held);
  };
  const takeHeld = () => {
    if (map.allocateNextInto(held) !== OPS) throw new Error('full');
  };
  const pairs: Pair[] = [
    {
      path: 'bitmap allocateNext()',
      calls: OPS,
      staged: () => {
        for (let k = 0; k < OPS; k++) held[k] = stage.allocateNext(slot) as number;
      },
      plain: () => {
        for (let k = 0; k < OPS; k++) held[k] = map.allocateNext() as number;
      },
      after: releaseHeld,
    },
    {
      path: 'bitmap release(i)',
      calls: OPS,
      staged: () => {
        for (let k = 0; k < OPS; k++) stage.release(slot, held[k]!);
      },
      plain: () => {
        for (let k = 0; k < OPS; k++) map.release(held[k]!);
      },
      before: takeHeld,
    },
  ];
  for (const n of SIZES) {
    const reps = OPS / n;
    const lists = Array.from({ length: reps }, () => new Array<number>(n).fill(0));
    const arrays: number[][] = new Array(reps);
    pairs.push(
      {
        path: `bitmap allocateNext(${n}), a number[]`,
        calls: reps,
        staged: () => {
          for (let r = 0; r < reps; r++) arrays[r] = stage.allocateNextMany(slot, n)!;
        },
        // Without the staged call, a batch this small needs no `free()` first to size its array.
        plain: () => {
          for (let r = 0; r < reps; r++) {
            const o = new Uint32Array(n);
            arrays[r] = Array.from(o.subarray(0, map.allocateNextInto(o)));
          }
        },
        after: () => {
          for (let r = 0; r < reps; r++) map.releaseManyNumbers(Float64Array.from(arrays[r]!));
        },
      },
      {
        path: `bitmap releaseMany(number[${n}])`,
        calls: reps,
        staged: () => {
          for (let r = 0; r < reps; r++) stage.releaseManyNumbers(slot, lists[r]!);
        },
        // The façade's fallback: each element read once into a Float64Array, then one call.
        plain: () => {
          for (let r = 0; r < reps; r++) {
            const list = lists[r]!;
            const copy = new Float64Array(n);
            for (let j = 0; j < n; j++) copy[j] = list[j]!;
            map.releaseManyNumbers(copy);
          }
        },
        before: () => {
          takeHeld();
          for (let r = 0; r < reps; r++) for (let j = 0; j < n; j++) lists[r]![j] = held[r * n + j]!;
        },
      },
    );
  }
  return pairs;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[(s.length - 1) >> 1] ?? Number.NaN;
};

export async function run(ctx: BenchContext): Promise<string> {
  const pairs = [...sysctlPairs(), ...façadePairs(), ...bitmapPairs()];
  const got = new Map<string, { staged: number[]; plain: number[] }>();
  for (let r = 0; r < (ctx.quick ? 1 : ROUNDS); r++) {
    for (const p of pairs) {
      const e = got.get(p.path) ?? { staged: [], plain: [] };
      got.set(p.path, e);
      const opts = {
        opsPerCall: p.calls,
        timeMs: ctx.quick ? 50 : 400,
        warmupMs: ctx.quick ? 10 : 100,
        ...(p.before ? { beforeEach: p.before } : {}),
        ...(p.after ? { afterEach: p.after } : {}),
      };
      const m = async (peer: string, f: () => unknown): Promise<Measurement> =>
        measureJs(ctx, p.path, peer, f, opts);
      e.staged.push((await m('staged', p.staged)).medianNsPerOp);
      e.plain.push((await m('plain', p.plain)).medianNsPerOp);
    }
  }
  const lines = [
    '| path | staged / call | plain napi / call | staged speed-up | ≥ 1.5× |',
    '|---|---:|---:|---:|---|',
  ];
  for (const p of pairs) {
    const e = got.get(p.path)!;
    const s = median(e.staged);
    const q = median(e.plain);
    lines.push(
      `| ${p.path} | ${fmtNs(s)} | ${fmtNs(q)} | ${fmtRatio(q / s)} | ${q / s >= KEEP ? 'yes' : 'no'} |`,
    );
  }
  return `${lines.join('\n')}\n\nPer call, the median of ${ROUNDS} rounds' medians; a sample is ${OPS} single calls or ${OPS} slots in batches, the map's state restored between samples untimed. The façade row compares the whole admit (staged, in the \`staged\` column) with the memoized plain-JS admit (in the \`plain\` column).\n`;
}
