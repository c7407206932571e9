// The daemons' commands load only their own group (ts/cli/main.ts): the lean program must offer
// exactly what the whole CLI offers for that command, options, defaults and help alike.
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerConntrack } from '../../ts/cli/conntrack.js';
import { buildProgram } from '../../ts/cli/program.js';
import { programOf } from '../../ts/cli/run.js';
import { registerServicecidr } from '../../ts/cli/servicecidr.js';

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
