//! Go's `encoding/json` syntax check: a transcription of its scanner (scanner.go), iterative so
//! that deeply nested input cannot exhaust the stack. Same states, same messages, same depth limit.

const MAX_NESTING_DEPTH: usize = 10000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Literal `word`, `at` bytes matched so far.
    Literal(&'static [u8], usize),
}

struct Scanner {
    step: Step,
    stack: Vec<Parse>,
    end_top: bool,
}

pub(super) fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r' || c == b'\n'
}

/// Go's `quoteChar`: the offending byte as a rune in single quotes, escaped like strconv.Quote.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        b'\\' => "'\\\\'".into(),
        0x07 => "'\\a'".into(),
        0x08 => "'\\b'".into(),
        0x0c => "'\\f'".into(),
        b'\n' => "'\\n'".into(),
        b'\r' => "'\\r'".into(),
        b'\t' => "'\\t'".into(),
        0x0b => "'\\v'".into(),
        c if c < 0x20 || c == 0x7f => format!("'\\x{c:02x}'"),
        c if c < 0x80 => format!("'{}'", c as char),
        // U+0080..U+00A0 and the soft hyphen are not printable for strconv.Quote.
        c if c <= 0xa0 || c == 0xad => format!("'\\u{c:04x}'"),
        c => format!("'{}'", char::from(c)),
    }
}

fn syntax(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

impl Scanner {
    fn push(&mut self, c: u8, p: Parse, next: Step) -> Result<(), String> {
        self.stack.push(p);
        if self.stack.len() > MAX_NESTING_DEPTH {
            return Err(syntax(c, "exceeded max depth"));
        }
        self.go(next)
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        match c {
            c if is_space(c) => Ok(()),
            b'{' => self.push(c, Parse::ObjectKey, Step::BeginStringOrEmpty),
            b'[' => self.push(c, Parse::ArrayValue, Step::BeginValueOrEmpty),
            b'"' => self.go(Step::InString),
            b'-' => self.go(Step::Neg),
            b'0' => self.go(Step::Zero),
            b'1'..=b'9' => self.go(Step::One),
            b't' => self.go(Step::Literal(b"true", 1)),
            b'f' => self.go(Step::Literal(b"false", 1)),
            b'n' => self.go(Step::Literal(b"null", 1)),
            _ => Err(syntax(c, "looking for beginning of value")),
        }
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            return self.end_top_step(c);
        };
        if is_space(c) {
            return self.go(Step::EndValue);
        }
        match top {
            Parse::ObjectKey => {
                if c == b':' {
                    self.set_top(Parse::ObjectValue);
                    return self.go(Step::BeginValue);
                }
                Err(syntax(c, "after object key"))
            }
            Parse::ObjectValue => match c {
                b',' => {
                    self.set_top(Parse::ObjectKey);
                    self.go(Step::BeginString)
                }
                b'}' => self.close(),
                _ => Err(syntax(c, "after object key:value pair")),
            },
            Parse::ArrayValue => match c {
                b',' => self.go(Step::BeginValue),
                b']' => self.close(),
                _ => Err(syntax(c, "after array element")),
            },
        }
    }

    fn set_top(&mut self, p: Parse) {
        if let Some(t) = self.stack.last_mut() {
            *t = p;
        }
    }

    /// The object or array on top of the stack is complete.
    fn close(&mut self) -> Result<(), String> {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
        Ok(())
    }

    fn go(&mut self, next: Step) -> Result<(), String> {
        self.step = next;
        Ok(())
    }

    fn end_top_step(&mut self, c: u8) -> Result<(), String> {
        if !is_space(c) {
            return Err(syntax(c, "after top-level value"));
        }
        Ok(())
    }

    fn feed(&mut self, c: u8) -> Result<(), String> {
        match self.step {
            Step::BeginValue => self.begin_value(c),
            Step::BeginValueOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b']' {
                    return self.end_value(c);
                }
                self.begin_value(c)
            }
            Step::BeginStringOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b'}' {
                    self.set_top(Parse::ObjectValue);
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            Step::BeginString => self.begin_string(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => self.end_top_step(c),
            Step::InString => {
                match c {
                    b'"' => self.step = Step::EndValue,
                    b'\\' => self.step = Step::InStringEsc,
                    c if c < 0x20 => return Err(syntax(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            Step::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => self.go(Step::InString),
                b'u' => self.go(Step::InStringEscU(0)),
                _ => Err(syntax(c, "in string escape code")),
            },
            Step::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Err(syntax(c, "in \\u hexadecimal character escape"));
                }
                self.step = if n == 3 {
                    Step::InString
                } else {
                    Step::InStringEscU(n + 1)
                };
                Ok(())
            }
            Step::Neg => match c {
                b'0' => self.go(Step::Zero),
                b'1'..=b'9' => self.go(Step::One),
                _ => Err(syntax(c, "in numeric literal")),
            },
            Step::One => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                self.zero(c)
            }
            Step::Zero => self.zero(c),
            Step::Dot => {
                if c.is_ascii_digit() {
                    return self.go(Step::Dot0);
                }
                Err(syntax(c, "after decimal point in numeric literal"))
            }
            Step::Dot0 => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                if c == b'e' || c == b'E' {
                    return self.go(Step::E);
                }
                self.end_value(c)
            }
            Step::E => {
                if c == b'+' || c == b'-' {
                    return self.go(Step::ESign);
                }
                self.e_sign(c)
            }
            Step::ESign => self.e_sign(c),
            Step::E0 => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                self.end_value(c)
            }
            Step::Literal(word, at) => {
                let want = word.get(at).copied().unwrap_or(b' ');
                if c != want {
                    let name = std::str::from_utf8(word).unwrap_or("literal");
                    return Err(syntax(
                        c,
                        &format!("in literal {name} (expecting {})", quote_char(want)),
                    ));
                }
                self.step = if at + 1 == word.len() {
                    Step::EndValue
                } else {
                    Step::Literal(word, at + 1)
                };
                Ok(())
            }
        }
    }

    fn begin_string(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            return self.go(Step::InString);
        }
        Err(syntax(c, "looking for beginning of object key string"))
    }

    fn zero(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'.' => self.go(Step::Dot),
            b'e' | b'E' => self.go(Step::E),
            _ => self.end_value(c),
        }
    }

    fn e_sign(&mut self, c: u8) -> Result<(), String> {
        if c.is_ascii_digit() {
            return self.go(Step::E0);
        }
        Err(syntax(c, "in exponent of numeric literal"))
    }
}

/// Go's `checkValid`, including its end-of-input rule: feed one space, then the value must be
/// complete (so `tru` reports `in literal true (expecting 'e')`).
pub(super) fn check_valid(data: &[u8]) -> Result<(), String> {
    let mut s = Scanner {
        step: Step::BeginValue,
        stack: Vec::new(),
        end_top: false,
    };
    for &c in data {
        s.feed(c)?;
    }
    if s.end_top {
        return Ok(());
    }
    s.feed(b' ')?;
    if s.end_top {
        return Ok(());
    }
    Err("unexpected end of JSON input".into())
}
