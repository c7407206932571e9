//! Which pass is cheaper on this kernel and table: measured, not a fixed threshold. A targeted
//! pass costs one walk of the table per flush or frontend dump (the kernel tests every entry
//! against the filter); a full pass costs one walk plus the fill and parse of every UDP
//! entry. Both are measured per table entry on this handle (a walk by the support probe and
//! by every flush, a full pass by itself) and scaled to the current table size.

/// Seconds per table entry of one walk and of one full pass, as last measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostModel {
    /// (seconds per entry, table size it was measured on)
    walk: Option<(f64, u64)>,
    full: Option<f64>,
}

/// The two estimates a decision compared, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
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
    pub fn record_walk(&mut self, seconds: f64, table: u64) {
        self.walk = Some((per_entry(seconds, table), table));
    }

    pub fn record_full(&mut self, seconds: f64, table: u64) {
        self.full = Some(per_entry(seconds, table));
    }

    /// A walk sample is missing, or was taken on a table of a very different size (the fixed
    /// part of a walk, the hash buckets, then weighs differently).
    pub fn needs_walk_sample(&self, table: u64) -> bool {
        match self.walk {
            None => true,
            Some((_, at)) => table > at.saturating_mul(2) || at > table.saturating_mul(2),
        }
    }

    /// The cost of `walks` walks against one full pass on a table of `table` entries; `None`
    /// until both were measured.
    pub fn estimate(&self, walks: usize, table: u64) -> Option<Estimate> {
        let (walk, _) = self.walk?;
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
        // The 1 M table: a walk 0.4 s, a full pass 1.4 s.
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
    fn a_walk_sample_from_a_table_of_another_size_is_retaken() {
        let mut m = CostModel::default();
        assert!(m.needs_walk_sample(10));
        m.record_walk(0.001, 1000);
        assert!(!m.needs_walk_sample(1500));
        assert!(!m.needs_walk_sample(600));
        assert!(m.needs_walk_sample(2001));
        assert!(m.needs_walk_sample(499));
    }
}
