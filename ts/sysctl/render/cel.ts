// CEL text building: literals the API server's CEL parser reads back exactly.

/** A CEL double-quoted string literal for `s` (backslash, quote and control characters escaped). */
export function celString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\' || ch === '"') out += `\\${ch}`;
    else if (c < 0x20 || c === 0x7f) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A CEL list literal of strings. */
export function celList(items: readonly string[]): string {
  return `[${items.map(celString).join(', ')}]`;
}

/** `a || b || …`, or `false` for none. */
export function anyOf(terms: readonly string[]): string {
  return terms.length === 0 ? 'false' : terms.join(' || ');
}
