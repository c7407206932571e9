// Import cost of each entry point: time and RSS of a cold `import()` in a fresh Node process,
// then of the first call into the subsystem (which loads the binary). Median of 10 processes.
//   KUBENODE_IMPORTS_BASELINE=/path/to/other/checkout npm run bench -- imports   (before/after)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BenchContext, repoRoot } from './lib/harness.js';

interface Entry {
  /** The package subpath (the root is `kubenode`). */
  name: string;
  /** Its file under dist/. */
  file: string;
  /** One call into the subsystem, given the module as `m`. */
  call: string;
}

const ENTRIES: Entry[] = [
  { name: 'kubenode', file: 'index.js', call: "m.sysctl.isValidSysctlName('net.ipv4.ip_forward')" },
  { name: 'kubenode/sysctl', file: 'sysctl/index.js', call: "m.isValidSysctlName('net.ipv4.ip_forward')" },
  { name: 'kubenode/userns', file: 'userns/index.js', call: 'm.encodeFile(65536, 65536)' },
  { name: 'kubenode/bitmap', file: 'bitmap.js', call: "new m.AllocationBitmap(8, 'x').allocateNext()" },
  { name: 'kubenode/admission', file: 'admission/index.js', call: 'new m.PodAdmitChain([])' },
  { name: 'kubenode/conntrack', file: 'conntrack/index.js', call: '(await m.Conntrack.open()).close()' },
  { name: 'kubenode/servicecidr', file: 'servicecidr/index.js', call: "m.parsePrefix('10.96.0.0/12')" },
];

interface Sample {
  importMs: number;
  importRssMb: number;
  callMs: number;
  callRssMb: number;
}

function once(url: string, call: string): Sample {
  const script = `
const t0 = performance.now();
const m = await import(${JSON.stringify(url)});
const t1 = performance.now();
const rss1 = process.memoryUsage.rss();
${call};
const t2 = performance.now();
process.stdout.write(JSON.stringify({ importMs: t1 - t0, importRssMb: rss1 / 2 ** 20, callMs: t2 - t0, callRssMb: process.memoryUsage.rss() / 2 ** 20 }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`import of ${url} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Sample;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

function medians(samples: Sample[]): Record<keyof Sample, string> {
  const med = (k: keyof Sample) => median(samples.map((s) => s[k])).toFixed(0);
  return {
    importMs: med('importMs'),
    importRssMb: med('importRssMb'),
    callMs: med('callMs'),
    callRssMb: med('callRssMb'),
  };
}

export async function run(ctx: BenchContext): Promise<string> {
  // With a baseline tree, its processes alternate with this tree's, so both see the same load.
  const baseline = process.env.KUBENODE_IMPORTS_BASELINE;
  const runs = ctx.quick ? 2 : 10;
  const rows = baseline
    ? [
        '| entry point | import (ms), baseline → now | RSS after import (MB), baseline → now | import + first call (ms), baseline → now | RSS after the call (MB), baseline → now |',
        '|---|---:|---:|---:|---:|',
      ]
    : [
        '| entry point | import (ms) | RSS after import (MB) | import + first call (ms) | RSS after the call (MB) |',
        '|---|---:|---:|---:|---:|',
      ];
  for (const e of ENTRIES) {
    const url = pathToFileURL(join(repoRoot, 'dist', e.file)).href;
    const baseUrl = baseline ? pathToFileURL(join(baseline, 'dist', e.file)).href : null;
    once(url, e.call); // warms the page cache: "cold" is a fresh process, not a cold disk
    if (baseUrl) once(baseUrl, e.call);
    const now: Sample[] = [];
    const before: Sample[] = [];
    for (let i = 0; i < runs; i++) {
      if (baseUrl) before.push(once(baseUrl, e.call));
      now.push(once(url, e.call));
    }
    const n = medians(now);
    if (baseUrl) {
      const b = medians(before);
      rows.push(
        `| \`${e.name}\` | ${b.importMs} → ${n.importMs} | ${b.importRssMb} → ${n.importRssMb} | ${b.callMs} → ${n.callMs} | ${b.callRssMb} → ${n.callRssMb} |`,
      );
    } else {
      rows.push(`| \`${e.name}\` | ${n.importMs} | ${n.importRssMb} | ${n.callMs} | ${n.callRssMb} |`);
    }
    ctx.log(rows.at(-1) ?? '');
  }
  return [
    `Median of ${runs} fresh \`node\` processes per entry point (after one warm-up process), each timing \`await import()\` of the entry point's file in \`dist/\` and then one call into the subsystem (the call loads the native binary); RSS is \`process.memoryUsage.rss()\` at each point.${baseline ? ' "Baseline" is another checkout (`KUBENODE_IMPORTS_BASELINE=<its root>`, with its own `dist/`), measured in alternation with this one; before subpath exports its entry points were importable only by file path, which is what is measured for both.' : ''} Targets for \`kubenode/sysctl\`, \`kubenode/userns\` and \`kubenode/bitmap\`: ≤ 60 ms and ≤ 60 MB.`,
    '',
    ...rows,
  ].join('\n');
}
