// Go's `time.ParseDuration`, for every duration flag of the daemons: the same syntax (`1s`,
// `500ms`, `1m30s`, `1.5h`), the same errors, the same int64-nanosecond overflow bound, so a
// value kube-proxy or kube-controller-manager accepts means the same here and one they refuse
// is refused here too.

const UNITS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const MAX = 1n << 63n;

/**
 * Go's `time.quote`: ASCII printables as they are (with `"` and `\\` escaped), every other byte
 * of the UTF-8 encoding as `\xNN`.
 */
function timeQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (c >= 0x80 || c < 0x20) {
      for (const b of new TextEncoder().encode(ch)) out += `\\x${b.toString(16).padStart(2, '0')}`;
    } else out += ch === '"' || ch === '\\' ? `\\${ch}` : ch;
  }
  return `${out}"`;
}

/** A duration that does not parse; the message is Go's. */
export class DurationSyntaxError extends Error {}

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/**
 * Parses a Go duration into nanoseconds.
 * @throws DurationSyntaxError with Go's message (`time: missing unit in duration "1"`).
 */
export function parseGoDuration(orig: string): bigint {
  const invalid = () => new DurationSyntaxError(`time: invalid duration ${timeQuote(orig)}`);
  let s = orig;
  let neg = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  // Special case: a lone zero needs no unit.
  if (s === '0') return 0n;
  if (s === '') throw invalid();
  let d = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || isDigit(s[0]))) throw invalid();
    // The integer part.
    let i = 0;
    let v = 0n;
    for (; i < s.length && isDigit(s[i]); i++) {
      if (v > MAX / 10n) throw invalid();
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > MAX) throw invalid();
    }
    const pre = i > 0;
    s = s.slice(i);
    // The fraction: digits past int64's precision are consumed and ignored, as Go does.
    let f = 0n;
    let scale = 1;
    let post = false;
    if (s[0] === '.') {
      s = s.slice(1);
      let j = 0;
      let overflow = false;
      for (; j < s.length && isDigit(s[j]); j++) {
        if (overflow) continue;
        if (f > (MAX - 1n) / 10n) {
          overflow = true;
          continue;
        }
        const y = f * 10n + BigInt(s.charCodeAt(j) - 48);
        if (y > MAX) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      post = j > 0;
      s = s.slice(j);
    }
    if (!pre && !post) throw invalid();
    // The unit: everything up to the next number.
    let u = 0;
    while (u < s.length && !(s[u] === '.' || isDigit(s[u]))) u++;
    if (u === 0) throw new DurationSyntaxError(`time: missing unit in duration ${timeQuote(orig)}`);
    const name = s.slice(0, u);
    s = s.slice(u);
    const unit = UNITS[name];
    if (unit === undefined) {
      throw new DurationSyntaxError(`time: unknown unit ${timeQuote(name)} in duration ${timeQuote(orig)}`);
    }
    if (v > MAX / unit) throw invalid();
    v *= unit;
    if (f > 0n) {
      // float64 arithmetic, as Go: the same rounding for fractions like 0.3333333333333333333h.
      v += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (v > MAX) throw invalid();
    }
    d += v;
    if (d > MAX) throw invalid();
  }
  if (neg) return -d;
  if (d > MAX - 1n) throw invalid();
  return d;
}

/**
 * The longest duration a daemon timer takes: Node's `setTimeout` holds a signed 32-bit count of
 * milliseconds and turns anything longer into 1 ms.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** {@link MAX_TIMER_MS} spelt as Go prints it. */
export const MAX_TIMER = '596h31m23.647s';

/**
 * A duration flag's value in milliseconds. The message of the error names the flag as pflag
 * does (`invalid argument "1000" for "--min-sync-period" flag: time: missing unit ...`); a
 * negative value or one beyond {@link MAX_TIMER} is refused.
 */
export function durationFlagMs(flag: string, value: string): number {
  let ns: bigint;
  try {
    ns = parseGoDuration(value);
  } catch (e) {
    if (!(e instanceof DurationSyntaxError)) throw e;
    const hint = /^\d+$/.test(value) ? ` (a duration needs a unit: ${value}ms, ${value}s)` : '';
    throw new DurationSyntaxError(
      `invalid argument ${timeQuote(value)} for "${flag}" flag: ${e.message}${hint}`,
    );
  }
  if (ns < 0n) throw new DurationSyntaxError(`${flag} must not be negative, got ${timeQuote(value)}`);
  const ms = Number(ns) / 1e6;
  if (ms > MAX_TIMER_MS) {
    throw new DurationSyntaxError(`${flag} must be at most ${MAX_TIMER}, got ${timeQuote(value)}`);
  }
  return ms;
}
