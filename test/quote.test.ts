// One Go `%q` for every message built on the TS side (sysctl policy and annotation messages,
// userns subordinate-ID errors), matching Go's strconv.Quote and the Rust cores' go_quote.
import { describe, expect, it } from 'vitest';
import { userns } from '../ts/index.js';
import { goQuote } from '../ts/quote.js';

describe('goQuote', () => {
  it("uses Go's named escapes for BEL, BS, FF and VT", () => {
    expect(goQuote('\x07\b\f\v\n\r\t')).toBe('"\\a\\b\\f\\v\\n\\r\\t"');
  });

  it('escapes what unicode.IsPrint rejects and keeps printable text', () => {
    expect(goQuote('ä"\\\x00\x7f')).toBe('"ä\\"\\\\\\x00\\x7f"');
    expect(goQuote('\u0085\u00a0\u00ad\u200b\u2028\ufeff')).toBe(
      '"\\u0085\\u00a0\\u00ad\\u200b\\u2028\\ufeff"',
    );
    expect(goQuote('\u{f0000}😀')).toBe('"\\U000f0000😀"');
  });

  it('quotes userns getsubids errors the same way', () => {
    expect(() => userns.parseGetSubIdsOutput('x\u0085')).toThrow('invalid line "x\\u0085"');
    expect(() => userns.parseGetSubIdsOutput('\x07')).toThrow('invalid line "\\a"');
  });
});
