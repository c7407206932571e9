// The daemons' commands load only their own group (ts/cli/main.ts): the lean program must offer
// exactly what the whole CLI offers for that command, options, defaults and help alike. The built
// entries are one file each (scripts/bundle-daemons.mjs), which Node loads alone.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerConntrack } from '../../ts/cli/conntrack.js';
import { buildProgram } from '../../ts/cli/program.js';
import { programOf } from '../../ts/cli/run.js';
import { registerServicecidr } from '../../ts/cli/servicecidr.js';
import { nodeBinary } from '../support/node-binary.js';

const repo = join(import.meta.dirname, '..', '..');

/** Every module URL Node resolves while importing `file` (ES imports and require() alike). */
function modulesLoadedBy(file: string): string[] {
  const out = execFileSync(
    // registerHooks (Node 22.15 and later) sees require() as well as import.
    nodeBinary(24),
    [
      '--input-type=module',
      '-e',
      `import { registerHooks } from 'node:module';
       const seen = [];
       registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r; } });
       await import(${JSON.stringify(pathToFileURL(file).href)});
       console.log(JSON.stringify(seen));`,
    ],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return JSON.parse(out) as string[];
}

/** Every command under `c` with its help text, by path. */
function helpTree(c: Command, path: string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  for (const sub of c.commands) {
    const p = [...path, sub.name()];
    out.set(p.join(' '), sub.helpInformation());
    for (const [k, v] of helpTree(sub, p)) out.set(k, v);
  }
  return out;
}

describe('daemon command groups', () => {
  const whole = helpTree(buildProgram());
  it.each([
    ['conntrack', registerConntrack],
    ['servicecidr-controller', registerServicecidr],
  ] as const)('%s: the lean program matches the whole CLI', (name, register) => {
    const lean = helpTree(programOf(register));
    const mine = [...whole].filter(([k]) => k === name || k.startsWith(`${name} `));
    expect(mine.length).toBeGreaterThan(0);
    expect([...lean].sort()).toEqual(mine.sort());
  });
});

describe('daemon entries as built', () => {
  it.each([
    ['conntrack', 'main-conntrack.js'],
    ['servicecidr-controller', 'main-servicecidr-controller.js'],
  ])('%s: dist/cli/%s loads no other kubenode module and no commander file', (_name, entry) => {
    const file = join(repo, 'dist', 'cli', entry);
    const loaded = modulesLoadedBy(file);
    const files = loaded.filter((u) => u.startsWith('file:') && u !== pathToFileURL(file).href);
    // Only packages loaded on first use through require() (node-gyp-build) may follow.
    expect(files.filter((u) => !u.includes('/node_modules/node-gyp-build/'))).toEqual([]);
    // The hook saw require(): ts/node-builtins.ts takes node:http with it, and nothing imports it.
    expect(loaded).toContain('node:http');
    // commander's require of child_process waits for a spawn, which the daemons never ask for.
    expect(loaded).not.toContain('node:child_process');
  });

  it('the whole program is still loaded module by module (the check sees separate files)', () => {
    const files = modulesLoadedBy(join(repo, 'dist', 'cli', 'program.js')).filter((u) =>
      u.startsWith(pathToFileURL(join(repo, 'dist')).href),
    );
    expect(files.length).toBeGreaterThan(20);
  });
});
