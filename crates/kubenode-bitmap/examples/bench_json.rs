//! Times the core the way the Go peer `bitmap-bench` times upstream (same scenarios, same
//! prefill, same JSON line protocol), so `npm run bench` can compare core against core.
//!   cargo run --release -p kubenode-bitmap --example bench_json -- [iters] [samples]
use kubenode_bitmap::{AllocationBitmap, SplitMix64, Strategy};
use std::hint::black_box;
use std::time::Instant;

const SLOTS: u64 = 65_536;

fn prefill(count: usize) -> AllocationBitmap {
    let mut m = AllocationBitmap::with_rng(
        SLOTS,
        "user namespaces",
        Strategy::RandomScan { offset: 0 },
        SplitMix64::new(20240613),
    )
    .expect("valid size");
    // A seeded Fisher-Yates prefix, like the Go peer's rng.Perm(size)[:count].
    let mut slots: Vec<i64> = (0..SLOTS as i64).collect();
    let mut rng = SplitMix64::new(20240613);
    for i in (1..slots.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        slots.swap(i, j);
    }
    for &i in &slots[..count] {
        let _ = m.allocate(i);
    }
    m
}

fn cycle(m: &mut AllocationBitmap, n: usize) {
    for _ in 0..n {
        if let Some(i) = m.allocate_next().unwrap() {
            m.release(black_box(i));
        }
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let iters = args.first().copied().unwrap_or(200_000);
    let samples = args.get(1).copied().unwrap_or(15);
    for (scenario, filled) in [
        ("alloc-release-99full", SLOTS as usize * 99 / 100),
        ("alloc-release-empty", 0),
    ] {
        let mut m = prefill(filled);
        cycle(&mut m, iters);
        let mut per_op: Vec<f64> = (0..samples)
            .map(|_| {
                let t = Instant::now();
                cycle(&mut m, iters);
                t.elapsed().as_nanos() as f64 / iters as f64
            })
            .collect();
        per_op.sort_by(f64::total_cmp);
        let q = |p: f64| per_op[((per_op.len() - 1) as f64 * p).round() as usize];
        println!(
            "{{\"peer\":\"kubenode-core\",\"bench\":\"bitmap\",\"scenario\":\"{scenario}\",\"medianNsPerOp\":{:.3},\"p25NsPerOp\":{:.3},\"p75NsPerOp\":{:.3},\"samples\":{samples},\"opsPerSample\":{iters}}}",
            q(0.5),
            q(0.25),
            q(0.75)
        );
    }
}
