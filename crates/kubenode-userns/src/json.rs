//! The `userns` file format, encoded and decoded exactly like Go's `encoding/json` does for
//! upstream's `userNamespace` struct: compact output in field order, and on input Go's syntax
//! check (with its error texts), case-insensitive field names, unknown fields ignored, `null`
//! leaving a value unchanged, and numbers that do not fit a uint32 rejected.

use std::fmt::Write as _;

/// One `idMapping` entry of the file (and of the CRI message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IdMapping {
    pub host_id: u32,
    pub container_id: u32,
    pub length: u32,
}

/// Upstream's `userNamespace` struct.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserNamespace {
    pub uid_mappings: Vec<IdMapping>,
    pub gid_mappings: Vec<IdMapping>,
}

impl UserNamespace {
    /// One identical UID and GID entry mapping container ID 0, as the manager writes it.
    pub fn single(host_id: u32, length: u32) -> Self {
        let m = IdMapping {
            host_id,
            container_id: 0,
            length,
        };
        Self {
            uid_mappings: vec![m],
            gid_mappings: vec![m],
        }
    }
}

/// `json.Marshal` output: no whitespace, no trailing newline, nil slices as `null`.
pub fn encode(ns: &UserNamespace) -> String {
    let mut out = String::with_capacity(140);
    out.push_str("{\"uidMappings\":");
    encode_list(&mut out, &ns.uid_mappings);
    out.push_str(",\"gidMappings\":");
    encode_list(&mut out, &ns.gid_mappings);
    out.push('}');
    out
}

fn encode_list(out: &mut String, list: &[IdMapping]) {
    if list.is_empty() {
        out.push_str("null");
        return;
    }
    out.push('[');
    for (i, m) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "{{\"hostId\":{},\"containerId\":{},\"length\":{}}}",
            m.host_id, m.container_id, m.length
        );
    }
    out.push(']');
}

/// `json.Unmarshal(data, &userNamespace{})`. The error is Go's text (`unexpected end of JSON
/// input`, `invalid character …`, `json: cannot unmarshal …`).
pub fn decode(data: &[u8]) -> Result<UserNamespace, String> {
    check_valid(data)?;
    let mut d = Decoder {
        data,
        pos: 0,
        err: None,
    };
    let mut ns = UserNamespace::default();
    d.top(&mut ns);
    match d.err {
        Some(e) => Err(e),
        None => Ok(ns),
    }
}

// ---------------------------------------------------------------------------------------------
// Syntax check: a transcription of Go's `encoding/json` scanner (scanner.go), iterative so that
// deeply nested input cannot exhaust the stack. Same states, same messages, same depth limit.

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

