//! One ctnetlink event: what happened to a flow (`IPCTNL_MSG_CT_NEW` with or without
//! `NLM_F_CREATE`, `IPCTNL_MSG_CT_DELETE`) and the flow as the kernel reported it. Shared by the
//! event stream that reads them and the index that keeps live flows from them.

use crate::flow::Flow;

/// The multicast group an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A flow was confirmed (`NFNLGRP_CONNTRACK_NEW`).
    New,
    /// A flow changed (status, timeout, mark, …; `NFNLGRP_CONNTRACK_UPDATE`).
    Update,
    /// A flow was deleted or expired (`NFNLGRP_CONNTRACK_DESTROY`).
    Destroy,
}

/// A flow and what happened to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEvent {
    pub kind: EventKind,
    pub flow: Flow,
}
