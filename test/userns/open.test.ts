// `UsernsCore.open(config, seed?)`: the configuration is the core's PodsConfig, the seed is
// checked by the bitmap core's seed rule before the task starts.
import { describe, expect, it } from 'vitest';
import { fromNative, KubenodeRangeError, KubenodeTypeError } from '../../ts/errors.js';
import { PodCalls } from '../../ts/userns/calls.js';
import { podsDir } from './dirs.js';

const L = 65536;
const config = (dir: string) => ({ podsDir: dir, idsPerPod: L, firstId: L, length: L * 1000, maxPods: 110 });

describe('UsernsCore.open', () => {
  it('refuses a bad seed synchronously, with the typed error', () => {
    const calls = new PodCalls();
    try {
      for (const [seed, cls, message] of [
        [0.5, KubenodeTypeError, 'seed must be an integer, got 0.5'],
        [2 ** 53, KubenodeRangeError, 'seed must be in [0, 9007199254740991], got 9007199254740992'],
      ] as const) {
        let e: unknown;
        try {
          void calls.core.open(config(podsDir()), seed);
        } catch (x) {
          e = fromNative(x);
        }
        expect(e).toBeInstanceOf(cls);
        expect(e).toMatchObject({ message });
      }
      expect(calls.core.isOpen).toBe(false);
    } finally {
      calls.core.close();
    }
  });

  it('the seed reaches the manager: equal seeds hand out equal ranges', async () => {
    const first = async (seed: number) => {
      const calls = new PodCalls();
      try {
        const o = await calls.core.open(config(podsDir()), seed);
        expect(o.error ?? null).toBeNull();
        const outcomes = await Promise.all(['a', 'b', 'c'].map((u) => calls.run(u, false)));
        return outcomes.map((x) => x.namespace?.uidMappings[0]?.hostId);
      } finally {
        calls.core.close();
      }
    };
    const a = await first(11);
    expect(await first(11)).toEqual(a);
    expect(await first(12)).not.toEqual(a);
  });
});
