//! Netlink TLV walking and message building. Parsing works in place over borrowed bytes and
//! never indexes past a length it has not checked.

use crate::consts::*;
use crate::error::{Error, Result};

pub const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

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
        if self.rest.is_empty() {
            return None;
        }
        let Some(hdr) = self.rest.get(..NLA_HDRLEN) else {
            self.rest = &[];
            return Some(Err(Error::Malformed("attribute header truncated")));
        };
        let len = u16::from_ne_bytes([hdr[0], hdr[1]]) as usize;
        let ty = u16::from_ne_bytes([hdr[2], hdr[3]]) & NLA_TYPE_MASK;
        if len < NLA_HDRLEN {
            self.rest = &[];
            return Some(Err(Error::Malformed("attribute length below header size")));
        }
        let Some(payload) = self.rest.get(NLA_HDRLEN..len) else {
            self.rest = &[];
            return Some(Err(Error::Malformed("attribute runs past its container")));
        };
        // The last attribute may omit its padding.
        self.rest = self.rest.get(align4(len)..).unwrap_or(&[]);
        Some(Ok((ty, payload)))
    }
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
        if self.rest.is_empty() {
            return None;
        }
        let Some(h) = self.rest.get(..NLMSG_HDRLEN) else {
            self.rest = &[];
            return Some(Err(Error::Malformed("message header truncated")));
        };
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let ty = u16::from_ne_bytes([h[4], h[5]]);
        let flags = u16::from_ne_bytes([h[6], h[7]]);
        let seq = u32::from_ne_bytes([h[8], h[9], h[10], h[11]]);
        if len < NLMSG_HDRLEN {
            self.rest = &[];
            return Some(Err(Error::Malformed("message length below header size")));
        }
        let Some(payload) = self.rest.get(NLMSG_HDRLEN..len) else {
            self.rest = &[];
            return Some(Err(Error::Malformed("message runs past the datagram")));
        };
        self.rest = self.rest.get(align4(len)..).unwrap_or(&[]);
        Some(Ok(Msg {
            ty,
            flags,
            seq,
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
            for a in Attrs::new(tlvs) {
                let (ty, p) = a?;
                if ty == NLMSGERR_ATTR_MSG {
                    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                    msg = p.get(..end);
                }
            }
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
