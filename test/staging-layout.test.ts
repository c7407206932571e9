// The staging areas' layouts and the pod's host-flag bits are defined once, in Rust, and read
// by TS from the binding: no TS source may keep its own copy of a value the binding defines.
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { native } from '../ts/native.js';
import { podFlagBits } from '../ts/sysctl/pod.js';
import { tsSources } from './support/ts-sources.js';

const ROOT = resolve(import.meta.dirname, '../ts');

/** Names a hand-kept copy of a layout value or a host-flag bit would go by. */
const COPY =
  /\b(?:const|let|var)\s+(?:HOST_NETWORK|HOST_IPC|POD_USERNS|[A-Z_]*STAGE[A-Z_]*|STAGED_ERROR|HEADER|SLOT|COUNT|GENERATION|FULL|UNREADABLE)\s*=\s*-?(?:\d|0x)/;

describe('layouts shared by Rust and TS', () => {
  it('no TS source keeps its own copy of a layout value or flag bit', () => {
    const copies = tsSources(ROOT)
      .filter((f) => COPY.test(readFileSync(f, 'utf8')))
      .map((f) => relative(ROOT, f));
    expect(copies).toEqual([]);
  });

  it('the pod flag bits are the binding’s, one bit each', () => {
    const bits = podFlagBits();
    const at = native.sysctlStageLayout();
    expect(bits).toEqual({ hostNetwork: at.hostNetwork, hostIpc: at.hostIpc, podUserns: at.podUserns });
    const all = [bits.hostNetwork, bits.hostIpc, bits.podUserns, native.SYSCTL_ALLOW_HOST_NAMESPACED];
    for (const b of all) expect(b & (b - 1)).toBe(0);
    expect(all.reduce((a, b) => a | b, 0)).toBe(all.reduce((a, b) => a + b, 0));
  });

  it('each staging area holds its header and data', () => {
    const s = native.sysctlStageLayout();
    const sysctlWords = new Uint32Array(native.sysctlStagingBuffer()).length;
    expect(new Set([s.slot, s.count, s.flags]).size).toBe(3);
    expect(Math.max(s.slot, s.count, s.flags)).toBeLessThan(s.ids);
    expect(s.ids + s.capacity).toBe(sysctlWords);
    const b = native.bitmapStageLayout();
    const bitmapWords = new Uint32Array(native.bitmapStagingBuffer()).length;
    expect(new Set([b.slot, b.count, b.generation]).size).toBe(3);
    expect(Math.max(b.slot, b.count, b.generation)).toBeLessThan(b.data);
    // The data is also read as Float64Array from `data / 2`.
    expect(b.data % 2).toBe(0);
    expect(b.data + b.capacity).toBe(bitmapWords);
  });
});
