// The TS sources form no import cycle, type-only imports included: shared types live in leaf
// modules (ts/doctor-types.ts, ts/kube/types.ts) that import nothing back.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tsSources } from './support/ts-sources.js';

const ROOT = resolve(import.meta.dirname, '../ts');

/** Relative imports and re-exports of each file, as resolved file paths. */
function graph(files: string[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const f of files) {
    const src = readFileSync(f, 'utf8');
    const deps = [...src.matchAll(/^(?:import|export)\s[^'";]*?from\s+'(\.[^']+)'/gm)].map((m) =>
      resolve(dirname(f), (m[1] as string).replace(/\.js$/, '.ts')),
    );
    edges.set(f, deps);
  }
  return edges;
}

function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of edges.get(f) ?? []) {
      if (state.get(d) === 'open') found.push(stack.slice(stack.indexOf(d)).map((p) => relative(ROOT, p)));
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of edges.keys()) if (!state.has(f)) visit(f);
  return found;
}

describe('ts/ import graph', () => {
  it('reads the imports (doctor.ts imports the subsystem sections)', () => {
    const edges = graph(tsSources(ROOT));
    expect(edges.get(join(ROOT, 'doctor.ts'))).toContain(join(ROOT, 'sysctl/doctor.ts'));
  });

  it('has no cycle, type-only imports included', () => {
    expect(cycles(graph(tsSources(ROOT)))).toEqual([]);
  });

  it('ts/kube/ loads no subsystem module (kube-level code sits below the subsystems)', () => {
    const kube = join(ROOT, 'kube');
    const upward: string[] = [];
    for (const f of tsSources(kube)) {
      const src = readFileSync(f, 'utf8');
      for (const m of src.matchAll(/^(?:import|export)\s(?!type\s)[^'";]*?from\s+'(\.[^']+)'/gm)) {
        const dep = resolve(dirname(f), m[1] as string);
        // Leaf modules at the top (errors, peers) are fine; subsystem folders are not.
        if (!dep.startsWith(kube) && relative(ROOT, dep).includes('/'))
          upward.push(`${relative(ROOT, f)} -> ${m[1]}`);
      }
    }
    expect(upward).toEqual([]);
  });
});
