//! Conntrack entries: the parsed form of a dump message, and the tuple encoding used by
//! delete and create requests.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::attr::{be16, be32, each_attr, MsgBuf};
use crate::consts::*;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn af(self) -> u8 {
        match self {
            Family::V4 => libc::AF_INET as u8,
            Family::V6 => libc::AF_INET6 as u8,
        }
    }

    pub fn of(ip: &IpAddr) -> Family {
        if ip.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }

    /// kube-proxy's label values for `ip_family`.
    pub fn label(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

/// The family rule: tables and flows are per family. `what` is only built on failure. It lives
/// with [`Family`], so the codec, the rules and the input checks share it without importing
/// each other.
pub fn check_family(family: Family, ip: &IpAddr, what: impl FnOnce() -> String) -> Result<()> {
    if Family::of(ip) == family {
        return Ok(());
    }
    Err(Error::FamilyMismatch(format!(
        "{}: {ip} is not an {} address (family mismatch)",
        what(),
        family.label()
    )))
}

/// One direction of a connection. IPs are `None` when the kernel did not send them (an unset
/// IP never matches any service, like upstream's `"<nil>"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tuple {
    pub src: Option<IpAddr>,
    pub dst: Option<IpAddr>,
    pub proto: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

/// A conntrack entry. Plain data, no heap: a dump can parse millions of these on the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flow {
    pub orig: Tuple,
    pub reply: Tuple,
    pub zone: u16,
    pub id: Option<u32>,
    pub mark: u32,
    pub status: u32,
    pub timeout: u32,
    /// Connection labels (`CTA_LABELS`): bit n is label n; 0 when the flow has none.
    pub labels: u128,
}

fn ip_from(p: &[u8]) -> Result<IpAddr> {
    if let Ok(b) = <[u8; 4]>::try_from(p) {
        Ok(IpAddr::V4(Ipv4Addr::from(b)))
    } else if let Ok(b) = <[u8; 16]>::try_from(p) {
        Ok(IpAddr::V6(Ipv6Addr::from(b)))
    } else {
        Err(Error::Malformed("IP address attribute has a bad length"))
    }
}

/// `CTA_LABELS` is the kernel's label bitmap as it sits in memory: native `unsigned long`
/// words, bit n of the set in word n / BITS. Bits past 128 (none today) are dropped.
fn labels_from(p: &[u8]) -> u128 {
    const W: usize = std::mem::size_of::<usize>();
    let mut v = 0u128;
    for (i, word) in p.chunks_exact(W).enumerate().take(128 / (W * 8)) {
        let mut b = [0u8; W];
        b.copy_from_slice(word);
        v |= (usize::from_ne_bytes(b) as u128) << (i * W * 8);
    }
    v
}

fn parse_tuple(data: &[u8]) -> Result<(Tuple, Option<u16>)> {
    let mut t = Tuple::default();
    let mut zone = None;
    each_attr(data, |ty, p| match ty {
        CTA_TUPLE_IP => each_attr(p, |ty, p| {
            match ty {
                CTA_IP_V4_SRC | CTA_IP_V6_SRC => t.src = Some(ip_from(p)?),
                CTA_IP_V4_DST | CTA_IP_V6_DST => t.dst = Some(ip_from(p)?),
                _ => {}
            }
            Ok(())
        }),
        CTA_TUPLE_PROTO => each_attr(p, |ty, p| {
            match ty {
                CTA_PROTO_NUM => t.proto = *p.first().ok_or(Error::Malformed("empty protocol"))?,
                CTA_PROTO_SRC_PORT => t.src_port = be16(p)?,
                CTA_PROTO_DST_PORT => t.dst_port = be16(p)?,
                _ => {}
            }
            Ok(())
        }),
        CTA_TUPLE_ZONE => be16(p).map(|z| zone = Some(z)),
        _ => Ok(()),
    })?;
    Ok((t, zone))
}

/// Parses the attributes of one ctnetlink entry (the bytes after the nfgenmsg header).
pub fn parse_flow(attrs: &[u8]) -> Result<Flow> {
    let mut f = Flow::default();
    let mut have_orig = false;
    each_attr(attrs, |ty, p| {
        match ty {
            CTA_TUPLE_ORIG => {
                let (t, z) = parse_tuple(p)?;
                f.orig = t;
                if let (Some(z), 0) = (z, f.zone) {
                    f.zone = z;
                }
                have_orig = true;
            }
            CTA_TUPLE_REPLY => f.reply = parse_tuple(p)?.0,
            CTA_ZONE => f.zone = be16(p)?,
            CTA_ID => f.id = Some(be32(p)?),
            CTA_MARK => f.mark = be32(p)?,
            CTA_STATUS => f.status = be32(p)?,
            CTA_TIMEOUT => f.timeout = be32(p)?,
            CTA_LABELS => f.labels = labels_from(p),
            _ => {}
        }
        Ok(())
    })?;
    if !have_orig {
        return Err(Error::Malformed("entry without an original tuple"));
    }
    Ok(f)
}

