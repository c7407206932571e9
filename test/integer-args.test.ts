// Numbers the binding takes for 32-bit parameters are checked by the core, not truncated: napi
// would turn 2**32 + 5 into 5 and 1.5 into 1 without a word.
import { describe, expect, it } from 'vitest';
import { AllocationBitmap } from '../ts/bitmap.js';
import { callNative, KubenodeRangeError, KubenodeTypeError } from '../ts/errors.js';
import { sysctl, userns } from '../ts/index.js';
import { native } from '../ts/native.js';

const threw = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
};

describe('32-bit numbers at the binding', () => {
  it.each([
    [2 ** 32 + 5, 1, KubenodeRangeError, 'hostId must be in [0, 4294967295], got 4294967301'],
    [1.5, 1, KubenodeTypeError, 'hostId must be an integer, got 1.5'],
    [-1, 1, KubenodeRangeError, 'hostId must be in [0, 4294967295], got -1'],
    [0, 1e21, KubenodeRangeError, 'length must be in [0, 4294967295], got 1e+21'],
    [0, Number.POSITIVE_INFINITY, KubenodeTypeError, 'length must be an integer, got Infinity'],
    [0, Number.NaN, KubenodeTypeError, 'length must be an integer, got NaN'],
  ])('usernsEncodeFile(%s, %s) is refused', (hostId, length, cls, message) => {
    const e = threw(() => callNative(() => native.usernsEncodeFile(hostId, length)));
    expect(e).toBeInstanceOf(cls);
    expect((e as Error).message).toBe(message);
    // The façade says the same.
    expect(() => userns.encodeFile(hostId, length)).toThrow(message);
  });

  it('usernsEncodeFile keeps the full 32-bit range', () => {
    expect(native.usernsEncodeFile(2 ** 32 - 65536, 65536)).toContain('"hostId":4294901760');
  });

  it('usernsVerifyMapping refuses a truncated host ID before starting anything', async () => {
    const e = threw(() => callNative(() => native.usernsVerifyMapping(2 ** 32 + 65536, 65536)));
    expect(e).toBeInstanceOf(KubenodeRangeError);
    expect((e as Error).message).toBe('hostId must be in [0, 4294967295], got 4295032832');
    await expect(userns.verifyRange(65536, 0.5)).rejects.toThrow('length must be an integer, got 0.5');
  });

  it.each([
    [1.5, KubenodeTypeError, 'pid must be an integer, got 1.5'],
    [0, KubenodeRangeError, 'pid must be in [1, 4294967295], got 0'],
    [2 ** 32 + 1, KubenodeRangeError, 'pid must be in [1, 4294967295], got 4294967297'],
    [-0, KubenodeRangeError, 'pid must be in [1, 4294967295], got 0'],
  ])('sysctlApply refuses pid %s', async (pid, cls, message) => {
    const e = threw(() => callNative(() => native.sysctlApply({ pid }, [])));
    expect(e).toBeInstanceOf(cls);
    expect((e as Error).message).toBe(message);
    await expect(sysctl.applySysctls({ pid }, [])).rejects.toThrow(message);
  });

  it('a non-number is refused by the façade in the same words', () => {
    expect(() => userns.encodeFile('7' as unknown as number, 1)).toThrow(
      'hostId must be an integer, got "7"',
    );
  });

  it.each([
    [{ seed: 1e21 }, KubenodeRangeError, 'seed must be in [0, 9007199254740991], got 1e+21'],
    [{ offset: Number.NEGATIVE_INFINITY }, KubenodeTypeError, 'offset must be an integer, got -Infinity'],
    [{ offset: 1e-7 }, KubenodeTypeError, 'offset must be an integer, got 1e-7'],
  ])('the bitmap core prints %o as JS would', (options, cls, message) => {
    const e = threw(() => callNative(() => new native.AllocationBitmap(8, 'r', options)));
    expect(e).toBeInstanceOf(cls);
    expect((e as Error).message).toBe(message);
    expect(() => new AllocationBitmap(8, 'r', options)).toThrow(message);
  });

  it('allocate refuses a fraction in the core, as release and has do', () => {
    const b = new native.AllocationBitmap(8, 'r', {});
    for (const call of [() => b.allocate(1.5), () => b.release(1.5), () => b.has(1.5)]) {
      const e = threw(() => callNative(call));
      expect(e).toBeInstanceOf(KubenodeTypeError);
      expect((e as Error).message).toBe('offset must be an integer, got 1.5');
    }
    expect(() => new AllocationBitmap(8, 'r').allocate(Number.NaN)).toThrow(
      'offset must be an integer, got NaN',
    );
  });

  it.each([
    [
      { idsPerPod: 65536 + 2 ** 32, firstId: 65536, length: 65536, maxPods: 1 },
      KubenodeRangeError,
      'idsPerPod must be in [0, 4294967295], got 4295032832',
    ],
    [
      { idsPerPod: 65536, firstId: 0.5, length: 65536, maxPods: 1 },
      KubenodeTypeError,
      'firstId must be an integer, got 0.5',
    ],
    [
      { idsPerPod: 65536, firstId: 65536, length: -65536, maxPods: 1 },
      KubenodeRangeError,
      'length must be in [0, 4294967295], got -65536',
    ],
    [
      { idsPerPod: 65536, firstId: 65536, length: 65536, maxPods: 1e300 },
      KubenodeRangeError,
      'maxPods must be in [0, 4294967295], got 1e+300',
    ],
  ])('usernsLayout refuses %o', (config, cls, message) => {
    const e = threw(() => callNative(() => native.usernsLayout(config)));
    expect(e).toBeInstanceOf(cls);
    expect((e as Error).message).toBe(message);
    expect(() => userns.layout(config.idsPerPod, config.firstId, config.length, config.maxPods)).toThrow(
      message,
    );
  });

  it('usernsLayout lays out a valid pool', () => {
    expect(userns.layout(65536, 65536, 65536 * 4, 3)).toMatchObject({ idsPerPod: 65536, off: 1, slots: 4 });
  });
});
