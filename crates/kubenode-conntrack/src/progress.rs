//! Live progress of a cleanup pass, readable from another thread (the CLI's progress bar)
//! while the pass runs.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

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
}
