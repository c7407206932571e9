// The escapes applied to bare text the CLI prints, so it cannot drive a terminal. Works without
// the binding (the output layer prints `kubenode doctor`'s report when there is none). Go's `%q`
// is not here: the Rust core owns it, and TypeScript quotes through the binding's `goQuote`.

const hex = (u: number, width: number) => u.toString(16).padStart(width, '0');

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