/// Parses a complete ctnetlink entry message payload (nfgenmsg + attributes).
pub fn parse_entry_payload(payload: &[u8]) -> Result<Flow> {
    let attrs = payload
        .get(NFGEN_HDRLEN..)
        .ok_or(Error::Malformed("nfgenmsg header truncated"))?;
    parse_flow(attrs)
}

fn put_ip(b: &mut MsgBuf, v4: u16, v6: u16, ip: &IpAddr) {
    match ip {
        IpAddr::V4(a) => b.attr(v4, &a.octets()),
        IpAddr::V6(a) => b.attr(v6, &a.octets()),
    }
}

/// Encodes a complete tuple nest; `None` IPs are a caller error checked before encoding.
pub fn put_tuple(b: &mut MsgBuf, nest: u16, t: &Tuple, src: &IpAddr, dst: &IpAddr) {
    let n = b.begin_nest(nest);
    let ip = b.begin_nest(CTA_TUPLE_IP);
    put_ip(b, CTA_IP_V4_SRC, CTA_IP_V6_SRC, src);
    put_ip(b, CTA_IP_V4_DST, CTA_IP_V6_DST, dst);
    b.end_nest(ip);
    let pr = b.begin_nest(CTA_TUPLE_PROTO);
    b.attr(CTA_PROTO_NUM, &[t.proto]);
    b.attr(CTA_PROTO_SRC_PORT, &t.src_port.to_be_bytes());
    b.attr(CTA_PROTO_DST_PORT, &t.dst_port.to_be_bytes());
    b.end_nest(pr);
    b.end_nest(n);
}

/// Both addresses of a tuple, checked to be present and of `family`.
pub fn tuple_ips(t: &Tuple, family: Family, what: &str) -> Result<(IpAddr, IpAddr)> {
    match (t.src, t.dst) {
        (Some(s), Some(d)) => {
            check_family(family, &s, || format!("{what} source"))?;
            check_family(family, &d, || format!("{what} destination"))?;
            Ok((s, d))
        }
        _ => Err(Error::InvalidArgument(format!(
            "{what} tuple needs both a source and a destination IP"
        ))),
    }
}

/// Encodes a DELETE for `f` by its complete original tuple, zone, and `CTA_ID` guard if known.
pub fn encode_delete(b: &mut MsgBuf, family: Family, f: &Flow, seq: u32, flags: u16) -> Result<()> {
    let (s, d) = tuple_ips(&f.orig, family, "original")?;
    let m = b.begin_msg(
        ct_type(IPCTNL_MSG_CT_DELETE),
        NLM_F_REQUEST | flags,
        seq,
        family.af(),
    );
    put_tuple(b, CTA_TUPLE_ORIG, &f.orig, &s, &d);
    if f.zone != 0 {
        b.attr(CTA_ZONE, &f.zone.to_be_bytes());
    }
    if let Some(id) = f.id {
        b.attr(CTA_ID, &id.to_be_bytes());
    }
    b.end_msg(m);
    Ok(())
}

/// Encodes a NEW (create) request for `f`, with both tuples, timeout, mark and zone.
pub fn encode_new(b: &mut MsgBuf, family: Family, f: &Flow, seq: u32, flags: u16) -> Result<()> {
    let (os, od) = tuple_ips(&f.orig, family, "original")?;
    let (rs, rd) = tuple_ips(&f.reply, family, "reply")?;
    let m = b.begin_msg(
        ct_type(IPCTNL_MSG_CT_NEW),
        NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | flags,
        seq,
        family.af(),
    );
    put_tuple(b, CTA_TUPLE_ORIG, &f.orig, &os, &od);
    put_tuple(b, CTA_TUPLE_REPLY, &f.reply, &rs, &rd);
    b.attr(CTA_TIMEOUT, &f.timeout.max(1).to_be_bytes());
    if f.mark != 0 {
        b.attr(CTA_MARK, &f.mark.to_be_bytes());
    }
    if f.zone != 0 {
        b.attr(CTA_ZONE, &f.zone.to_be_bytes());
    }
    b.end_msg(m);
    Ok(())
}

