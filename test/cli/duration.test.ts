// The daemons' duration flags parse as Go's time.ParseDuration: its own test tables
// (src/time/time_test.go), then the flag wrapper's bounds.
import { describe, expect, it } from 'vitest';
import { DurationSyntaxError, durationFlagMs, MAX_TIMER_MS, parseGoDuration } from '../../ts/cli/duration.js';

const S = 1_000_000_000n;
const MS = 1_000_000n;
const US = 1_000n;
const M = 60n * S;
const H = 60n * M;
const MAX = (1n << 63n) - 1n;
const MIN = -(1n << 63n);

const OK: [string, bigint][] = [
  ['0', 0n],
  ['5s', 5n * S],
  ['30s', 30n * S],
  ['1478s', 1478n * S],
  ['-5s', -5n * S],
  ['+5s', 5n * S],
  ['-0', 0n],
  ['+0', 0n],
  ['5.0s', 5n * S],
  ['5.6s', 5n * S + 600n * MS],
  ['5.s', 5n * S],
  ['.5s', 500n * MS],
  ['1.0s', S],
  ['1.00s', S],
  ['1.004s', S + 4n * MS],
  ['1.0040s', S + 4n * MS],
  ['100.00100s', 100n * S + MS],
  ['10ns', 10n],
  ['11us', 11n * US],
  ['12\u00b5s', 12n * US],
  ['12\u03bcs', 12n * US],
  ['13ms', 13n * MS],
  ['14s', 14n * S],
  ['15m', 15n * M],
  ['16h', 16n * H],
  ['3h30m', 3n * H + 30n * M],
  ['10.5s4m', 4n * M + 10n * S + 500n * MS],
  ['-2m3.4s', -(2n * M + 3n * S + 400n * MS)],
  ['1h2m3s4ms5us6ns', H + 2n * M + 3n * S + 4n * MS + 5n * US + 6n],
  ['39h9m14.425s', 39n * H + 9n * M + 14n * S + 425n * MS],
  ['52763797000ns', 52763797000n],
  ['0.3333333333333333333h', 20n * M],
  ['9007199254740993ns', (1n << 53n) + 1n],
  ['9223372036854775807ns', MAX],
  ['9223372036854775.807us', MAX],
  ['9223372036s854ms775us807ns', MAX],
  ['-9223372036854775808ns', MIN],
  ['-9223372036854775.808us', MIN],
  ['-9223372036s854ms775us808ns', MIN],
  ['-2562047h47m16.854775808s', MIN],
  ['0.100000000000000000000h', 6n * M],
  ['0.830103483285477580700h', 49n * M + 48n * S + 372539827n],
];

const BAD: [string, string][] = [
  ['', 'time: invalid duration ""'],
  ['3', 'time: missing unit in duration "3"'],
  ['-', 'time: invalid duration "-"'],
  ['s', 'time: invalid duration "s"'],
  ['.', 'time: invalid duration "."'],
  ['-.', 'time: invalid duration "-."'],
  ['.s', 'time: invalid duration ".s"'],
  ['+.s', 'time: invalid duration "+.s"'],
  ['1d', 'time: unknown unit "d" in duration "1d"'],
  ['\ufffd', 'time: invalid duration "\\xef\\xbf\\xbd"'],
  ['\ufffd hello \ufffd world', 'time: invalid duration "\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world"'],
  ['9223372036854775810ns', 'time: invalid duration "9223372036854775810ns"'],
  ['9223372036854775808ns', 'time: invalid duration "9223372036854775808ns"'],
  ['-9223372036854775809ns', 'time: invalid duration "-9223372036854775809ns"'],
  ['9223372036854776us', 'time: invalid duration "9223372036854776us"'],
  ['3000000h', 'time: invalid duration "3000000h"'],
  ['9223372036854775.808us', 'time: invalid duration "9223372036854775.808us"'],
  ['9223372036854ms775us808ns', 'time: invalid duration "9223372036854ms775us808ns"'],
  ['1s\n2s', 'time: unknown unit "s\\x0a" in duration "1s\\x0a2s"'],
];

describe('parseGoDuration (time.ParseDuration)', () => {
  it.each(OK)('%j parses', (s, want) => {
    expect(parseGoDuration(s)).toBe(want);
  });
  it.each(BAD)('%j is refused', (s, msg) => {
    expect(() => parseGoDuration(s)).toThrow(new DurationSyntaxError(msg));
  });
});

describe('durationFlagMs', () => {
  it('gives milliseconds', () => {
    expect(durationFlagMs('--x', '1s')).toBe(1000);
    expect(durationFlagMs('--x', '500ms')).toBe(500);
    expect(durationFlagMs('--x', '1m30s')).toBe(90_000);
    expect(durationFlagMs('--x', '1.5us')).toBe(0.0015);
    expect(durationFlagMs('--x', '0')).toBe(0);
  });
  it('refuses a plain integer as pflag does, with a hint', () => {
    expect(() => durationFlagMs('--min-sync-period', '1000')).toThrow(
      'invalid argument "1000" for "--min-sync-period" flag: time: missing unit in duration "1000" (a duration needs a unit: 1000ms, 1000s)',
    );
  });
  it('refuses a negative value and one a timer cannot hold', () => {
    expect(() => durationFlagMs('--x', '-1s')).toThrow('--x must not be negative, got "-1s"');
    expect(durationFlagMs('--x', '596h31m23.647s')).toBe(MAX_TIMER_MS);
    expect(() => durationFlagMs('--x', '596h31m23.648s')).toThrow(
      '--x must be at most 596h31m23.647s, got "596h31m23.648s"',
    );
    expect(() => durationFlagMs('--x', '1000h')).toThrow('--x must be at most 596h31m23.647s');
  });
});
