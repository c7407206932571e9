//! Filtered flushes: a DELETE that carries no exact tuple but a `CTA_FILTER` makes the kernel
//! walk the table once and delete every matching entry, with no dump and no per-entry request
//! (netfilter's "ctnetlink: allow advanced filter with CTA_FILTER for flush", 2024; older kernels
//! answer EOPNOTSUPP, or EINVAL for the incomplete tuple). Also the table's entry count
//! (`IPCTNL_MSG_CT_GET_STATS`), which a flush does not report.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::attr::{parse_ack, MsgBuf, Msgs};
use crate::conntrack::Conntrack;
use crate::consts::*;
use crate::error::{from_errno, Error, Result};
use crate::flow::{put_filter, put_filter_flags, put_filter_tuple, Family, TupleFilter};
use crate::socket::recv_failure;

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

    /// The same selection as a dump filter: the targeted path lists a pair's flows and
    /// deletes them by exact tuple and ID, which reports what it deleted (a flush does not).
    pub fn dump_filter(&self) -> crate::flow::DumpFilter {
        crate::flow::DumpFilter {
            proto: Some(self.proto),
            orig_dst: self.orig_dst,
            orig_dst_port: self.orig_dst_port,
            reply_src: self.reply_src,
            reply_src_port: self.reply_src_port,
        }
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
    put_filter(b, f.proto, &f.dump_filter());
    b.end_msg(m);
}

/// A flag bit no kernel defines in `CTA_FILTER_ORIG_FLAGS` (the defined ones end far below it).
const UNKNOWN_FILTER_FLAG: u32 = 1 << 31;

/// Encodes the support probe: a DELETE with a complete original tuple no flow has (UDP from
/// port 0 of the unspecified address to the same) and a `CTA_FILTER` whose flags carry an
/// unknown bit. No kernel walks the table for it, and the errno says which kind answered
/// (net/netfilter/nf_conntrack_netlink.c):
/// - with filtered flushes (2024 and later), `ctnetlink_del_conntrack` hands any request with
///   `CTA_FILTER` to `ctnetlink_flush_conntrack`, whose `ctnetlink_alloc_filter` →
///   `ctnetlink_parse_filter` refuses the unknown bit before `nf_ct_iterate_cleanup_net` runs:
///   EINVAL from the `NLA_POLICY_MASK(NLA_U32, CTA_FILTER_F_ALL)` policy of current kernels
///   (6.18 here), EOPNOTSUPP from the explicit `~CTA_FILTER_F_ALL` test it replaced;
/// - without them, `ctnetlink_del_conntrack` ignores `CTA_FILTER`, parses the tuple
///   (`ctnetlink_parse_tuple`) and looks it up by hash (`nf_conntrack_find_get`): ENOENT.
///   (A probe without the tuple would be unsafe there: kernels before `CTA_FILTER` existed
///   flush the whole table for it.)
pub fn encode_flush_probe(b: &mut MsgBuf, family: Family, seq: u32) {
    let m = b.begin_msg(
        ct_type(IPCTNL_MSG_CT_DELETE),
        NLM_F_REQUEST | NLM_F_ACK,
        seq,
        family.af(),
    );
    let none = Some(match family {
        Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    let tuple = TupleFilter {
        src: none,
        dst: none,
        src_port: Some(0),
        dst_port: Some(0),
    };
    let orig = put_filter_tuple(b, CTA_TUPLE_ORIG, IPPROTO_UDP, &tuple);
    put_filter_flags(b, orig | UNKNOWN_FILTER_FLAG, 0);
    b.end_msg(m);
}

/// What the probe's errno says (see [`encode_flush_probe`]): the two errnos of filter parsing
/// mean support; ENOENT (the exact lookup of an older kernel), success (an older kernel found
/// and deleted a flow with that tuple) or anything else means none, and the full pass stays.
pub fn flush_support_from_errno(errno: i32) -> FlushSupport {
    match errno {
        libc::EINVAL | libc::EOPNOTSUPP => FlushSupport::Supported,
        _ => FlushSupport::Unsupported,
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
        self.global_stats().map(|(count, _)| u64::from(count))
    }

    /// Tests filtered-flush support with a request no kernel walks the table for
    /// ([`encode_flush_probe`]); the answer is remembered on the handle. A socket error counts
    /// as "unsupported" (the full pass reports its own errors).
    pub fn probe_flush(&mut self, family: Family) -> FlushSupport {
        // nfnetlink answers a request for an absent ctnetlink with a bare EINVAL too; a stats
        // request (per-CPU counters, no walk) tells that case apart.
        if self.table_count().is_err() {
            self.flush_support = FlushSupport::Unsupported;
            return self.flush_support;
        }
        let seq = self.next_seq();
        self.out.clear();
        encode_flush_probe(&mut self.out, family, seq);
        self.flush_support = match self.request_ack("probe filtered flush", seq, |_| {}) {
            Ok((errno, _)) => flush_support_from_errno(errno),
            Err(_) => FlushSupport::Unsupported,
        };
        self.flush_support
    }

    /// Probes filtered-flush support once, at open: one request and one ack, whatever the
    /// table's size. Never fails: a kernel or a socket that cannot flush gets full passes.
    pub(crate) fn probe_at_open(&mut self) {
        self.probe_flush(Family::V4);
    }

    /// Sends the request in the output buffer and reads its replies up to the ack with `seq`;
    /// `on_msg` sees the other replies to it.
    pub(crate) fn request(
        &mut self,
        op: &'static str,
        seq: u32,
        on_msg: impl FnMut(&crate::attr::Msg<'_>),
    ) -> Result<()> {
        match self.request_ack(op, seq, on_msg)? {
            (0, _) => Ok(()),
            (errno, msg) => Err(from_errno(op, errno, msg)),
        }
    }

    /// Like [`Self::request`], but the ack's errno (0 for success) and extended message are
    /// returned as they are, for callers that decide by errno.
    fn request_ack(
        &mut self,
        op: &'static str,
        seq: u32,
        mut on_msg: impl FnMut(&crate::attr::Msg<'_>),
    ) -> Result<(i32, String)> {
        self.sock.send(&self.out.buf)?;
        loop {
            let n = match self.sock.recv(&mut self.rbuf, false) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(e) => return Err(recv_failure(op, e)),
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
                let msg = ack.msg.map(|b| String::from_utf8_lossy(b).into_owned());
                return Ok((ack.errno, msg.unwrap_or_default()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_errnos_of_filter_parsing_mean_support() {
        for errno in [libc::EINVAL, libc::EOPNOTSUPP] {
            assert_eq!(flush_support_from_errno(errno), FlushSupport::Supported);
        }
        // An older kernel's exact lookup, or its delete of a flow with the probe's tuple.
        for errno in [libc::ENOENT, 0, libc::EPERM, libc::ENOMEM] {
            assert_eq!(flush_support_from_errno(errno), FlushSupport::Unsupported);
        }
    }
}
