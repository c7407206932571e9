//! One cleanup pass: a single dump filtered to the matcher's protocol, decided per entry as it streams, then the
//! stale entries deleted in batches by exact tuple and ID. Memory grows with the stale
//! entries, never with the table.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::time::Instant;

use crate::conntrack::{Conntrack, DumpEvent};
use crate::error::Result;
use crate::flow::{Family, Flow};
use crate::stale::StaleMatcher;

/// Live progress of a pass, readable from another thread (the CLI's progress bar).
#[derive(Debug, Default)]
pub struct Progress {
    pub phase: AtomicU8,
    pub listed: AtomicU64,
    pub stale: AtomicU64,
    pub deleted: AtomicU64,
}

pub const PHASE_IDLE: u8 = 0;
pub const PHASE_LISTING: u8 = 1;
pub const PHASE_DELETING: u8 = 2;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanReport {
    /// Entries the kernel returned for the (UDP-filtered) dump.
    pub listed: u64,
    /// Entries selected as stale.
    pub stale: u64,
    /// Upstream's count: deleted now or already gone (ENOENT).
    pub deleted: u64,
    pub not_found: u64,
    pub failed: u64,
    /// The dump was still interrupted after the last attempt.
    pub partial: bool,
    pub attempts: u32,
    pub seconds: f64,
    pub first_error: Option<String>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CleanOptions {
    /// Select but do not delete.
    pub dry_run: bool,
}

/// Runs upstream's `CleanStaleEntries` for one family. A listing error other than an
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
    let mut rep = CleanReport::default();
    progress.phase.store(PHASE_LISTING, Ordering::Relaxed);
    let filter = matcher.dump_filter();
    let mut stale: Vec<Flow> = Vec::new();
    let mut seen = 0u64;
    let stats = ct.dump(family, &filter, |ev| match ev {
        DumpEvent::Attempt(_) => {
            stale.clear();
            seen = 0;
        }
        DumpEvent::Flow(f) => {
            seen += 1;
            if seen.is_multiple_of(4096) {
                progress.listed.store(seen, Ordering::Relaxed);
            }
            if matcher.is_stale(f) {
                stale.push(*f);
            }
        }
    });
    let stats = match stats {
        Ok(s) => s,
        Err(e) => {
            progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
            return Err(e);
        }
    };
    rep.listed = stats.received;
    rep.partial = stats.partial;
    rep.attempts = stats.attempts;
    rep.stale = stale.len() as u64;
    progress.listed.store(seen, Ordering::Relaxed);
    progress.stale.store(rep.stale, Ordering::Relaxed);
    if !stale.is_empty() && !opts.dry_run {
        progress.phase.store(PHASE_DELETING, Ordering::Relaxed);
        match ct.delete(family, &stale) {
            Ok(d) => {
                rep.deleted = d.deleted();
                rep.not_found = d.not_found;
                rep.failed = d.failed;
                rep.first_error = d.first_error;
            }
            Err(e) => {
                // A socket-level failure: nothing more is known about the batch.
                rep.failed = rep.stale;
                rep.first_error = Some(e.to_string());
            }
        }
        progress.deleted.store(rep.deleted, Ordering::Relaxed);
    }
    progress.phase.store(PHASE_IDLE, Ordering::Relaxed);
    rep.seconds = start.elapsed().as_secs_f64();
    Ok(rep)
}
