//! Filtered flushes: a DELETE that carries no exact tuple but a `CTA_FILTER` makes the kernel
//! walk the table once and delete every matching entry, with no dump and no per-entry request
//! (netfilter's "ctnetlink: allow advanced filter with CTA_FILTER for flush", 2024; older kernels
//! answer EOPNOTSUPP, or EINVAL for the incomplete tuple). Also the table's entry count
//! (`IPCTNL_MSG_CT_GET_STATS`), which a flush does not report.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use crate::attr::{be32, parse_ack, Attrs, MsgBuf, Msgs};
use crate::conntrack::Conntrack;
use crate::consts::*;
use crate::error::{from_errno, from_io, Error, Result};
use crate::flow::{put_filter_flags, put_filter_tuple, Family, TupleFilter};
use crate::socket::RECV_BUF;

/// The flows one filtered flush deletes: protocol, plus any of original destination IP and
/// port and reply source IP and port. Every field is an exact match; there are no sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlushFilter {
    pub proto: u8,
    pub orig_dst: Option<IpAddr>,
    pub orig_dst_port: Option<u16>,
    pub reply_src: Option<IpAddr>,
    pub reply_src_port: Option<u16>,
}

impl FlushFilter {
    /// True for the flows the kernel deletes with this filter.
    pub fn matches(&self, f: &crate::flow::Flow) -> bool {
        f.orig.proto == self.proto
            && self.orig_dst.is_none_or(|d| f.orig.dst == Some(d))
            && self.orig_dst_port.is_none_or(|p| f.orig.dst_port == p)
            && self.reply_src.is_none_or(|s| f.reply.src == Some(s))
            && self.reply_src_port.is_none_or(|p| f.reply.src_port == p)
    }
}

/// Whether this handle's kernel deletes by filter. Probed once per handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushSupport {
    #[default]
    Unknown,
    Supported,
    Unsupported,
}

/// Encodes a filtered flush. The original tuple nest is always present (at least the
/// protocol), so a kernel that ignores `CTA_FILTER` sees an incomplete tuple and refuses
/// (EINVAL) instead of flushing the whole table.
pub fn encode_flush(b: &mut MsgBuf, family: Family, f: &FlushFilter, seq: u32) {
    let m = b.begin_msg(
        ct_type(IPCTNL_MSG_CT_DELETE),
        NLM_F_REQUEST | NLM_F_ACK,
        seq,
        family.af(),
    );
    let orig = TupleFilter {
        dst: f.orig_dst,
        dst_port: f.orig_dst_port,
        ..Default::default()
    };
    let orig_flags = put_filter_tuple(b, CTA_TUPLE_ORIG, f.proto, &orig);
    let mut reply_flags = 0;
    if f.reply_src.is_some() || f.reply_src_port.is_some() {
        let reply = TupleFilter {
            src: f.reply_src,
            src_port: f.reply_src_port,
            ..Default::default()
        };
        reply_flags = put_filter_tuple(b, CTA_TUPLE_REPLY, f.proto, &reply);
    }
    put_filter_flags(b, orig_flags, reply_flags);
    b.end_msg(m);
}

/// A filter no flow can match: UDP to port 0 of the unspecified address. Flushing it tests
/// support and measures the cost of one walk over the table.
pub fn probe_filter(family: Family) -> FlushFilter {
    let unspecified = match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    FlushFilter {
        proto: IPPROTO_UDP,
        orig_dst: Some(unspecified),
        orig_dst_port: Some(0),
        reply_src: Some(unspecified),
        reply_src_port: Some(0),
    }
}

