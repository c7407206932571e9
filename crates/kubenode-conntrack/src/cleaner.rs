//! kube-proxy's stale UDP flow cleanup (`CleanStaleEntries`) on a handle. A full pass is a
//! single dump filtered to the rules' protocol, decided per entry as it streams, then the stale
//! entries deleted in batches by exact tuple and ID; memory grows with the stale entries, never
//! with the table. Between full passes the targeted path dumps only what changed since the last
//! successful pass: one kernel-filtered dump per removed (frontend, backend) pair and per new
//! frontend (`stale_diff`), then the same exact deletes, when the measured costs say that beats
//! a full pass. With an event-fed [`FlowIndex`] the stale flows come from memory instead
//! (`Indexed`), and every full pass rebuilds the index from its dump.
//! [`plan`](crate::plan::plan) decides; this module runs the decision.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::conntrack::{entry_count, Conntrack, DumpEvent};
use crate::cost::CostModel;
use crate::error::{Error, Result};
use crate::flow::{DumpFilter, Family, Flow};
use crate::flow_index::FlowIndex;
use crate::group_membership::GroupMembership;
use crate::plan::{plan, plan_with_index, Costs, DumpKind, LastPass, Plan};
use crate::probe::FlushSupport;
use crate::progress::{Progress, PHASE_DELETING, PHASE_IDLE, PHASE_LISTING};
use crate::report::{CleanOptions, CleanPath, CleanReport, FullReason};
use crate::stale::StaleMatcher;

/// What the cleaner remembers of one IP family.
#[derive(Debug, Clone, Default)]
struct FamilyState {
    last: LastPass,
    cost: CostModel,
}

/// The cleanup of one handle's tables: owns what its passes remember (the previous tables, per
/// family, which the deleted-service rule and the targeted path start from) and the measured
/// costs, and uses a [`Conntrack`] for every request.
#[derive(Debug, Clone, Default)]
pub struct StaleFlowCleaner {
    v4: FamilyState,
    v6: FamilyState,
    /// A targeted dump was refused as unsupported: every later pass is full.
    targeted_refused: bool,
    /// The event-fed flow index, when enabled: its feeder applies events to it meanwhile.
    index: Option<Arc<Mutex<FlowIndex>>>,
    /// The DESTROY group of the index's event socket, left while an indexed pass deletes.
    destroy_group: Option<Arc<GroupMembership>>,
    #[cfg(feature = "test-hooks")]
    pinned: Option<bool>,
}

impl StaleFlowCleaner {
    pub fn new() -> Self {
        Self::default()
    }

    fn family(&mut self, family: Family) -> &mut FamilyState {
        match family {
            Family::V4 => &mut self.v4,
            Family::V6 => &mut self.v6,
        }
    }

    /// Takes the stale flows from `index` (fed from events by its owner) between full passes,
    /// and rebuilds it on each full pass; `None` turns that off.
    pub fn set_index(&mut self, index: Option<Arc<Mutex<FlowIndex>>>) {
        self.index = index;
    }

    /// The DESTROY group of the socket feeding the index: an indexed pass leaves it while it
    /// deletes flows the index drops itself, so the kernel builds no event per delete (it
    /// builds them only while the group has a listener). Flows that end elsewhere meanwhile
    /// stay in the index until they are deleted as already gone or the next full pass.
    pub fn set_destroy_group(&mut self, group: Option<Arc<GroupMembership>>) {
        self.destroy_group = group;
    }

    pub fn index(&self) -> Option<&Arc<Mutex<FlowIndex>>> {
        self.index.as_ref()
    }

    /// The measured costs of `family`.
    pub fn costs(&self, family: Family) -> &CostModel {
        match family {
            Family::V4 => &self.v4.cost,
            Family::V6 => &self.v6.cost,
        }
    }

    /// Test hook: the measured costs of `family`, to pin a decision.
    #[cfg(feature = "test-hooks")]
    pub fn costs_mut(&mut self, family: Family) -> &mut CostModel {
        &mut self.family(family).cost
    }

    /// Test hook: pins the targeted-vs-full choice (`Some(true)`: targeted whenever the last
    /// pass allows it), so tests exercise a path whatever this machine measures.
    #[cfg(feature = "test-hooks")]
    pub fn pin_choice(&mut self, prefer_targeted: Option<bool>) {
        self.pinned = prefer_targeted;
    }

    fn pinned(&self) -> Option<bool> {
        #[cfg(feature = "test-hooks")]
        return self.pinned;
        #[cfg(not(feature = "test-hooks"))]
        None
    }

