// Sysctl admission: admit a pod with 8 sysctls against the safe list + 20 patterns — kubenode
// from JS (per pod, NUL-joined names in one crossing; the string-array crossing for comparison;
// a 10k-pod batch in one crossing), a plain-TS port of upstream's allowlist, and upstream Go
// pkg/kubelet/sysctl, in one run. The workload comes from the Go peer's own output.

import { sysctl } from '../ts/index.js';
import { native } from '../ts/native.js';
import type { PodLike } from '../ts/sysctl/index.js';
import {
  type BenchContext,
  comparisonTable,
  fmtNs,
  fmtRatio,
  type Measurement,
  measureJs,
  runGoPeer,
  speedup,
} from './lib/harness.js';

/** Upstream's allowlist.go, ported line by line to TypeScript. */
class PlainTsAllowlist {
  readonly sysctls = new Map<string, string>();
  readonly prefixes = new Map<string, string>();
  constructor(patterns: string[]) {
    for (const p of patterns) {
      const { namespace, name, prefixed } = sysctl.getNamespace(p);
      if (namespace === '')
        throw new Error(`the sysctls ${JSON.stringify(name)} are not known to be namespaced`);
      (prefixed ? this.prefixes : this.sysctls).set(name, namespace);
    }
  }
  static normalize(v: string): string {
    const i = v.search(/[./]/);
    if (i < 0 || v[i] === '.') return v;
    return v.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'));
  }
  validate(raw: string, hostNet: boolean, hostIPC: boolean): string | null {
    const s = PlainTsAllowlist.normalize(raw);
    const check = (ns: string) =>
      (ns === 'IPC' && hostIPC) || (ns === 'Net' && hostNet)
        ? `${JSON.stringify(s)} not allowed with host ${ns} enabled`
        : null;
    const ns = this.sysctls.get(s);
    if (ns !== undefined) return check(ns);
    for (const [p, pns] of this.prefixes) if (s.startsWith(p)) return check(pns);
    return `${JSON.stringify(s)} not allowlisted`;
  }
  admit(pod: PodLike): { admit: boolean; reason?: string; message?: string } {
    const list = pod.spec?.securityContext?.sysctls;
    if (!list || list.length === 0) return { admit: true };
    const hn = pod.spec?.hostNetwork === true;
    const hi = pod.spec?.hostIPC === true;
    for (const s of list) {
      const err = this.validate(s.name ?? '', hn, hi);
      if (err !== null)
        return { admit: false, reason: 'SysctlForbidden', message: `forbidden sysctl: ${err}` };
    }
    return { admit: true };
  }
}

const BATCH = 10_000;
const LOOP = 1000;

export async function run(ctx: BenchContext): Promise<string> {
  const go = await runGoPeer(ctx, 'sysctl-bench', ctx.quick ? ['-iters', '20000', '-samples', '5'] : []);
  const g = go.find((r) => r.scenario === 'admit-pod-8-sysctls');
  if (!g) throw new Error('sysctl-bench printed no admit-pod-8-sysctls line');
  const safe = g['safe'] as string[];
  const patterns = g['patterns'] as string[];
  const names = g['sysctls'] as string[];
  // The peer is upstream v1.36 (12 safe entries); both sides use its list for the same workload.
  const ours = sysctl.safeSysctlAllowlist().length;
  const values = ['1', '1024 65535', '1', '1024', '65536', '0', '64', '256'];
  const makePod = (i: number): PodLike => ({
    metadata: { name: `sysctl-pod-${i}`, namespace: 'default' },
    spec: { securityContext: { sysctls: names.map((name, k) => ({ name, value: values[k] ?? '1' })) } },
  });
  const pod = makePod(0);
  const pods = Array.from({ length: BATCH }, (_, i) => makePod(i));

  const allow = sysctl.newAllowlist([...safe, ...patterns]);
  const plain = new PlainTsAllowlist([...safe, ...patterns]);
  const raw = new native.SysctlAllowlist([...safe, ...patterns]);
  for (const r of [allow.admit({ pod }), plain.admit(pod), ...allow.admitMany(pods.slice(0, 3))]) {
    if (!r.admit) throw new Error(`pod not admitted: ${r.message}`);
  }

  const S = 'admit-pod-8-sysctls';
  const B = `admit-batch-${BATCH / 1000}k (per pod)`;
  const rows: Measurement[] = [g];
  rows.push(
    await measureJs(
      ctx,
      S,
      'kubenode',
      () => {
        for (let k = 0; k < LOOP; k++) if (!allow.admit({ pod }).admit) throw new Error('rejected');
      },
      { opsPerCall: LOOP },
    ),
  );
  rows.push(
    await measureJs(
      ctx,
      S,
      'kubenode (string[] crossing)',
      () => {
        for (let k = 0; k < LOOP; k++) {
          const list = pod.spec!.securityContext!.sysctls!;
          if (
            raw.admitList(
              list.map((s) => s.name ?? ''),
              0,
            ) !== null
          )
            throw new Error('rejected');
        }
      },
      { opsPerCall: LOOP },
    ),
  );
  rows.push(
    await measureJs(
      ctx,
      S,
      'plain-ts',
      () => {
        for (let k = 0; k < LOOP; k++) if (!plain.admit(pod).admit) throw new Error('rejected');
      },
      { opsPerCall: LOOP },
    ),
  );
  rows.push(
    await measureJs(
      ctx,
      B,
      'kubenode',
      () => {
        const r = allow.admitMany(pods);
        if (r.length !== BATCH) throw new Error('short');
      },
      { opsPerCall: BATCH },
    ),
  );
  rows.push(
    await measureJs(
      ctx,
      B,
      'kubenode (per-pod calls)',
      () => {
        for (const p of pods) if (!allow.admit({ pod: p }).admit) throw new Error('rejected');
      },
      { opsPerCall: BATCH },
    ),
  );
  rows.push(
    await measureJs(
      ctx,
      B,
      'plain-ts',
      () => {
        for (const p of pods) if (!plain.admit(p).admit) throw new Error('rejected');
      },
      { opsPerCall: BATCH },
    ),
  );
  rows.push({ ...g, scenario: B, extra: undefined });

  const perPod = rows.find((r) => r.scenario === S && r.peer === 'kubenode')!.medianNsPerOp;
  const summary = [
    `kubenode per pod from JS (including the napi crossing): ${fmtNs(perPod)} — ${fmtRatio(speedup(rows, S, 'go-upstream'))} upstream Go, ${fmtRatio(speedup(rows, S, 'plain-ts'))} plain TS; target ≥ 2× Go and ≤ 1 µs: ${speedup(rows, S, 'go-upstream') >= 2 && perPod <= 1000 ? 'met' : 'NOT met'}.`,
    `Batch of ${BATCH} pods in one crossing: ${fmtNs(rows.find((r) => r.scenario === B && r.peer === 'kubenode')!.medianNsPerOp)} per pod — ${fmtRatio(speedup(rows, B, 'go-upstream'))} upstream Go (Go row: its per-pod Admit, same workload).`,
    `Crossing choice: NUL-joined string vs string[]: ${fmtRatio(speedup(rows, S, 'kubenode (string[] crossing)'))} (the joined string is used).`,
    `Workload: the Go peer's safe list for this kernel (${safe.length} entries; kubenode's v1.37 table has ${ours}) + ${patterns.length} patterns; sysctls ${names.join(', ')}.`,
  ].join('\n\n');
  return `${comparisonTable(rows)}\n\n${summary}\n`;
}
