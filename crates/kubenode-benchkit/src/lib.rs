//! What the core crates' benchmarks share, so each bench times its core the same way the Go
//! peers time upstream: seeded bitmap prefills, warm-up then per-op samples, and one JSON line
//! per scenario in the protocol `npm run bench` reads. A dev-dependency only.

use std::time::Duration;

use kubenode_bitmap::{AllocationBitmap, BitmapError, SplitMix64, Strategy};

/// The Go peers' seed.
pub const SEED: u64 = 20240613;

/// A random-scan bitmap over `slots` slots, seeded with `seed`.
pub fn random_scan(slots: u64, spec: &str, seed: u64) -> Result<AllocationBitmap, BitmapError> {
    AllocationBitmap::with_rng(
        slots,
        spec,
        Strategy::RandomScan { offset: 0 },
        SplitMix64::new(seed),
    )
}

/// A random-scan bitmap with `count` slots taken in the order of a seeded Fisher-Yates
/// shuffle, like the Go peers' `rng.Perm(slots)[:count]`.
pub fn shuffled(
    slots: u64,
    spec: &str,
    count: usize,
    seed: u64,
) -> Result<AllocationBitmap, BitmapError> {
    let mut m = random_scan(slots, spec, seed)?;
    let mut order: Vec<i64> = (0..slots as i64).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    for &i in order.iter().take(count) {
        m.allocate(i)?;
    }
    Ok(m)
}

/// Runs `warmups` untimed samples, then `samples` timed ones, each as nanoseconds per op
/// (`sample` does `ops` ops and returns how long they took).
pub fn per_op(
    warmups: usize,
    samples: usize,
    ops: usize,
    mut sample: impl FnMut() -> Duration,
) -> Vec<f64> {
    for _ in 0..warmups {
        sample();
    }
    (0..samples)
        .map(|_| sample().as_nanos() as f64 / ops as f64)
        .collect()
}

/// Prints one result line of the bench protocol for peer `kubenode-core`: median and
/// quartiles of `per_op`, then `extra` (`,"key":value…`, or empty).
pub fn emit(bench: &str, scenario: &str, mut per_op: Vec<f64>, ops: usize, extra: &str) {
    if per_op.is_empty() {
        return;
    }
    per_op.sort_by(f64::total_cmp);
    let q = |p: f64| per_op[((per_op.len() - 1) as f64 * p).round() as usize];
    println!(
        "{{\"peer\":\"kubenode-core\",\"bench\":\"{bench}\",\"scenario\":\"{scenario}\",\"medianNsPerOp\":{:.3},\"p25NsPerOp\":{:.3},\"p75NsPerOp\":{:.3},\"samples\":{},\"opsPerSample\":{ops}{extra}}}",
        q(0.5),
        q(0.25),
        q(0.75),
        per_op.len()
    );
}