fn is_space(c: u8) -> bool {
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
        self.step = next;
        Ok(())
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        match c {
            c if is_space(c) => Ok(()),
            b'{' => self.push(c, Parse::ObjectKey, Step::BeginStringOrEmpty),
            b'[' => self.push(c, Parse::ArrayValue, Step::BeginValueOrEmpty),
            b'"' => {
                self.step = Step::InString;
                Ok(())
            }
            b'-' => {
                self.step = Step::Neg;
                Ok(())
            }
            b'0' => {
                self.step = Step::Zero;
                Ok(())
            }
            b'1'..=b'9' => {
                self.step = Step::One;
                Ok(())
            }
            b't' => {
                self.step = Step::Literal(b"true", 1);
                Ok(())
            }
            b'f' => {
                self.step = Step::Literal(b"false", 1);
                Ok(())
            }
            b'n' => {
                self.step = Step::Literal(b"null", 1);
                Ok(())
            }
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
            self.step = Step::EndValue;
            return Ok(());
        }
        match top {
            Parse::ObjectKey => {
                if c == b':' {
                    self.set_top(Parse::ObjectValue);
                    self.step = Step::BeginValue;
                    return Ok(());
                }
                Err(syntax(c, "after object key"))
            }
            Parse::ObjectValue => match c {
                b',' => {
                    self.set_top(Parse::ObjectKey);
                    self.step = Step::BeginString;
                    Ok(())
                }
                b'}' => {
                    self.pop();
                    Ok(())
                }
                _ => Err(syntax(c, "after object key:value pair")),
            },
            Parse::ArrayValue => match c {
                b',' => {
                    self.step = Step::BeginValue;
                    Ok(())
                }
                b']' => {
                    self.pop();
                    Ok(())
                }
                _ => Err(syntax(c, "after array element")),
            },
        }
    }

    fn set_top(&mut self, p: Parse) {
        if let Some(t) = self.stack.last_mut() {
            *t = p;
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
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
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.step = Step::InString;
                    Ok(())
                }
                b'u' => {
                    self.step = Step::InStringEscU(0);
                    Ok(())
                }
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
                b'0' => {
                    self.step = Step::Zero;
                    Ok(())
                }
                b'1'..=b'9' => {
                    self.step = Step::One;
                    Ok(())
                }
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
                    self.step = Step::Dot0;
                    return Ok(());
                }
                Err(syntax(c, "after decimal point in numeric literal"))
            }
            Step::Dot0 => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                if c == b'e' || c == b'E' {
                    self.step = Step::E;
                    return Ok(());
                }
                self.end_value(c)
            }
            Step::E => {
                if c == b'+' || c == b'-' {
                    self.step = Step::ESign;
                    return Ok(());
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
            self.step = Step::InString;
            return Ok(());
        }
        Err(syntax(c, "looking for beginning of object key string"))
    }

    fn zero(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'.' => {
                self.step = Step::Dot;
                Ok(())
            }
            b'e' | b'E' => {
                self.step = Step::E;
                Ok(())
            }
            _ => self.end_value(c),
        }
    }

    fn e_sign(&mut self, c: u8) -> Result<(), String> {
        if c.is_ascii_digit() {
            self.step = Step::E0;
            return Ok(());
        }
        Err(syntax(c, "in exponent of numeric literal"))
    }
}

/// Go's `checkValid`, including its end-of-input rule: feed one space, then the value must be
/// complete (so `tru` reports `in literal true (expecting 'e')`).
fn check_valid(data: &[u8]) -> Result<(), String> {
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

// ---------------------------------------------------------------------------------------------
// Decoding of input already known to be valid JSON, into upstream's two struct types.

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    /// First type error, as Go's `saveError`: decoding goes on, the first error is returned.
    err: Option<String>,
}

#[derive(Clone, Copy)]
enum Field {
    Uid,
    Gid,
}

#[derive(Clone, Copy)]
enum MappingField {
    HostId,
    ContainerId,
    Length,
}

/// A Go slice as the decoder sees it: elements past `len` (up to the capacity) keep old values
/// and are reused when a repeated key decodes a longer array, as Go's decoder does.
#[derive(Default)]
struct GoSlice {
    backing: Vec<IdMapping>,
    len: usize,
}

impl GoSlice {
    fn into_vec(mut self) -> Vec<IdMapping> {
        self.backing.truncate(self.len);
        self.backing
    }
}

const NS_TYPE: &str = "userns.userNamespace";
const LIST_TYPE: &str = "[]userns.idMapping";
const MAPPING_TYPE: &str = "userns.idMapping";

/// Go's key folding for field matching (`appendFoldedName`): ASCII upper-casing, and each
/// non-ASCII rune replaced by the smallest rune of its case-fold orbit; only the long s and the
/// Kelvin sign fold to ASCII letters.
fn fold(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '\u{17f}' => 'S',
            '\u{212a}' => 'K',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

fn kind_of(c: u8) -> &'static str {
    match c {
        b'{' => "object",
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "bool",
        _ => "number",
    }
}