    /// Runs upstream's `CleanStaleEntries` for one family on `ct`, or the targeted path when the
    /// last successful pass allows it and costs favour it, with the rules of the release
    /// `matcher` was built for, plus the frontends deleted since the last pass
    /// ([`StaleMatcher::with_deleted`]). A listing error other than an interruption aborts with
    /// `Err` (upstream records no metrics then); delete failures are counted in the report and
    /// never stop the rest of the batch.
    pub fn clean(
        &mut self,
        ct: &mut Conntrack,
        family: Family,
        matcher: &StaleMatcher,
        opts: CleanOptions,
        progress: &Progress,
    ) -> Result<CleanReport> {
        let start = Instant::now();
        let flush_support = if self.targeted_refused {
            FlushSupport::Unsupported
        } else {
            ct.flush_support()
        };
        let pinned = self.pinned();
        let index = self.index.clone();
        let quiet = self.destroy_group.clone();
        let state = self.family(family);
        if opts.dry_run {
            // Deletes nothing, so what the cleaner remembers stays true.
            let costs = Costs {
                flush_support,
                model: &state.cost,
                pinned,
            };
            let p = plan(&state.last, matcher, opts, costs, || None);
            let mut rep = report(&p);
            for (_, filter) in &p.dumps {
                let mode = Mode::DryRun;
                dump_and_delete(ct, family, filter, &p.tables, mode, progress, &mut rep)?;
            }
            rep.seconds = start.elapsed().as_secs_f64();
            return Ok(rep);
        }
        // Until this pass succeeds, the next one must be full.
        let prev = std::mem::replace(&mut state.last, LastPass::Incomplete(None));
        let costs = Costs {
            flush_support,
            model: &state.cost,
            pinned,
        };
        let count = || ct.table_count().ok();
        let p = match &index {
            Some(x) => {
                let st = lock(x).state(family);
                plan_with_index(&prev, matcher, opts, costs, st, count)
            }
            None => plan(&prev, matcher, opts, costs, count),
        };
        let index = index.as_deref();
        let quiet = quiet.as_deref();
        let result = match run(ct, family, &p, &mut state.cost, index, quiet, progress) {
            Err(Error::Unsupported { .. }) if p.path == CleanPath::Targeted => {
                self.targeted_refused = true;
                let full = Plan::full(p.tables.clone(), FullReason::Unsupported, None);
                run(
                    ct,
                    family,
                    &full,
                    &mut self.family(family).cost,
                    index,
                    quiet,
                    progress,
                )
            }
            r => r,
        };
        let done = matches!(&result, Ok(r) if r.failed == 0 && !r.partial);
        self.family(family).last = if done {
            LastPass::Done(matcher.clone())
        } else {
            // Deleted frontends stay stale until a pass gets through.
            LastPass::Incomplete(Some(p.tables.into_owned()))
        };
        let mut rep = result?;
        rep.seconds = start.elapsed().as_secs_f64();
        Ok(rep)
    }
}

/// The index, even if a thread panicked holding it (its maps stay consistent: every change
/// is one map operation).
fn lock(x: &Mutex<FlowIndex>) -> MutexGuard<'_, FlowIndex> {
    x.lock().unwrap_or_else(|p| p.into_inner())
}

/// The report of `p` before it runs.
fn report(p: &Plan<'_>) -> CleanReport {
    CleanReport {
        path: p.path,
        full_reason: p.full_reason,
        estimate: p.estimate,
        attempts: u32::from(p.path == CleanPath::Targeted),
        ..Default::default()
    }
}

/// Runs the dumps of `p` (or, on the indexed path, takes its stale flows from `index`) and
/// records what they measured in `cost`. A full pass rebuilds `index`.
fn run(
    ct: &mut Conntrack,
    family: Family,
    p: &Plan<'_>,
    cost: &mut CostModel,
    index: Option<&Mutex<FlowIndex>>,
    quiet: Option<&GroupMembership>,
    progress: &Progress,
) -> Result<CleanReport> {
    let start = Instant::now();
    let mut rep = report(p);
    if p.path == CleanPath::Indexed {
        if let Some(x) = index {
            progress.phase.store(PHASE_LISTING, Ordering::Relaxed);
            let found = lock(x).stale(family, &p.tables);
            rep.stale = found.flows.len().try_into().unwrap_or(u32::MAX);
            rep.pairs = found.pairs;
            progress.stale.store(rep.stale, Ordering::Relaxed);
            // No DESTROY event per delete: the index drops these flows itself below. If the
            // group cannot be left the deletes just cost the events; if it cannot be joined
            // again, the index would miss flows ending from now on, so it is resynced.
            let paused = quiet.and_then(|g| g.pause().ok());
            delete_stale(ct, family, &found.flows, progress, &mut rep);
            let rejoined = paused.is_none_or(|p| p.resume().is_ok());
            // Gone now or already: their DESTROY events may come after the next pass.
            let mut x = lock(x);
            x.remove(family, &found.flows);
            if !rejoined {
                x.lost();
            }
            drop(x);
            progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
            return Ok(rep);
        }
    }
    // A per-pair dump walks the table once, as a filtered flush would, but the kernel hands
    // back what matched: each flow is decided by the full pass's rule and `deleted` counts what
    // went (a flush reports no count, and the table's entry count does not drop at once for
    // flows that packets created, so kube-proxy's deleted-entries metric would read 0).
    let walked = if p.dumps.iter().any(|(k, _)| *k == DumpKind::Pair) {
        Some(ct.table_count()?)
    } else {
        None
    };
    let mut table_seconds = 0.0;
    for (kind, filter) in &p.dumps {
        let mode = match (kind, index) {
            (DumpKind::Table, Some(x)) => Mode::Rebuild(x),
            _ => Mode::Delete,
        };
        let secs = dump_and_delete(ct, family, filter, &p.tables, mode, progress, &mut rep)?;
        match kind {
            DumpKind::Table => table_seconds += secs,
            DumpKind::Pair => {
                if let Some(table) = walked {
                    cost.record_walk(secs, table);
                }
                rep.pairs = rep.pairs.saturating_add(1);
            }
            DumpKind::Frontend => {}
        }
    }
    progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
    if p.path == CleanPath::Full {
        // What the next cost decision compares against (one small request).
        if let Ok(table) = ct.table_count() {
            let entries = table + u64::from(rep.deleted);
            cost.record_full(start.elapsed().as_secs_f64(), entries);
            cost.record_dump(table_seconds, entries, rep.listed.into());
        }
    }
    Ok(rep)
}

