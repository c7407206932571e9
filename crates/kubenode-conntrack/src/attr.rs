//! Netlink TLV walking and message building. Parsing works in place over borrowed bytes and
//! never indexes past a length it has not checked.

use crate::consts::*;
use crate::error::{Error, Result};

pub const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The framing netlink messages and attributes share: a header that starts with the record's
/// length (header included), the payload, then padding to 4 bytes. Each kind names its own
/// errors.
struct Frame {
    hdr_len: usize,
    len_of: fn(&[u8]) -> usize,
    truncated: &'static str,
    short: &'static str,
    overrun: &'static str,
}

impl Frame {
    /// Splits the next record off `rest` into (header, payload); `None` once `rest` is empty.
    /// A malformed record empties `rest`, so iteration stops after its error.
    fn split<'a>(&self, rest: &mut &'a [u8]) -> Option<Result<(&'a [u8], &'a [u8])>> {
        if rest.is_empty() {
            return None;
        }
        let data = std::mem::take(rest);
        let Some(hdr) = data.get(..self.hdr_len) else {
            return Some(Err(Error::Malformed(self.truncated)));
        };
        let len = (self.len_of)(hdr);
        if len < self.hdr_len {
            return Some(Err(Error::Malformed(self.short)));
        }
        let Some(payload) = data.get(self.hdr_len..len) else {
            return Some(Err(Error::Malformed(self.overrun)));
        };
        // The last record may omit its padding.
        *rest = data.get(align4(len)..).unwrap_or(&[]);
        Some(Ok((hdr, payload)))
    }
}

const ATTR_FRAME: Frame = Frame {
    hdr_len: NLA_HDRLEN,
    len_of: |h| u16::from_ne_bytes([h[0], h[1]]) as usize,
    truncated: "attribute header truncated",
    short: "attribute length below header size",
    overrun: "attribute runs past its container",
};

const MSG_FRAME: Frame = Frame {
    hdr_len: NLMSG_HDRLEN,
    len_of: |h| u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize,
    truncated: "message header truncated",
    short: "message length below header size",
    overrun: "message runs past the datagram",
};

/// Iterator over the attributes of one TLV area. The type has the nested and byte-order flags
/// masked off; order is never assumed.
pub struct Attrs<'a> {
    rest: &'a [u8],
}

impl<'a> Attrs<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { rest: data }
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<(u16, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        let record = ATTR_FRAME.split(&mut self.rest)?;
        Some(record.map(|(h, payload)| {
            let ty = u16::from_ne_bytes([h[2], h[3]]) & NLA_TYPE_MASK;
            (ty, payload)
        }))
    }
}

/// Calls `f` with each attribute of `data` in order; a malformed attribute or an error from `f`
/// ends the walk with that error.
pub fn each_attr<'a>(data: &'a [u8], mut f: impl FnMut(u16, &'a [u8]) -> Result<()>) -> Result<()> {
    for a in Attrs::new(data) {
        let (ty, p) = a?;
        f(ty, p)?;
    }
    Ok(())
}

pub fn be16(p: &[u8]) -> Result<u16> {
    match p {
        [a, b, ..] => Ok(u16::from_be_bytes([*a, *b])),
        _ => Err(Error::Malformed("16-bit attribute too short")),
    }
}

pub fn be32(p: &[u8]) -> Result<u32> {
    match p {
        [a, b, c, d, ..] => Ok(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => Err(Error::Malformed("32-bit attribute too short")),
    }
}

pub fn ne32(p: &[u8]) -> Result<i32> {
    match p {
        [a, b, c, d, ..] => Ok(i32::from_ne_bytes([*a, *b, *c, *d])),
        _ => Err(Error::Malformed("32-bit value too short")),
    }
}

/// One netlink message: header fields and the payload after the 16-byte header.
#[derive(Debug, Clone, Copy)]
pub struct Msg<'a> {
    pub ty: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// Iterator over the netlink messages of one datagram.
pub struct Msgs<'a> {
    rest: &'a [u8],
}

impl<'a> Msgs<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { rest: data }
    }
}

impl<'a> Iterator for Msgs<'a> {
    type Item = Result<Msg<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let record = MSG_FRAME.split(&mut self.rest)?;
        Some(record.map(|(h, payload)| Msg {
            ty: u16::from_ne_bytes([h[4], h[5]]),
            flags: u16::from_ne_bytes([h[6], h[7]]),
            seq: u32::from_ne_bytes([h[8], h[9], h[10], h[11]]),
            payload,
        }))
    }
}

/// An NLMSG_ERROR payload: the errno (0 for an ack), the sequence number of the request it
/// answers, and the extended-ack message if the kernel sent one.
pub struct Ack<'a> {
    pub errno: i32,
    pub msg: Option<&'a [u8]>,
}

pub fn parse_ack<'a>(m: &Msg<'a>) -> Result<Ack<'a>> {
    // The kernel sends a negative errno; i32::MIN has no positive counterpart.
    let errno = ne32(m.payload)?
        .checked_neg()
        .ok_or(Error::Malformed("invalid errno in NLMSG_ERROR"))?;
    let mut msg = None;
    if m.flags & NLM_F_ACK_TLVS != 0 {
        // With NETLINK_CAP_ACK (or on success) only the request header is echoed.
        let orig_len = m
            .payload
            .get(4..8)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .unwrap_or(0);
        let echoed = if m.flags & 0x100 != 0 || errno == 0 {
            NLMSG_HDRLEN
        } else {
            orig_len
        };
        let tlv_start = echoed
            .checked_add(3)
            .map(|n| n & !3)
            .and_then(|n| n.checked_add(4));
        if let Some(tlvs) = tlv_start.and_then(|at| m.payload.get(at..)) {
            each_attr(tlvs, |ty, p| {
                if ty == NLMSGERR_ATTR_MSG {
                    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                    msg = p.get(..end);
                }
                Ok(())
            })?;
        }
    }
    Ok(Ack { errno, msg })
}

/// Appends netlink messages to a reusable buffer.
#[derive(Default)]
pub struct MsgBuf {
    pub buf: Vec<u8>,
}

impl MsgBuf {
    pub fn with_capacity(n: usize) -> Self {
        Self {
            buf: Vec::with_capacity(n),
        }
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Starts a message with an nfgenmsg header; returns its offset for `end_msg`.
    pub fn begin_msg(&mut self, ty: u16, flags: u16, seq: u32, family: u8) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(&flags.to_ne_bytes());
        self.buf.extend_from_slice(&seq.to_ne_bytes());
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        self.buf.extend_from_slice(&[family, 0, 0, 0]);
        start
    }

    pub fn end_msg(&mut self, start: usize) {
        let len = (self.buf.len() - start) as u32;
        self.buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
    }

    pub fn attr(&mut self, ty: u16, payload: &[u8]) {
        let len = (NLA_HDRLEN + payload.len()) as u16;
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(payload);
        let pad = align4(payload.len()) - payload.len();
        self.buf.extend_from_slice(&[0u8; 3][..pad]);
    }

    pub fn begin_nest(&mut self, ty: u16) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf
            .extend_from_slice(&(ty | NLA_F_NESTED).to_ne_bytes());
        start
    }

    pub fn end_nest(&mut self, start: usize) {
        let len = (self.buf.len() - start) as u16;
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
    }
}