impl Decoder<'_> {
    fn peek(&self) -> u8 {
        self.data.get(self.pos).copied().unwrap_or(0)
    }

    fn skip_ws(&mut self) {
        while self.pos < self.data.len() && is_space(self.data[self.pos]) {
            self.pos += 1;
        }
    }

    fn save(&mut self, e: String) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    fn type_error(&mut self, value: &str, ctx: Option<(&str, &str)>, ty: &str) {
        let e = match ctx {
            Some((st, field)) => {
                format!(
                    "json: cannot unmarshal {value} into Go struct field {st}.{field} of type {ty}"
                )
            }
            None => format!("json: cannot unmarshal {value} into Go value of type {ty}"),
        };
        self.save(e);
    }

    /// Skips one valid value without recursion.
    fn skip_value(&mut self) {
        self.skip_ws();
        let mut depth = 0usize;
        loop {
            let Some(&c) = self.data.get(self.pos) else {
                return;
            };
            match c {
                b'"' => self.skip_string(),
                b'{' | b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    self.pos += 1;
                    if depth == 0 {
                        return;
                    }
                }
                b',' | b':' => self.pos += 1,
                c if is_space(c) => self.pos += 1,
                _ => {
                    while self.pos < self.data.len()
                        && !matches!(
                            self.data[self.pos],
                            b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'
                        )
                    {
                        self.pos += 1;
                    }
                }
            }
            if depth == 0 {
                return;
            }
        }
    }

    fn skip_string(&mut self) {
        self.pos += 1;
        while let Some(&c) = self.data.get(self.pos) {
            self.pos += 1;
            match c {
                b'\\' => self.pos += 1,
                b'"' => return,
                _ => {}
            }
        }
    }

    /// Reads a string (escapes decoded; invalid UTF-8 and lone surrogates become U+FFFD).
    fn read_string(&mut self) -> String {
        self.pos += 1;
        let mut buf: Vec<u8> = Vec::new();
        while let Some(&c) = self.data.get(self.pos) {
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek();
                    self.pos += 1;
                    let ch = match e {
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.read_u_escape(),
                        other => other as char,
                    };
                    let mut tmp = [0u8; 4];
                    buf.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                }
                _ => buf.push(c),
            }
        }
        String::from_utf8_lossy(&buf).into_owned()
    }

    fn read_hex4(&mut self) -> Option<u32> {
        let s = self.data.get(self.pos..self.pos + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()?;
        self.pos += 4;
        Some(v)
    }

    fn read_u_escape(&mut self) -> char {
        let Some(hi) = self.read_hex4() else {
            return '\u{fffd}';
        };
        if (0xd800..0xdc00).contains(&hi) && self.data.get(self.pos..self.pos + 2) == Some(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            if let Some(lo) = self.read_hex4() {
                if (0xdc00..0xe000).contains(&lo) {
                    let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                    return char::from_u32(c).unwrap_or('\u{fffd}');
                }
            }
            self.pos = save;
            return '\u{fffd}';
        }
        char::from_u32(hi).unwrap_or('\u{fffd}')
    }

    fn read_literal(&mut self) -> &[u8] {
        let start = self.pos;
        while self.pos < self.data.len()
            && !matches!(
                self.data[self.pos],
                b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'
            )
        {
            self.pos += 1;
        }
        &self.data[start..self.pos]
    }

    /// Iterates over an object's members: calls `f(self, key)` with `pos` at the value, which
    /// `f` must consume.
    fn object(&mut self, mut f: impl FnMut(&mut Self, String)) {
        self.pos += 1; // '{'
        loop {
            self.skip_ws();
            if self.peek() == b'}' {
                self.pos += 1;
                return;
            }
            let key = self.read_string();
            self.skip_ws();
            self.pos += 1; // ':'
            self.skip_ws();
            f(self, key);
            self.skip_ws();
            if self.peek() == b',' {
                self.pos += 1;
            }
        }
    }

    fn top(&mut self, ns: &mut UserNamespace) {
        self.skip_ws();
        match self.peek() {
            b'n' => {
                self.read_literal();
            }
            b'{' => {
                let mut uid = GoSlice::default();
                let mut gid = GoSlice::default();
                self.object(|d, key| {
                    let field = match key.as_str() {
                        "uidMappings" => Some(Field::Uid),
                        "gidMappings" => Some(Field::Gid),
                        k => match fold(k).as_str() {
                            "UIDMAPPINGS" => Some(Field::Uid),
                            "GIDMAPPINGS" => Some(Field::Gid),
                            _ => None,
                        },
                    };
                    match field {
                        Some(Field::Uid) => d.list(&mut uid, "uidMappings"),
                        Some(Field::Gid) => d.list(&mut gid, "gidMappings"),
                        None => d.skip_value(),
                    }
                });
                ns.uid_mappings = uid.into_vec();
                ns.gid_mappings = gid.into_vec();
            }
            c => {
                self.type_error(kind_of(c), None, NS_TYPE);
                self.skip_value();
            }
        }
    }

    fn list(&mut self, slice: &mut GoSlice, name: &str) {
        let ctx = Some(("userNamespace", name));
        match self.peek() {
            b'n' => {
                self.read_literal();
                *slice = GoSlice::default();
            }
            b'[' => {
                self.pos += 1;
                let mut i = 0usize;
                loop {
                    self.skip_ws();
                    if self.peek() == b']' {
                        self.pos += 1;
                        break;
                    }
                    if i >= slice.backing.len() {
                        slice.backing.push(IdMapping::default());
                    }
                    slice.len = slice.len.max(i + 1);
                    match self.peek() {
                        b'{' => {
                            let mut m = slice.backing.get(i).copied().unwrap_or_default();
                            self.mapping(&mut m, name);
                            if let Some(slot) = slice.backing.get_mut(i) {
                                *slot = m;
                            }
                        }
                        b'n' => {
                            self.read_literal();
                        }
                        c => {
                            self.type_error(kind_of(c), ctx, MAPPING_TYPE);
                            self.skip_value();
                        }
                    }
                    i += 1;
                    self.skip_ws();
                    if self.peek() == b',' {
                        self.pos += 1;
                    }
                }
                if i == 0 {
                    *slice = GoSlice::default();
                } else {
                    slice.len = i;
                }
            }
            c => {
                self.type_error(kind_of(c), ctx, LIST_TYPE);
                self.skip_value();
            }
        }
    }

    fn mapping(&mut self, m: &mut IdMapping, list: &str) {
        self.object(|d, key| {
            let field = match key.as_str() {
                "hostId" => Some(MappingField::HostId),
                "containerId" => Some(MappingField::ContainerId),
                "length" => Some(MappingField::Length),
                k => match fold(k).as_str() {
                    "HOSTID" => Some(MappingField::HostId),
                    "CONTAINERID" => Some(MappingField::ContainerId),
                    "LENGTH" => Some(MappingField::Length),
                    _ => None,
                },
            };
            let Some(field) = field else {
                d.skip_value();
                return;
            };
            let name = match field {
                MappingField::HostId => "hostId",
                MappingField::ContainerId => "containerId",
                MappingField::Length => "length",
            };
            let path = format!("{list}.{name}");
            let c = d.peek();
            match c {
                b'n' => {
                    d.read_literal();
                }
                b'-' | b'0'..=b'9' => {
                    let lit = String::from_utf8_lossy(d.read_literal()).into_owned();
                    // strconv.ParseUint(s, 10, 64) then a uint32 overflow check.
                    match lit.parse::<u64>().ok().and_then(|v| u32::try_from(v).ok()) {
                        Some(v) if lit.bytes().all(|b| b.is_ascii_digit()) => match field {
                            MappingField::HostId => m.host_id = v,
                            MappingField::ContainerId => m.container_id = v,
                            MappingField::Length => m.length = v,
                        },
                        _ => d.type_error(
                            &format!("number {lit}"),
                            Some(("idMapping", &path)),
                            "uint32",
                        ),
                    }
                }
                c => {
                    d.type_error(kind_of(c), Some(("idMapping", &path)), "uint32");
                    d.skip_value();
                }
            }
        });
    }
}
