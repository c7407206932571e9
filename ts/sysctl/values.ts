// Value syntax of SysctlPolicy rules, written once as regex sources that mean the same in
// JavaScript and in RE2 (CEL's `matches`/`find`), so the in-process check and the rendered
// admission policy cannot drift. Whitespace is the kernel's (ASCII isspace), not Unicode's.

/** One whitespace character, as the kernel's sysctl parser skips it. */
export const SPACE = '[\\t\\n\\v\\f\\r ]';

/**
 * One integer field: at most 16 significant digits after leading zeros, so every match parses
 * without overflow in CEL's int64 and exactly in a JS number (the safe-integer check follows).
 */
export const INT_FIELD = '-?0*[0-9]{1,16}';

/** Largest magnitude accepted for an integer value (Number.MAX_SAFE_INTEGER). */
export const MAX_MAGNITUDE = Number.MAX_SAFE_INTEGER;

/**
 * Longest value (in code points, as CEL's `size`) a value rule inspects; longer ones are
 * refused. The kernel reads a sysctl write within one page, and the limit keeps the rendered
 * CEL within the API server's cost budget.
 */
export const MAX_VALUE_LENGTH = 4096;

/** Whether `v` has more than MAX_VALUE_LENGTH code points. */
export function tooLong(v: string): boolean {
  if (v.length <= MAX_VALUE_LENGTH) return false;
  if (v.length > 2 * MAX_VALUE_LENGTH) return true;
  let n = 0;
  for (const _ of v) if (++n > MAX_VALUE_LENGTH) return true;
  return false;
}

/** Whole-value regex source for `count` whitespace-separated integer fields. */
export function integerFieldsSource(count: number): string {
  return `^${SPACE}*${Array.from({ length: count }, () => `(${INT_FIELD})`).join(`${SPACE}+`)}${SPACE}*$`;
}

const EDGES = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g');
const GAPS = new RegExp(`${SPACE}+`);

/** Leading/trailing whitespace dropped, inner runs folded to one space. */
export function canonicalValue(v: string): string {
  return v.replace(EDGES, '').split(GAPS).join(' ');
}

/** The value's integer fields when it has exactly `count` of them, each a safe integer. */
export function integerFields(v: string, count: number): number[] | null {
  const m = new RegExp(integerFieldsSource(count)).exec(v);
  if (m === null) return null;
  const out = m.slice(1).map(Number);
  return out.every((n) => Math.abs(n) <= MAX_MAGNITUDE) ? out : null;
}

/** Inclusive bounds of an integer field. */
export interface IntRange {
  /** Smallest allowed value; no lower bound when absent. */
  min?: number;
  /** Largest allowed value; no upper bound when absent. */
  max?: number;
}

/** Upstream-style detail for a value outside `r` (`must be between 128 and 4096`). */
export function rangeDetail(r: IntRange): string {
  if (r.min !== undefined && r.max !== undefined) return `must be between ${r.min} and ${r.max}`;
  if (r.min !== undefined) return `must be at least ${r.min}`;
  return `must be at most ${r.max}`;
}

export function inRange(n: number, r: IntRange): boolean {
  return (r.min === undefined || n >= r.min) && (r.max === undefined || n <= r.max);
}

/** Escapes a literal for a regex read the same by RE2 and JavaScript. */
export function regexLiteral(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}
