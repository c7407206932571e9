//! One cleanup pass. A full pass is a single dump filtered to the matcher's protocol, decided
//! per entry as it streams, then the stale entries deleted in batches by exact tuple and ID;
//! memory grows with the stale entries, never with the table. Between full passes a handle
//! can take the targeted path: the diff since its last successful pass, one kernel-filtered
//! dump per removed (frontend, backend) pair (the fields a filtered flush would match, see
//! `stale_diff`) plus exact deletes, when the measured costs say that beats a full pass. The
//! kernel's filtered-flush support (probed at open) is what the targeted path requires of it.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::Instant;

use crate::conntrack::{Conntrack, DumpEvent};
use crate::cost::Estimate;
use crate::error::{Error, Result};
use crate::flow::{DumpFilter, Family, Flow};
use crate::flush::FlushSupport;
use crate::stale::StaleMatcher;
use crate::stale_diff::{stale_diff, StaleDiff};
use crate::targeted::LastPass;

/// Live progress of a pass, readable from another thread (the CLI's progress bar). Counts are
/// u32, as in [`CleanReport`].
#[derive(Debug, Default)]
pub struct Progress {
    pub phase: AtomicU8,
    pub listed: AtomicU32,
    pub stale: AtomicU32,
    pub deleted: AtomicU32,
}

/// One reading of a `Progress`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "ConntrackProgress"))]
pub struct ProgressReport {
    /// `"idle"`, `"listing"` or `"deleting"` (`Progress::phase_name`).
    pub phase: String,
    pub listed: u32,
    pub stale: u32,
    pub deleted: u32,
}

pub const PHASE_IDLE: u8 = 0;
pub const PHASE_LISTING: u8 = 1;
pub const PHASE_DELETING: u8 = 2;

impl Progress {
    /// The current phase by the name callers show: `"idle"`, `"listing"` or `"deleting"`.
    pub fn phase_name(&self) -> &'static str {
        match self.phase.load(Ordering::Relaxed) {
            PHASE_LISTING => "listing",
            PHASE_DELETING => "deleting",
            _ => "idle",
        }
    }

    /// What the pass has done so far.
    pub fn report(&self) -> ProgressReport {
        ProgressReport {
            phase: self.phase_name().to_string(),
            listed: self.listed.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            deleted: self.deleted.load(Ordering::Relaxed),
        }
    }
}

/// Which path a cleanup pass took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "camelCase", js_name = "ConntrackCleanPath"))]
pub enum CleanPath {
    /// Upstream's whole-table pass.
    #[default]
    Full,
    /// Only what changed since the handle's last successful pass.
    Targeted,
    /// Nothing changed that could make a flow stale: no request was sent.
    Unchanged,
}

/// Why a full cleanup pass ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "camelCase", js_name = "ConntrackFullReason"))]
pub enum FullReason {
    /// The first pass of this family on the handle.
    First,
    /// The caller asked for it (`full`).
    Requested,
    /// A dry run selects from the whole table.
    DryRun,
    /// The previous pass failed, was partial or left flows it could not delete.
    PreviousIncomplete,
    /// The kernel has no filtered flush.
    Unsupported,
    /// The measured costs favour one full pass.
    Cost,
}

/// What one pass did. Counts are u32: they count table entries (or pairs of them), and a
/// table holds at most `nf_conntrack_max` entries, a u32 in the kernel.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "ConntrackCleanReport"))]
pub struct CleanReport {
    /// Entries the kernel returned for the (UDP-filtered) dumps of the pass.
    pub listed: u32,
    /// Entries selected as stale.
    pub stale: u32,
    /// Upstream's count: deleted now or already gone (ENOENT).
    pub deleted: u32,
    pub not_found: u32,
    pub failed: u32,
    /// The dump was still interrupted after the last attempt.
    pub partial: bool,
    pub attempts: u32,
    pub seconds: f64,
    pub first_error: Option<String>,
    pub path: CleanPath,
    /// Set when `path` is `Full`.
    pub full_reason: Option<FullReason>,
    /// The estimates the choice compared, when it was a cost decision.
    // Named for the typings: `Estimate` is declared after this module is read.
    #[cfg_attr(feature = "napi", napi(ts_type = "ConntrackCleanEstimate"))]
    pub estimate: Option<Estimate>,
    /// Removed (frontend, backend) pairs walked on the targeted path, one filtered dump each.
    pub pairs: u32,
}

/// `n` as a count of table entries (see [`CleanReport`]): at most `nf_conntrack_max`, so it
/// saturates rather than wraps should more ever be handed over.
pub(crate) fn entry_count(n: impl TryInto<u32>) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CleanOptions {
    /// Select but do not delete.
    pub dry_run: bool,
    /// Run the full pass whatever the handle remembers.
    pub full: bool,
}

