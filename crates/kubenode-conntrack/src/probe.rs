//! The probe for filtered deletes: whether this kernel's ctnetlink takes `CTA_FILTER` on a
//! DELETE (netfilter's "ctnetlink: allow advanced filter with CTA_FILTER for flush", 2024;
//! older kernels answer EOPNOTSUPP, or EINVAL for the incomplete tuple). The targeted cleanup
//! path takes it as the sign of a kernel that filters its per-pair dumps in the kernel; without
//! it every pass is full. Pure encoding and decoding: the handle sends the probe.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::attr::MsgBuf;
use crate::consts::*;
use crate::flow::{put_filter_flags, put_filter_tuple, Family, TupleFilter};

/// Whether this handle's kernel deletes by filter. Probed once per handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushSupport {
    #[default]
    Unknown,
    Supported,
    Unsupported,
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
