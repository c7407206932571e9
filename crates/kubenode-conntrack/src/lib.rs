//! Conntrack over ctnetlink, kube-proxy's stale UDP flow cleanup and its conntrack sysctl rule.
//!
//! The client speaks ctnetlink by hand on one persistent `NETLINK_NETFILTER` socket: dumps are
//! filtered in the kernel (`CTA_FILTER`) and again here, parsed in place from a reused 64 KiB
//! buffer without per-entry allocation, and retried on `NLM_F_DUMP_INTR` as upstream does;
//! deletes go by exact tuple, zone and `CTA_ID`, thousands per `sendmsg`.

// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod attr;
mod cleaner;
mod conntrack;
mod consts;
mod cost;
mod error;
mod event;
mod event_bpf;
mod event_msg;
mod events;
mod fault;
mod filter;
mod flow;
mod flow_index;
mod flush;
mod group_membership;
mod handle;
mod hash;
mod index_feed;
mod netns_open;
mod plan;
mod probe;
mod progress;
mod purge;
mod report;
mod socket;
mod stale;
mod stale_diff;
mod stats;
mod sysctls;
mod validate;

pub use attr::{Attrs, MsgBuf, Msgs};
pub use cleaner::StaleFlowCleaner;
pub use conntrack::{BatchReport, Conntrack, DumpEvent, DumpStats, MAX_DUMP_ATTEMPTS};
pub use consts::{IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP};
pub use cost::{CostModel, Estimate};
pub use error::{Error, ErrorKind, Result};
pub use event::{EventKind, FlowEvent};
pub use event_bpf::{program as event_filter_program, Insn};
pub use event_msg::{event_kind, parse_event};
pub use events::{EventSocket, EventWaker, Groups, ReadOutcome, MAX_RCVBUF};
#[cfg(feature = "test-hooks")]
pub use fault::{Fault, Faults};
pub use filter::{
    encode_dump, encode_filter_attrs, encode_filtered_dump, AddrMatch, AsFlowFilter,
    DirectionFilter, FlowFilter, Masked,
};
pub use flow::{
    check_family, encode_delete, encode_new, parse_entry_payload, parse_flow, DumpFilter, Family,
    Flow, Tuple,
};
pub use flow_index::{FlowIndex, IndexedStale, Rebuild, Resync};
pub use flush::{FilterDeleteReport, FlushPath};
pub use group_membership::{GroupMembership, Paused};
pub use handle::{ConntrackHandle, Handle, Session};
pub use index_feed::{FeedStats, IndexFeed, INDEX_GROUPS};
pub use kubenode_sysctl::{KubernetesVersion, KubernetesVersionError};
pub use plan::{plan, plan_with_index, Costs, DumpKind, LastPass, Plan};
pub use probe::{encode_flush_probe, flush_support_from_errno, FlushSupport};
pub use progress::{Progress, ProgressReport, PHASE_DELETING, PHASE_IDLE, PHASE_LISTING};
pub use purge::{flow_has_ip, gone_ips};
pub use report::{CleanOptions, CleanPath, CleanReport, FullReason};
pub use stale::{
    is_headless, Endpoint, EndpointEntry, Protocol, Service, ServiceEntry, ServicePort,
    StaleMatcher,
};
pub use stale_diff::{stale_diff, StaleDiff};
pub use stats::{
    check_full_threshold, full_alarm, parse_cpu_stats, parse_global_stats, CpuStats, FullAlarm,
    StatsTotal, TableStats, DEFAULT_FULL_THRESHOLD, REARM_GAP,
};
pub use sysctls::writes_conntrack_max;
pub use validate::{check_flows, parse_family, parse_ip, protocol_number, stale_matcher};

/// Low-level codec pieces and the bare socket, for tests, fuzzing and the benchmark's floor.
pub mod codec {
    pub use crate::attr::{align4, parse_ack, Msg};
    pub use crate::consts::*;
    pub use crate::socket::{NlSocket, RECV_BUF};
}
