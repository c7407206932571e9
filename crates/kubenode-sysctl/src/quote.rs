//! Go's `strconv.Quote` (`%q`), used verbatim in upstream messages. The only implementation in
//! kubenode: the TypeScript side quotes through the binding.

use std::fmt::Write;

#[path = "quote_table.rs"]
mod table;

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols and U+0020, by the
/// Unicode version of the Go toolchain the table was generated with.
fn is_print(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    table::PRINTABLE
        .binary_search_by(|&(lo, hi)| {
            if hi < u {
                std::cmp::Ordering::Less
            } else if lo > u {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn push_char(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        c if is_print(c) => out.push(c),
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

/// Double-quoted Go string literal for `s`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    s.chars().for_each(|c| push_char(&mut out, c));
    out.push('"');
    out
}

/// [`go_quote`] of bytes that need not be UTF-8: as Go, each byte that does not start a valid
/// sequence is a `\x` escape of its own.
pub fn go_quote_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        chunk.valid().chars().for_each(|c| push_char(&mut out, c));
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::{go_quote, go_quote_bytes};

    #[test]
    fn matches_go() {
        assert_eq!(go_quote("net.core.somaxconn"), r#""net.core.somaxconn""#);
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\n\t\u{0}\u{7f}"), r#""\n\t\x00\x7f""#);
        assert_eq!(go_quote("ä日本"), "\"ä日本\"");
        assert_eq!(go_quote("\u{feff}\u{a0}\u{85}"), r#""\ufeff\u00a0\u0085""#);
        assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
        assert_eq!(go_quote(" kernel "), r#"" kernel ""#);
    }

    #[test]
    fn escapes_format_characters_and_unassigned_code_points() {
        // Cf (Arabic number sign, end of ayah, zero width space), unassigned, Co.
        assert_eq!(
            go_quote("\u{600}\u{6dd}\u{200b}\u{378}\u{e000}"),
            r#""\u0600\u06dd\u200b\u0378\ue000""#
        );
        assert_eq!(go_quote("\u{e0001}\u{10ffff}"), r#""\U000e0001\U0010ffff""#);
    }

    #[test]
    fn escapes_each_invalid_byte() {
        assert_eq!(go_quote_bytes(b"a\xffb"), r#""a\xffb""#);
        assert_eq!(go_quote_bytes(b"\xe2\x82"), r#""\xe2\x82""#);
        assert_eq!(go_quote_bytes(b"\xed\xa0\x80"), r#""\xed\xa0\x80""#);
        assert_eq!(go_quote_bytes("\u{fffd}".as_bytes()), "\"\u{fffd}\"");
    }
}