/// Kernel-side dump filter (`CTA_FILTER`, Linux ≥ 5.8). Older kernels ignore it, so results
/// are always re-filtered in user space with [`DumpFilter::matches`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpFilter {
    pub proto: Option<u8>,
    /// Original destination IP and port; both need `proto`.
    pub orig_dst: Option<IpAddr>,
    pub orig_dst_port: Option<u16>,
    /// Reply source IP and port (the backend a flow was DNATed to); both need `proto`.
    pub reply_src: Option<IpAddr>,
    pub reply_src_port: Option<u16>,
}

impl DumpFilter {
    pub fn matches(&self, f: &Flow) -> bool {
        self.proto.is_none_or(|p| f.orig.proto == p)
            && self.orig_dst.is_none_or(|d| f.orig.dst == Some(d))
            && self.orig_dst_port.is_none_or(|p| f.orig.dst_port == p)
            && self.reply_src.is_none_or(|s| f.reply.src == Some(s))
            && self.reply_src_port.is_none_or(|p| f.reply.src_port == p)
    }

    pub fn validate(&self, family: Family) -> Result<()> {
        let tuple = self.orig_dst.is_some()
            || self.orig_dst_port.is_some()
            || self.reply_src.is_some()
            || self.reply_src_port.is_some();
        if tuple && self.proto.is_none() {
            return Err(Error::InvalidArgument(
                "a destination filter needs a protocol filter as well".into(),
            ));
        }
        if let Some(d) = self.orig_dst {
            check_family(family, &d, || "dstIP".to_string())?;
        }
        if let Some(s) = self.reply_src {
            check_family(family, &s, || "reply srcIP".to_string())?;
        }
        Ok(())
    }
}

/// The fields of one direction a `CTA_FILTER` matches on; `None` fields match anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TupleFilter {
    pub src: Option<IpAddr>,
    pub dst: Option<IpAddr>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
}

/// Encodes the tuple nest of a `CTA_FILTER` request (only the filtered fields, plus the
/// protocol, which the kernel requires for port fields) and returns its filter flags.
pub(crate) fn put_filter_tuple(b: &mut MsgBuf, nest: u16, proto: u8, t: &TupleFilter) -> u32 {
    let mut flags = CTA_FILTER_FLAG_PROTO_NUM;
    let n = b.begin_nest(nest);
    if t.src.is_some() || t.dst.is_some() {
        flags |= put_filter_ips(b, t);
    }
    let pr = b.begin_nest(CTA_TUPLE_PROTO);
    b.attr(CTA_PROTO_NUM, &[proto]);
    if let Some(p) = t.src_port {
        flags |= CTA_FILTER_FLAG_PROTO_SRC_PORT;
        b.attr(CTA_PROTO_SRC_PORT, &p.to_be_bytes());
    }
    if let Some(p) = t.dst_port {
        flags |= CTA_FILTER_FLAG_PROTO_DST_PORT;
        b.attr(CTA_PROTO_DST_PORT, &p.to_be_bytes());
    }
    b.end_nest(pr);
    b.end_nest(n);
    flags
}

/// Encodes the `CTA_TUPLE_IP` nest of a filter tuple and returns its address flags.
pub(crate) fn put_filter_ips(b: &mut MsgBuf, t: &TupleFilter) -> u32 {
    let mut flags = 0;
    let ip = b.begin_nest(CTA_TUPLE_IP);
    if let Some(s) = &t.src {
        flags |= CTA_FILTER_FLAG_IP_SRC;
        put_ip(b, CTA_IP_V4_SRC, CTA_IP_V6_SRC, s);
    }
    if let Some(d) = &t.dst {
        flags |= CTA_FILTER_FLAG_IP_DST;
        put_ip(b, CTA_IP_V4_DST, CTA_IP_V6_DST, d);
    }
    b.end_nest(ip);
    flags
}

/// Encodes the `CTA_FILTER` nest itself.
pub(crate) fn put_filter_flags(b: &mut MsgBuf, orig: u32, reply: u32) {
    let fl = b.begin_nest(CTA_FILTER);
    b.attr(CTA_FILTER_ORIG_FLAGS, &orig.to_ne_bytes());
    b.attr(CTA_FILTER_REPLY_FLAGS, &reply.to_ne_bytes());
    b.end_nest(fl);
}

/// Encodes a dump request (GET + DUMP) for `family`, with `CTA_FILTER` when `filter` has fields.
pub fn encode_dump(b: &mut MsgBuf, family: Family, filter: &DumpFilter, seq: u32) {
    crate::filter::encode_filtered_dump(b, family, &filter.into(), seq);
}