impl Conntrack {
    /// Deletes every entry of `family` matching `filter` in one request. Fails with
    /// [`Error::Unsupported`] on kernels without filtered flushes.
    pub fn flush(&mut self, family: Family, filter: &FlushFilter) -> Result<()> {
        for ip in [filter.orig_dst, filter.reply_src].into_iter().flatten() {
            crate::validate::check_family(family, &ip, || "flush filter".to_string())?;
        }
        let seq = self.next_seq();
        self.out.clear();
        encode_flush(&mut self.out, family, filter, seq);
        match self.request("flush conntrack entries", seq, |_| {}) {
            // A kernel that ignores CTA_FILTER parses the partial tuple and refuses it.
            Err(Error::Kernel {
                errno: libc::EINVAL,
                ..
            }) => Err(Error::Unsupported {
                op: "flush conntrack entries",
                detail: "EINVAL (22): no filtered flush on this kernel".into(),
            }),
            r => r,
        }
    }

    /// Entries in the table of this handle's network namespace, all families.
    pub fn table_count(&mut self) -> Result<u64> {
        let seq = self.next_seq();
        self.out.clear();
        let m = self.out.begin_msg(
            ct_type(IPCTNL_MSG_CT_GET_STATS),
            NLM_F_REQUEST | NLM_F_ACK,
            seq,
            libc::AF_UNSPEC as u8,
        );
        self.out.end_msg(m);
        let mut count = None;
        let stats_ty = ct_type(IPCTNL_MSG_CT_GET_STATS);
        self.request("read conntrack stats", seq, |m| {
            if m.ty != stats_ty {
                return;
            }
            let attrs = m.payload.get(NFGEN_HDRLEN..).unwrap_or(&[]);
            for (ty, p) in Attrs::new(attrs).flatten() {
                if ty == CTA_STATS_GLOBAL_ENTRIES {
                    count = be32(p).ok();
                }
            }
        })?;
        count
            .map(u64::from)
            .ok_or(Error::Malformed("stats reply without an entry count"))
    }

    /// Tests filtered-flush support with a flush that matches nothing, and times it: that is
    /// one walk over the table. Any failure counts as "unsupported" (the
    /// full pass stays available and reports its own errors).
    pub fn probe_flush(&mut self, family: Family) -> (FlushSupport, Option<f64>) {
        if self.flush_support == FlushSupport::Unsupported {
            return (self.flush_support, None);
        }
        let start = Instant::now();
        match self.flush(family, &probe_filter(family)) {
            Ok(()) => {
                self.flush_support = FlushSupport::Supported;
                (self.flush_support, Some(start.elapsed().as_secs_f64()))
            }
            Err(_) => {
                self.flush_support = FlushSupport::Unsupported;
                (self.flush_support, None)
            }
        }
    }

    /// Probes filtered-flush support once, at open, so no cleanup pass pays for it; the walk
    /// it timed is the first sample of both families' cost models. Never fails: a kernel or a
    /// socket that cannot flush simply gets full passes.
    pub(crate) fn probe_at_open(&mut self) {
        let table = self.table_count().ok();
        if let ((_, Some(walk)), Some(t)) = (self.probe_flush(Family::V4), table) {
            for f in [Family::V4, Family::V6] {
                self.stale.family(f).cost.record_walk(walk, t);
            }
        }
    }

    /// Sends the request in the output buffer and reads its replies up to the ack with `seq`;
    /// `on_msg` sees the other replies to it.
    fn request(
        &mut self,
        op: &'static str,
        seq: u32,
        mut on_msg: impl FnMut(&crate::attr::Msg<'_>),
    ) -> Result<()> {
        self.sock.send(&self.out.buf)?;
        loop {
            let n = match self.sock.recv(&mut self.rbuf, false) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(Error::Truncated(RECV_BUF))
                }
                Err(e) => return Err(from_io(op, e)),
            };
            let data = self.rbuf.get(..n).unwrap_or(&[]);
            for m in Msgs::new(data) {
                let m = m?;
                if m.seq != seq {
                    continue; // a late reply to an earlier request
                }
                if m.ty != NLMSG_ERROR {
                    on_msg(&m);
                    continue;
                }
                let ack = parse_ack(&m)?;
                if ack.errno == 0 {
                    return Ok(());
                }
                let msg = ack.msg.map(|b| String::from_utf8_lossy(b).into_owned());
                return Err(from_errno(op, ack.errno, msg.unwrap_or_default()));
            }
        }
    }
}