/// What a dump does besides selecting the stale entries.
#[derive(Clone, Copy)]
enum Mode<'a> {
    /// Deletes nothing.
    DryRun,
    Delete,
    /// Deletes, and rebuilds the index from every entry kept (a whole-table dump).
    Rebuild(&'a Mutex<FlowIndex>),
}

/// Entries handed to the index per lock, so its feeder is never held up for long.
const REBUILD_BATCH: usize = 4096;

/// One dump filtered by `filter`, decided per entry with `matcher`, then the stale entries
/// deleted (unless a dry run); adds to `rep` and returns the seconds the dump took.
fn dump_and_delete(
    ct: &mut Conntrack,
    family: Family,
    filter: &DumpFilter,
    matcher: &StaleMatcher,
    mode: Mode<'_>,
    progress: &Progress,
    rep: &mut CleanReport,
) -> Result<f64> {
    progress.phase.store(PHASE_LISTING, Ordering::Relaxed);
    let start = Instant::now();
    let mut stale: Vec<Flow> = Vec::new();
    let mut seen = 0u32;
    let index = match mode {
        Mode::Rebuild(x) => Some(x),
        _ => None,
    };
    let mut kept: Vec<Flow> = Vec::new();
    // Cleared again by every attempt's start; taken before the dump so that events of flows
    // created while it runs are applied.
    let mut token = index.map(|x| lock(x).begin_rebuild(family));
    let stats = ct.dump(family, filter, |ev| match ev {
        DumpEvent::Attempt(_) => {
            stale.clear();
            seen = 0;
            kept.clear();
            if let Some(x) = index {
                token = Some(lock(x).begin_rebuild(family));
            }
        }
        DumpEvent::Flow(f) => {
            seen = seen.saturating_add(1);
            if seen.is_multiple_of(4096) {
                progress.listed.store(seen, Ordering::Relaxed);
            }
            if matcher.is_stale(f) {
                stale.push(*f);
            } else if let Some(x) = index {
                kept.push(*f);
                if kept.len() >= REBUILD_BATCH {
                    lock(x).extend(family, &kept);
                    kept.clear();
                }
            }
        }
    });
    let dump_seconds = start.elapsed().as_secs_f64();
    if let Some(x) = index {
        let mut x = lock(x);
        match (&stats, token) {
            (Ok(s), Some(t)) if !s.partial => {
                x.extend(family, &kept);
                x.finish_rebuild(family, t);
            }
            _ => x.abandon_rebuild(family),
        }
    }
    let stats = match stats {
        Ok(s) => s,
        Err(e) => {
            progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
            return Err(e);
        }
    };
    rep.listed = rep.listed.saturating_add(entry_count(stats.received));
    rep.partial |= stats.partial;
    rep.attempts = rep.attempts.max(stats.attempts);
    rep.stale = rep.stale.saturating_add(entry_count(stale.len()));
    progress.listed.store(seen, Ordering::Relaxed);
    progress.stale.store(rep.stale, Ordering::Relaxed);
    if !matches!(mode, Mode::DryRun) {
        delete_stale(ct, family, &stale, progress, rep);
    }
    progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
    Ok(dump_seconds)
}

/// Deletes `stale` by exact tuple, zone and ID in batches; counts into `rep`.
fn delete_stale(
    ct: &mut Conntrack,
    family: Family,
    stale: &[Flow],
    progress: &Progress,
    rep: &mut CleanReport,
) {
    if !stale.is_empty() {
        progress.phase.store(PHASE_DELETING, Ordering::Relaxed);
        match ct.delete(family, stale) {
            Ok(d) => {
                rep.deleted = rep.deleted.saturating_add(d.deleted());
                rep.not_found = rep.not_found.saturating_add(d.not_found);
                rep.failed = rep.failed.saturating_add(d.failed);
                if rep.first_error.is_none() {
                    rep.first_error = d.first_error;
                }
            }
            Err(e) => {
                // A socket-level failure: nothing more is known about the batch.
                rep.failed = rep.failed.saturating_add(entry_count(stale.len()));
                rep.first_error.get_or_insert_with(|| e.to_string());
            }
        }
        progress.deleted.store(rep.deleted, Ordering::Relaxed);
    }
}
