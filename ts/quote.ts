// Go's `%q` (strconv.Quote) for the messages built on the TS side, the same as the Rust cores'
// `go_quote`, and the escapes applied to bare text the CLI prints. A leaf module: sysctl and
// userns both quote with it, and loading it loads nothing else.

/** Go's `unicode.IsPrint` for the code points it rejects (the Rust core tracks the same set). */
function isPrint(u: number): boolean {
  return !(
    u < 0x20 ||
    (u >= 0x7f && u <= 0x9f) ||
    u === 0xa0 ||
    u === 0xad ||
    u === 0x061c ||
    u === 0x1680 ||
    u === 0x180e ||
    (u >= 0x2000 && u <= 0x200f) ||
    (u >= 0x2028 && u <= 0x202f) ||
    (u >= 0x205f && u <= 0x206f) ||
    u === 0x3000 ||
    (u >= 0xe000 && u <= 0xf8ff) ||
    u === 0xfeff ||
    (u >= 0xfff9 && u <= 0xfffb) ||
    (u & 0xfffe) === 0xfffe ||
    (u >= 0xfdd0 && u <= 0xfdef) ||
    (u >= 0xe0000 && u <= 0xe007f) ||
    u >= 0xf0000
  );
}

const NAMED: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
};

const hex = (u: number, width: number) => u.toString(16).padStart(width, '0');

export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const u = ch.codePointAt(0) ?? 0;
    const named = NAMED[ch];
    if (named !== undefined) out += named;
    else if (isPrint(u)) out += ch;
    else if (u < 0x80) out += `\\x${hex(u, 2)}`;
    else if (u < 0x10000) out += `\\u${hex(u, 4)}`;
    else out += `\\U${hex(u, 8)}`;
  }
  return `${out}"`;
}

/** The escape for a control character (C0, DEL, C1), or undefined for any other character. */
function controlEscape(ch: string): string | undefined {
  const c = ch.codePointAt(0) ?? 0;
  if (ch === '\n') return '\\n';
  if (ch === '\t') return '\\t';
  if (ch === '\r') return '\\r';
  if (c < 0x20 || c === 0x7f) return `\\x${hex(c, 2)}`;
  if (c >= 0x80 && c <= 0x9f) return `\\u${hex(c, 4)}`;
  return undefined;
}

/** Escapes every control character except line feed and tab, so text cannot drive a terminal. */
export function escapeControls(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (ch) => controlEscape(ch) ?? ch);
}
