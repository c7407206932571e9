//! Which pass is cheaper on this kernel and table: measured, not a fixed threshold. A targeted
//! pass costs one walk of the table per filtered dump (the kernel tests every entry against the
//! filter and returns the few that match); a full pass costs one walk plus the fill and parse of
//! every UDP entry. Both are measured per table entry on this handle (a walk by every per-pair
//! dump of a targeted pass, a full pass by itself) and scaled to the current table size. Until a
//! targeted pass has run, the walk is estimated from the full pass's dump, so no request walks
//! the table only to measure it.

#[cfg(feature = "napi")]
use napi_derive::napi;

/// Seconds per table entry of one walk and of one full pass, as last measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostModel {
    /// Measured by a per-pair dump: (seconds per entry, table size it was measured on).
    walk: Option<(f64, u64)>,
    /// Estimated from the last full pass's dump: seconds per entry of a walk.
    walk_from_dump: Option<f64>,
    full: Option<f64>,
}

/// What filling, sending and parsing one entry of a dump costs, in walks of one entry: a dump
/// that returns R of a table's T entries takes `walk × (T + FILL_PER_ENTRY_IN_WALKS × R)`.
/// Measured on this kernel (6.18, 262,144 hash buckets) in a private netns with 200,000
/// DNATed UDP entries (`tests/probe.rs`, `dump_against_walk`, release build, medians of 5,
/// four runs at load 4.6–6.6): a walk matching nothing 64 / 79 / 86 / 80 ms, a UDP dump of
/// every entry through `Conntrack::dump` 498 / 551 / 559 / 567 ms, so 6.8 / 6.0 / 5.5 / 6.1
/// walks. Figures for a 1 M table on a quieter machine (walk 0.39–0.41 s, walk + fill
/// 1.31–1.43 s) give about 2.4: the user-space part of a fill suffers most from load. The
/// first per-pair dump replaces the estimate with a measure either way.
pub const FILL_PER_ENTRY_IN_WALKS: f64 = 6.0;

/// The two estimates a decision compared, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "ConntrackCleanEstimate"))]
pub struct Estimate {
    pub targeted_seconds: f64,
    pub full_seconds: f64,
}

impl Estimate {
    pub fn prefers_targeted(&self) -> bool {
        self.targeted_seconds < self.full_seconds
    }
}

fn per_entry(seconds: f64, table: u64) -> f64 {
    seconds / table.max(1) as f64
}

impl CostModel {
    /// A per-pair dump's time over the table it walked (it returns next to nothing).
    pub fn record_walk(&mut self, seconds: f64, table: u64) {
        self.walk = Some((per_entry(seconds, table), table));
    }

    pub fn record_full(&mut self, seconds: f64, table: u64) {
        self.full = Some(per_entry(seconds, table));
    }

    /// A dump's time over the table it walked and the entries it returned.
    pub fn record_dump(&mut self, seconds: f64, table: u64, returned: u64) {
        let walks = table as f64 + FILL_PER_ENTRY_IN_WALKS * returned as f64;
        self.walk_from_dump = Some(seconds / walks.max(1.0));
    }

    /// Seconds per entry of one walk of a table of `table` entries: a per-pair dump's measure
    /// when it was taken on a table of about that size (on a very different one the fixed part
    /// of a walk, the hash buckets, weighs differently), else the full dump's estimate, else any
    /// per-pair measure.
    pub fn walk_per_entry(&self, table: u64) -> Option<f64> {
        let near = |at: u64| table <= at.saturating_mul(2) && at <= table.saturating_mul(2);
        match self.walk {
            Some((w, at)) if near(at) => Some(w),
            measured => self.walk_from_dump.or(measured.map(|(w, _)| w)),
        }
    }

    /// The cost of `walks` walks against one full pass on a table of `table` entries; `None`
    /// until both were measured.
    pub fn estimate(&self, walks: usize, table: u64) -> Option<Estimate> {
        let walk = self.walk_per_entry(table)?;
        let full = self.full?;
        let n = table.max(1) as f64;
        Some(Estimate {
            targeted_seconds: walks as f64 * walk * n,
            full_seconds: full * n,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_by_measured_costs_not_by_a_threshold() {
        let mut m = CostModel::default();
        assert_eq!(m.estimate(1, 1000), None, "nothing measured yet");
        // A 1 M table: a walk 0.4 s, a full pass 1.4 s.
        m.record_walk(0.4, 1_000_000);
        m.record_full(1.4, 1_000_000);
        let one = m.estimate(1, 1_000_000).unwrap();
        assert!((one.targeted_seconds - 0.4).abs() < 1e-9);
        assert!((one.full_seconds - 1.4).abs() < 1e-9);
        assert!(one.prefers_targeted());
        assert!(m.estimate(3, 1_000_000).unwrap().prefers_targeted());
        assert!(!m.estimate(4, 1_000_000).unwrap().prefers_targeted());
        // A kernel whose walk is cheap relative to a fill moves the break-even point.
        m.record_walk(0.1, 1_000_000);
        assert!(m.estimate(13, 1_000_000).unwrap().prefers_targeted());
        assert!(!m.estimate(14, 1_000_000).unwrap().prefers_targeted());
        // Estimates scale with the table.
        let half = m.estimate(1, 500_000).unwrap();
        assert!((half.full_seconds - 0.7).abs() < 1e-9);
    }

    #[test]
    fn a_walk_on_a_table_of_about_this_size_beats_the_dump_estimate() {
        let mut m = CostModel::default();
        assert_eq!(m.walk_per_entry(1000), None);
        // A full pass's dump: 1.4 s over 1 M entries, all returned.
        m.record_dump(1.4, 1_000_000, 1_000_000);
        let est = m.walk_per_entry(1_000_000).unwrap();
        assert!((est - 1.4 / 7.0 / 1e6).abs() < 1e-15, "{est}");
        // The same dump on a mostly-TCP table returning 5 % of it is mostly walk.
        m.record_dump(0.5, 1_000_000, 50_000);
        let est = m.walk_per_entry(1_000_000).unwrap();
        assert!((est - 0.5 / 1.3 / 1e6).abs() < 1e-15, "{est}");
        // A per-pair measure wins on a table within 2× of the one it walked.
        m.record_walk(0.001, 1000);
        assert_eq!(m.walk_per_entry(1500), Some(1e-6));
        assert_eq!(m.walk_per_entry(600), Some(1e-6));
        assert_eq!(m.walk_per_entry(2001), Some(est));
        assert_eq!(m.walk_per_entry(499), Some(est));
        // Without a full-dump estimate, a per-pair measure of any size is better than nothing.
        let mut f = CostModel::default();
        f.record_walk(0.001, 1000);
        assert_eq!(f.walk_per_entry(1_000_000), Some(1e-6));
    }
}
