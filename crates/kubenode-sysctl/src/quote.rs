//! Go's `strconv.Quote` (`%q`), used verbatim in upstream messages.

use std::fmt::Write;

/// Characters Go's `unicode.IsPrint` rejects among valid scalar values: controls, the
/// non-ASCII spaces, format characters, private use and noncharacters. Unassigned code points
/// are not tracked (they are printed as is).
fn is_print(c: char) -> bool {
    let u = c as u32;
    !(u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || u == 0xa0
        || u == 0xad
        || u == 0x061c
        || u == 0x1680
        || u == 0x180e
        || (0x2000..=0x200f).contains(&u)
        || (0x2028..=0x202f).contains(&u)
        || (0x205f..=0x206f).contains(&u)
        || u == 0x3000
        || (0xe000..=0xf8ff).contains(&u)
        || u == 0xfeff
        || (0xfff9..=0xfffb).contains(&u)
        || (u & 0xfffe) == 0xfffe
        || (0xfdd0..=0xfdef).contains(&u)
        || (0xe0000..=0xe007f).contains(&u)
        || u >= 0xf0000)
}

/// Double-quoted Go string literal for `s`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_print(c) => out.push(c),
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
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::go_quote;

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
}