enum Choice {
    Full(FullReason, Option<Estimate>),
    Targeted(StaleDiff, Option<Estimate>),
    Unchanged,
}

/// Runs upstream's `CleanStaleEntries` for one family, or the targeted path when the handle's
/// last successful pass allows it and costs favour it, with the rules of the release `matcher`
/// was built for, plus the frontends deleted since the handle's last pass
/// ([`StaleMatcher::with_deleted`]). A listing error other than an
/// interruption aborts with `Err` (upstream records no metrics then); delete failures are
/// counted in the report and never stop the rest of the batch.
pub fn clean_stale(
    ct: &mut Conntrack,
    family: Family,
    matcher: &StaleMatcher,
    opts: CleanOptions,
    progress: &Progress,
) -> Result<CleanReport> {
    let start = Instant::now();
    if opts.dry_run {
        // Deletes nothing, so what the handle remembers stays true.
        let mut rep = full_report(FullReason::DryRun, None);
        let m = matcher.with_deleted(ct.stale.family(family).last.tables());
        dump_and_delete(ct, family, &m.dump_filter(), &m, true, progress, &mut rep)?;
        rep.seconds = start.elapsed().as_secs_f64();
        return Ok(rep);
    }
    // Until this pass succeeds, the next one must be full.
    let prev = std::mem::replace(
        &mut ct.stale.family(family).last,
        LastPass::Incomplete(None),
    );
    // The rules run on these tables plus the frontends deleted since the last pass.
    let effective = matcher.with_deleted(prev.tables());
    let result = run_pass(ct, family, &prev, &effective, opts, progress);
    let done = matches!(&result, Ok(r) if r.failed == 0 && !r.partial);
    ct.stale.family(family).last = if done {
        LastPass::Done(matcher.clone())
    } else {
        // Deleted frontends stay stale until a pass gets through.
        LastPass::Incomplete(Some(effective.into_owned()))
    };
    let mut rep = result?;
    rep.seconds = start.elapsed().as_secs_f64();
    Ok(rep)
}

/// The path the handle's last pass allows and the costs favour, run with `matcher`.
fn run_pass(
    ct: &mut Conntrack,
    family: Family,
    prev: &LastPass,
    matcher: &StaleMatcher,
    opts: CleanOptions,
    progress: &Progress,
) -> Result<CleanReport> {
    let choice = match (prev, opts.full) {
        (_, true) => Choice::Full(FullReason::Requested, None),
        (LastPass::None, _) => Choice::Full(FullReason::First, None),
        (LastPass::Incomplete(_), _) => Choice::Full(FullReason::PreviousIncomplete, None),
        (LastPass::Done(old), false) => choose(ct, family, stale_diff(old, matcher)),
    };
    let rep = match choice {
        Choice::Unchanged => CleanReport {
            path: CleanPath::Unchanged,
            ..Default::default()
        },
        Choice::Targeted(diff, est) => match targeted_pass(ct, family, matcher, &diff, progress) {
            Err(Error::Unsupported { .. }) => {
                ct.flush_support = FlushSupport::Unsupported;
                full_pass(ct, family, matcher, FullReason::Unsupported, None, progress)?
            }
            r => {
                let mut rep = r?;
                rep.estimate = est;
                rep
            }
        },
        Choice::Full(reason, est) => full_pass(ct, family, matcher, reason, est, progress)?,
    };
    Ok(rep)
}

fn full_report(reason: FullReason, estimate: Option<Estimate>) -> CleanReport {
    CleanReport {
        path: CleanPath::Full,
        full_reason: Some(reason),
        estimate,
        ..Default::default()
    }
}

/// Targeted or full, from the diff and the costs measured on this handle (no request walks
/// the table only to measure it: see `cost.rs`).
fn choose(ct: &mut Conntrack, family: Family, diff: StaleDiff) -> Choice {
    if diff.is_empty() {
        return Choice::Unchanged;
    }
    let Ok(table) = ct.table_count() else {
        return Choice::Full(FullReason::Cost, None);
    };
    if ct.flush_support == FlushSupport::Unknown {
        ct.probe_flush(family);
    }
    if ct.flush_support == FlushSupport::Unsupported && !diff.pairs.is_empty() {
        return Choice::Full(FullReason::Unsupported, None);
    }
    let est = ct.stale.family(family).cost.estimate(diff.walks(), table);
    let pinned = ct.faults_mut().cost_choice;
    if pinned.unwrap_or_else(|| est.is_some_and(|e| e.prefers_targeted())) {
        Choice::Targeted(diff, est)
    } else {
        Choice::Full(FullReason::Cost, est)
    }
}

