// Import cost of each entry point: time and RSS of a cold `import()` in a fresh Node process,
// then of the first call into the subsystem (which loads the binary). Median of 10 processes.
//   KUBENODE_IMPORTS_ROOT=/path/to/other/checkout npm run bench -- imports   (another tree's dist/)
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

export async function run(ctx: BenchContext): Promise<string> {
  const root = process.env.KUBENODE_IMPORTS_ROOT ?? repoRoot;
  const runs = ctx.quick ? 2 : 10;
  const rows = [
    '| entry point | import (ms) | RSS after import (MB) | import + first call (ms) | RSS after the call (MB) |',
    '|---|---:|---:|---:|---:|',
  ];
  for (const e of ENTRIES) {
    const url = pathToFileURL(join(root, 'dist', e.file)).href;
    once(url, e.call); // warms the page cache: "cold" is a fresh process, not a cold disk
    const samples = Array.from({ length: runs }, () => once(url, e.call));
    const med = (k: keyof Sample) => median(samples.map((s) => s[k])).toFixed(0);
    rows.push(
      `| \`${e.name}\` | ${med('importMs')} | ${med('importRssMb')} | ${med('callMs')} | ${med('callRssMb')} |`,
    );
    ctx.log(`${e.name}: ${rows.at(-1)}`);
  }
  return [
    `Median of ${runs} fresh \`node\` processes per entry point (after one warm-up process), each timing \`await import()\` of the entry point's file in \`dist/\` and then one call into the subsystem, which loads the native binary; RSS is \`process.memoryUsage.rss()\` at each point. Targets for \`kubenode/sysctl\`, \`kubenode/userns\` and \`kubenode/bitmap\`: ≤ 60 ms and ≤ 60 MB.`,
    '',
    ...rows,
  ].join('\n');
}
