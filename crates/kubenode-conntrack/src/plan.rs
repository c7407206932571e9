//! The decision of one cleanup pass, made without the kernel: which path it takes, what it
//! dumps (each dump filtered in the kernel) and which tables decide what is stale. The cleaner
//! runs the plan on the socket; everything here is tested on plain values.

use std::borrow::Cow;

use crate::cost::{CostModel, Estimate};
use crate::flow::DumpFilter;
use crate::flow_index::Resync;
use crate::probe::FlushSupport;
use crate::report::{CleanOptions, CleanPath, FullReason};
use crate::stale::StaleMatcher;
use crate::stale_diff::stale_diff;

/// The last pass of one family, as the next one starts from it.
#[derive(Debug, Clone, Default)]
pub enum LastPass {
    /// None yet: the next pass is full.
    #[default]
    None,
    /// It failed, was partial, or left flows it could not delete: the next pass is full. Holds
    /// the tables it ran with (deleted frontends included), whose frontends the next pass
    /// checks for deletion.
    Incomplete(Option<StaleMatcher>),
    /// It succeeded with these tables: the next pass may start from their diff.
    Done(StaleMatcher),
}

impl LastPass {
    /// The tables of that pass, the base for finding deleted frontends.
    pub fn tables(&self) -> Option<&StaleMatcher> {
        match self {
            LastPass::None => None,
            LastPass::Incomplete(m) => m.as_ref(),
            LastPass::Done(m) => Some(m),
        }
    }
}

/// What one dump of a plan covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpKind {
    /// The whole table (of the rules' protocol): a full pass.
    Table,
    /// The flows of one removed (frontend, backend) pair; its time measures a walk.
    Pair,
    /// The flows of a frontend the previous tables did not know.
    Frontend,
}

/// The measured and probed inputs of the targeted-or-full choice.
#[derive(Debug, Clone, Copy)]
pub struct Costs<'a> {
    /// Whether this kernel takes `CTA_FILTER` deletes (the targeted path's requirement). Only
    /// `Unsupported` rules the targeted path out: every handle probes when it opens.
    pub flush_support: FlushSupport,
    pub model: &'a CostModel,
    /// A pinned choice (`Some(true)`: targeted whenever the previous pass allows it); `None`
    /// leaves it to `model`. Only tests pin it.
    pub pinned: Option<bool>,
}

/// One pass, decided.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    pub path: CleanPath,
    /// Set when `path` is `Full`.
    pub full_reason: Option<FullReason>,
    /// The estimates a cost decision compared.
    pub estimate: Option<Estimate>,
    /// The dumps, in order; every flow they return is decided by `tables`.
    pub dumps: Vec<(DumpKind, DumpFilter)>,
    /// The rules of the pass: the tables handed over plus the frontends deleted since the
    /// previous pass ([`StaleMatcher::with_deleted`]).
    pub tables: Cow<'a, StaleMatcher>,
}

impl<'a> Plan<'a> {
    /// The full pass, for `reason`.
    pub fn full(
        tables: Cow<'a, StaleMatcher>,
        reason: FullReason,
        estimate: Option<Estimate>,
    ) -> Self {
        Plan {
            path: CleanPath::Full,
            full_reason: Some(reason),
            estimate,
            dumps: vec![(DumpKind::Table, tables.dump_filter())],
            tables,
        }
    }
}

/// Decides a pass of `tables` after `previous`. The previous pass allows the targeted path only
/// when it succeeded; then the diff of the two decides: nothing changed (no request at all), or
/// targeted against full by the measured costs on a table of `table_entries()` entries. That
/// count is asked for only by a cost decision (it is one small request); `None` (unknown)
/// means full.
pub fn plan<'a>(
    previous: &LastPass,
    tables: &'a StaleMatcher,
    opts: CleanOptions,
    costs: Costs<'_>,
    table_entries: impl FnOnce() -> Option<u64>,
) -> Plan<'a> {
    let effective = tables.with_deleted(previous.tables());
    let old = match (previous, opts) {
        // A dry run deletes nothing, so it selects from the whole table.
        (_, CleanOptions { dry_run: true, .. }) => {
            return Plan::full(effective, FullReason::DryRun, None)
        }
        (_, CleanOptions { full: true, .. }) => {
            return Plan::full(effective, FullReason::Requested, None)
        }
        (LastPass::None, _) => return Plan::full(effective, FullReason::First, None),
        (LastPass::Incomplete(_), _) => {
            return Plan::full(effective, FullReason::PreviousIncomplete, None)
        }
        (LastPass::Done(old), _) => old,
    };
    let diff = stale_diff(old, &effective);
    if diff.is_empty() {
        return Plan {
            path: CleanPath::Unchanged,
            full_reason: None,
            estimate: None,
            dumps: Vec::new(),
            tables: effective,
        };
    }
    let Some(table) = table_entries() else {
        return Plan::full(effective, FullReason::Cost, None);
    };
    if costs.flush_support == FlushSupport::Unsupported && !diff.pairs.is_empty() {
        return Plan::full(effective, FullReason::Unsupported, None);
    }
    let estimate = costs.model.estimate(diff.walks(), table);
    let targeted = costs
        .pinned
        .unwrap_or_else(|| estimate.is_some_and(|e| e.prefers_targeted()));
    if !targeted {
        return Plan::full(effective, FullReason::Cost, estimate);
    }
    let pairs = diff.pairs.into_iter().map(|f| (DumpKind::Pair, f));
    let frontends = diff.frontends.into_iter().map(|f| (DumpKind::Frontend, f));
    Plan {
        path: CleanPath::Targeted,
        full_reason: None,
        estimate,
        dumps: pairs.chain(frontends).collect(),
        tables: effective,
    }
}

/// [`plan`] for a cleaner with an event-fed flow index whose state for the family is `index`.
/// Where `plan` would start from the last pass (it succeeded, and neither a dry run nor a full
/// pass was asked for), a valid index answers the pass from memory (`Indexed`, no dump, every
/// pair decided, so it also catches flows that became stale between two passes), and an
/// invalid one makes it a full pass that rebuilds the index. Otherwise `plan` decides.
pub fn plan_with_index<'a>(
    previous: &LastPass,
    tables: &'a StaleMatcher,
    opts: CleanOptions,
    costs: Costs<'_>,
    index: Result<(), Resync>,
    table_entries: impl FnOnce() -> Option<u64>,
) -> Plan<'a> {
    if opts.dry_run || opts.full || !matches!(previous, LastPass::Done(_)) {
        return plan(previous, tables, opts, costs, table_entries);
    }
    let effective = tables.with_deleted(previous.tables());
    match index {
        Ok(()) => Plan {
            path: CleanPath::Indexed,
            full_reason: None,
            estimate: None,
            dumps: Vec::new(),
            tables: effective,
        },
        Err(_) => Plan::full(effective, FullReason::IndexResync, None),
    }
}
