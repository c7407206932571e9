// The generated typings (ts/binding.d.ts) must describe exactly what the loaded binary exports.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { native } from '../ts/native.js';

describe('native binding', () => {
  it('exports exactly what ts/binding.d.ts declares', () => {
    const dts = readFileSync(new URL('../ts/binding.d.ts', import.meta.url), 'utf8');
    const declared = new Set(
      [...dts.matchAll(/^export declare (?:class|function|const enum|enum|const) (\w+)/gm)].map((m) => m[1]),
    );
    const actual = new Set(Object.keys(native));
    expect([...actual].sort()).toEqual([...declared].sort());
  });
});