fn full_pass(
    ct: &mut Conntrack,
    family: Family,
    matcher: &StaleMatcher,
    reason: FullReason,
    estimate: Option<Estimate>,
    progress: &Progress,
) -> Result<CleanReport> {
    let start = Instant::now();
    let mut rep = full_report(reason, estimate);
    let dump_seconds = dump_and_delete(
        ct,
        family,
        &matcher.dump_filter(),
        matcher,
        false,
        progress,
        &mut rep,
    )?;
    // What the next cost decision compares against (one small request).
    if let Ok(table) = ct.table_count() {
        let entries = table + u64::from(rep.deleted);
        let cost = &mut ct.stale.family(family).cost;
        cost.record_full(start.elapsed().as_secs_f64(), entries);
        cost.record_dump(dump_seconds, entries, rep.listed.into());
    }
    Ok(rep)
}

fn targeted_pass(
    ct: &mut Conntrack,
    family: Family,
    matcher: &StaleMatcher,
    diff: &StaleDiff,
    progress: &Progress,
) -> Result<CleanReport> {
    let mut rep = CleanReport {
        path: CleanPath::Targeted,
        attempts: 1,
        ..Default::default()
    };
    if !diff.pairs.is_empty() {
        // Per removed (frontend, backend) pair, one dump filtered in the kernel by exactly the
        // fields a filtered flush would match, then exact deletes by tuple and ID. It walks the
        // table once per pair, as a flush does, but the kernel hands back what matched: each flow
        // is decided by the full pass's rule and `deleted` counts what went. A flush reports no
        // count, and the table's entry count does not drop at once for flows that packets
        // created, so kube-proxy's deleted-entries metric would read 0.
        let table = ct.table_count()?;
        for f in &diff.pairs {
            let walk = dump_and_delete(
                ct,
                family,
                &f.dump_filter(),
                matcher,
                false,
                progress,
                &mut rep,
            )?;
            ct.stale.family(family).cost.record_walk(walk, table);
            rep.pairs = rep.pairs.saturating_add(1);
        }
    }
    for filter in &diff.frontends {
        dump_and_delete(ct, family, filter, matcher, false, progress, &mut rep)?;
    }
    progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
    Ok(rep)
}

/// One dump filtered by `filter`, decided per entry with `matcher`, then the stale entries
/// deleted (unless `dry_run`); adds to `rep` and returns the seconds the dump took.
fn dump_and_delete(
    ct: &mut Conntrack,
    family: Family,
    filter: &DumpFilter,
    matcher: &StaleMatcher,
    dry_run: bool,
    progress: &Progress,
    rep: &mut CleanReport,
) -> Result<f64> {
    progress.phase.store(PHASE_LISTING, Ordering::Relaxed);
    let start = Instant::now();
    let mut stale: Vec<Flow> = Vec::new();
    let mut seen = 0u32;
    let stats = ct.dump(family, filter, |ev| match ev {
        DumpEvent::Attempt(_) => {
            stale.clear();
            seen = 0;
        }
        DumpEvent::Flow(f) => {
            seen = seen.saturating_add(1);
            if seen.is_multiple_of(4096) {
                progress.listed.store(seen, Ordering::Relaxed);
            }
            if matcher.is_stale(f) {
                stale.push(*f);
            }
        }
    });
    let dump_seconds = start.elapsed().as_secs_f64();
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
    if !stale.is_empty() && !dry_run {
        progress.phase.store(PHASE_DELETING, Ordering::Relaxed);
        match ct.delete(family, &stale) {
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
    progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
    Ok(dump_seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_by_name() {
        let p = Progress::default();
        assert_eq!(p.phase_name(), "idle");
        for (phase, name) in [
            (PHASE_LISTING, "listing"),
            (PHASE_DELETING, "deleting"),
            (PHASE_IDLE, "idle"),
        ] {
            p.phase.store(phase, Ordering::Relaxed);
            assert_eq!(p.phase_name(), name);
        }
    }

    #[test]
    fn report_reads_phase_and_counts() {
        let p = Progress::default();
        p.phase.store(PHASE_DELETING, Ordering::Relaxed);
        p.listed.store(7, Ordering::Relaxed);
        p.stale.store(4, Ordering::Relaxed);
        p.deleted.store(3, Ordering::Relaxed);
        let want = ProgressReport {
            phase: "deleting".to_string(),
            listed: 7,
            stale: 4,
            deleted: 3,
        };
        assert_eq!(p.report(), want);
    }

    #[test]
    fn entry_counts_saturate() {
        assert_eq!(entry_count(5usize), 5);
        assert_eq!(entry_count(u64::from(u32::MAX) + 1), u32::MAX);
    }
}
