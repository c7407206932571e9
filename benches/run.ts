// Runs the benchmarks and rewrites their sections of BENCHMARKS.md.
//   npm run bench [-- [--quick] [name ...]]     names: the <name>.bench.ts files in benches/
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type BenchContext, repoRoot } from './lib/harness.js';

interface BenchModule {
  run(ctx: BenchContext): Promise<string>;
}

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const wanted = args.filter((a) => !a.startsWith('--'));
const dir = join(repoRoot, 'benches');
const available = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''))
  .sort();
const names = wanted.length ? wanted : available;
for (const n of names) {
  if (!available.includes(n)) {
    console.error(`unknown benchmark ${n}; available: ${available.join(', ')}`);
    process.exit(2);
  }
}

const ctx: BenchContext = { quick, log: (m) => console.log(m) };
const file = join(repoRoot, 'BENCHMARKS.md');
let doc: string;
try {
  doc = readFileSync(file, 'utf8');
} catch {
  doc =
    '# Benchmarks\n\nMedians and ratios against peers measured in the same run; absolute times vary ' +
    'between machines, ratios much less. Each section is rewritten by the command shown in it.\n';
}

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
const machine = `${cpu}, ${os.cpus().length} cores, Linux ${os.release()}, Node ${process.version}`;
let failed = false;
for (const name of names) {
  console.log(`\n== ${name}`);
  const mod = (await import(pathToFileURL(join(dir, `${name}.bench.ts`)).href)) as BenchModule;
  const loadBefore = os.loadavg()[0] ?? 0;
  let body: string;
  try {
    body = await mod.run(ctx);
  } catch (e) {
    console.error(`benchmark ${name} failed: ${(e as Error).stack ?? String(e)}`);
    failed = true;
    continue;
  }
  if (quick) continue; // quick runs check the code, they do not publish numbers
  const section = [
    `<!-- bench:${name}:start -->`,
    `## ${name}`,
    '',
    `Command: \`npm run bench -- ${name}\` — ${new Date().toISOString().slice(0, 10)}, ${machine}; ` +
      `1-minute load average ${loadBefore.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after.`,
    '',
    body.trim(),
    `<!-- bench:${name}:end -->`,
  ].join('\n');
  const re = new RegExp(`<!-- bench:${name}:start -->[\\s\\S]*?<!-- bench:${name}:end -->`);
  doc = re.test(doc) ? doc.replace(re, section) : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, doc);
  console.log(body);
}
process.exitCode = failed ? 1 : 0;
