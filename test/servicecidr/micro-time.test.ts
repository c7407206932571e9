// Lease times in Go's RFC3339Micro layout, as metav1.MicroTime marshals them.
import { describe, expect, it } from 'vitest';
import { microTime } from '../../ts/servicecidr/micro-time.js';

describe('microTime', () => {
  it.each([
    // Values checked against Go: time.UnixMicro(µs).UTC().Format("2006-01-02T15:04:05.000000Z07:00").
    [0, '1970-01-01T00:00:00.000000Z'],
    [1_795_000_000_123, '2026-11-18T11:06:40.123000Z'],
    [1_795_000_000_123.456, '2026-11-18T11:06:40.123456Z'],
    [951_782_400_000, '2000-02-29T00:00:00.000000Z'],
    [253_402_300_799_999, '9999-12-31T23:59:59.999000Z'],
  ])('%s ms is %s', (ms, want) => {
    expect(microTime(ms)).toBe(want);
  });

  it('is what the API server parses back to the same instant', () => {
    const now = Date.now();
    expect(new Date(microTime(now)).getTime()).toBe(now);
  });

  it('refuses a time the layout cannot hold', () => {
    expect(() => microTime(Number.NaN)).toThrow(/MicroTime/);
    expect(() => microTime(253_402_300_800_000)).toThrow(/MicroTime/);
    expect(() => microTime(-62_167_219_200_001)).toThrow(/MicroTime/);
  });
});
