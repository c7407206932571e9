//! ctnetlink constants (linux/netlink.h, nfnetlink.h, nfnetlink_conntrack.h, nf_internals.h).
#![allow(dead_code)]

pub const NETLINK_NETFILTER: i32 = 12;
pub const SOL_NETLINK: i32 = 270;
pub const NETLINK_CAP_ACK: i32 = 10;
pub const NETLINK_EXT_ACK: i32 = 11;

pub const NLMSG_HDRLEN: usize = 16;
pub const NFGEN_HDRLEN: usize = 4;
pub const NLA_HDRLEN: usize = 4;

pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLMSG_OVERRUN: u16 = 4;

pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_MULTI: u16 = 0x2;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP_FILTERED: u16 = 0x20;
pub const NLM_F_DUMP: u16 = 0x300;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
/// On NLMSG_ERROR: extended-ack TLVs follow the (capped) request header.
pub const NLM_F_ACK_TLVS: u16 = 0x200;
pub const NLMSGERR_ATTR_MSG: u16 = 1;

pub const NFNL_SUBSYS_CTNETLINK: u16 = 1;
pub const IPCTNL_MSG_CT_NEW: u16 = 0;
pub const IPCTNL_MSG_CT_GET: u16 = 1;
pub const IPCTNL_MSG_CT_DELETE: u16 = 2;
pub const IPCTNL_MSG_CT_GET_STATS_CPU: u16 = 4;
pub const IPCTNL_MSG_CT_GET_STATS: u16 = 5;
pub const fn ct_type(op: u16) -> u16 {
    (NFNL_SUBSYS_CTNETLINK << 8) | op
}

pub const NLA_F_NESTED: u16 = 0x8000;
pub const NLA_F_NET_BYTEORDER: u16 = 0x4000;
pub const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);

pub const CTA_TUPLE_ORIG: u16 = 1;
pub const CTA_TUPLE_REPLY: u16 = 2;
pub const CTA_STATUS: u16 = 3;
pub const CTA_TIMEOUT: u16 = 7;
pub const CTA_MARK: u16 = 8;
pub const CTA_ID: u16 = 12;
pub const CTA_ZONE: u16 = 18;
pub const CTA_MARK_MASK: u16 = 21;
pub const CTA_LABELS: u16 = 22;
pub const CTA_LABELS_MASK: u16 = 23;
pub const CTA_FILTER: u16 = 25;

pub const CTA_TUPLE_IP: u16 = 1;
pub const CTA_TUPLE_PROTO: u16 = 2;
pub const CTA_TUPLE_ZONE: u16 = 3;

pub const CTA_IP_V4_SRC: u16 = 1;
pub const CTA_IP_V4_DST: u16 = 2;
pub const CTA_IP_V6_SRC: u16 = 3;
pub const CTA_IP_V6_DST: u16 = 4;

pub const CTA_PROTO_NUM: u16 = 1;
pub const CTA_PROTO_SRC_PORT: u16 = 2;
pub const CTA_PROTO_DST_PORT: u16 = 3;

pub const CTA_FILTER_ORIG_FLAGS: u16 = 1;
pub const CTA_FILTER_REPLY_FLAGS: u16 = 2;
pub const CTA_FILTER_FLAG_IP_SRC: u32 = 1 << 0;
pub const CTA_FILTER_FLAG_IP_DST: u32 = 1 << 1;
pub const CTA_FILTER_FLAG_PROTO_NUM: u32 = 1 << 3;
pub const CTA_FILTER_FLAG_PROTO_SRC_PORT: u32 = 1 << 4;
pub const CTA_FILTER_FLAG_PROTO_DST_PORT: u32 = 1 << 5;

/// `ctattr_stats_global`: the entry count and limit of `IPCTNL_MSG_CT_GET_STATS`.
pub const CTA_STATS_GLOBAL_ENTRIES: u16 = 1;
pub const CTA_STATS_GLOBAL_MAX_ENTRIES: u16 = 2;

/// `ctattr_stats_cpu`: the counters of one `IPCTNL_MSG_CT_GET_STATS_CPU` message.
pub const CTA_STATS_SEARCHED: u16 = 1;
pub const CTA_STATS_FOUND: u16 = 2;
pub const CTA_STATS_INVALID: u16 = 4;
pub const CTA_STATS_INSERT: u16 = 8;
pub const CTA_STATS_INSERT_FAILED: u16 = 9;
pub const CTA_STATS_DROP: u16 = 10;
pub const CTA_STATS_EARLY_DROP: u16 = 11;
pub const CTA_STATS_ERROR: u16 = 12;
pub const CTA_STATS_SEARCH_RESTART: u16 = 13;
pub const CTA_STATS_CLASH_RESOLVE: u16 = 14;
pub const CTA_STATS_CHAIN_TOOLONG: u16 = 15;

pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
pub const IPPROTO_SCTP: u8 = 132;
