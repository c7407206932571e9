//! Criterion benchmarks of the core: allocate_next + release on a 65,536-slot map, empty and
//! 99 % full (the userns manager's worst case).
use criterion::{criterion_group, criterion_main, Criterion};
use kubenode_benchkit::random_scan;
use kubenode_bitmap::AllocationBitmap;
use std::hint::black_box;

const SLOTS: u64 = 65_536;

fn filled(fraction: f64) -> AllocationBitmap {
    let mut map = random_scan(SLOTS, "bench", 1).expect("valid size");
    let target = (SLOTS as f64 * fraction) as usize;
    while map.count() < target {
        map.allocate_next().unwrap();
    }
    map
}

fn cycle(c: &mut Criterion) {
    for (name, fraction) in [("empty", 0.0), ("99-full", 0.99)] {
        let mut map = filled(fraction);
        c.bench_function(&format!("allocate_next+release/{name}"), |b| {
            b.iter(|| {
                let i = map.allocate_next().unwrap().expect("a free slot");
                map.release(black_box(i));
            })
        });
    }
}

criterion_group!(benches, cycle);
criterion_main!(benches);
