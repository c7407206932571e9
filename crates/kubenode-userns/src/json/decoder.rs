//! Decoding of input already known to be valid JSON into upstream's two struct types, with Go's
//! field folding, `null` handling, slice reuse and first-type-error rule.

use super::scanner::is_space;
use super::{IdMapping, UserNamespace};

/// Decodes `data`, which the scanner has accepted, into a fresh `UserNamespace`.
pub(super) fn decode_valid(data: &[u8]) -> Result<UserNamespace, String> {
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
