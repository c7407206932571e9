// Go's `%q` as the TS side gets it: from the binding (the Rust core owns it; crates/kubenode-sysctl
// tests/quote_go.rs compares it with Go over every code point). Here: the binding's export and
// the userns getsubids messages built with it.
import { describe, expect, it } from 'vitest';
import { userns } from '../ts/index.js';
import { native } from '../ts/native.js';

describe('goQuote', () => {
  it("uses Go's named escapes for BEL, BS, FF and VT", () => {
    expect(native.goQuote('\x07\b\f\v\n\r\t')).toBe('"\\a\\b\\f\\v\\n\\r\\t"');
  });

  it('escapes what strconv.IsPrint rejects and keeps printable text', () => {
    expect(native.goQuote('ä"\\\x00\x7f')).toBe('"ä\\"\\\\\\x00\\x7f"');
    expect(native.goQuote('\u0085\u00a0\u00ad\u200b\u2028\ufeff')).toBe(
      '"\\u0085\\u00a0\\u00ad\\u200b\\u2028\\ufeff"',
    );
    expect(native.goQuote('\u{f0000}😀')).toBe('"\\U000f0000😀"');
    // Format characters and unassigned code points, which Go escapes too.
    expect(native.goQuote('\u0600\u06dd\u0378')).toBe('"\\u0600\\u06dd\\u0378"');
  });

  it('quotes userns getsubids errors the same way', () => {
    expect(() => userns.parseGetSubIdsOutput('x\u0085')).toThrow('invalid line "x\\u0085"');
    expect(() => userns.parseGetSubIdsOutput('\x07')).toThrow('invalid line "\\a"');
    expect(() => userns.parseGetSubIdsOutput('x\u0600')).toThrow('invalid line "x\\u0600"');
  });
});
