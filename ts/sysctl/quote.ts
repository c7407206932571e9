// Go's `%q` for the messages built on the TS side (the Rust core has its own copy), and the same
// escapes applied to bare text the CLI prints.

/** Go's escape for a control character (C0, DEL, C1), or undefined for any other character. */
function controlEscape(ch: string): string | undefined {
  const c = ch.codePointAt(0) ?? 0;
  if (ch === '\n') return '\\n';
  if (ch === '\t') return '\\t';
  if (ch === '\r') return '\\r';
  if (c < 0x20 || c === 0x7f) return `\\x${c.toString(16).padStart(2, '0')}`;
  if (c >= 0x80 && c <= 0x9f) return `\\u${c.toString(16).padStart(4, '0')}`;
  return undefined;
}

export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else out += controlEscape(ch) ?? ch;
  }
  return `${out}"`;
}

/** Escapes every control character except line feed and tab, so text cannot drive a terminal. */
export function escapeControls(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  return s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (ch) => controlEscape(ch) ?? ch);
}
