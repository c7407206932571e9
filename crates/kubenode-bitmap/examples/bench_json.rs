//! Times the core the way the Go peer `bitmap-bench` times upstream (same scenarios, same
//! prefill, same JSON line protocol), so `npm run bench` can compare core against core.
//!   cargo run --release -p kubenode-bitmap --example bench_json -- [iters] [samples]
use kubenode_benchkit::{emit, per_op, shuffled, SEED};
use kubenode_bitmap::AllocationBitmap;
use std::hint::black_box;
use std::time::Instant;

const SLOTS: u64 = 65_536;

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
        let mut m = shuffled(SLOTS, "user namespaces", filled, SEED).expect("valid size");
        let samples = per_op(1, samples, iters, || {
            let t = Instant::now();
            cycle(&mut m, iters);
            t.elapsed()
        });
        emit("bitmap", scenario, samples, iters, "");
    }
}
