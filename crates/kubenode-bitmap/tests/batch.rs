//! Batch calls are exactly the sequence of single calls they replace.
use kubenode_bitmap::{AllocationBitmap, SplitMix64, Strategy};
use proptest::prelude::*;

fn map(max: u64, seed: u64) -> AllocationBitmap {
    AllocationBitmap::with_rng(
        max,
        "b",
        Strategy::RandomScan { offset: 0 },
        SplitMix64::new(seed),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn batch_equals_single_calls(max in 0u64..200, seed: u64, n in 0usize..260, rel in proptest::collection::vec(0usize..210, 0..64)) {
        let (mut a, mut b) = (map(max, seed), map(max, seed));
        let mut out = vec![u32::MAX; n];
        let k = a.allocate_next_into(&mut out).unwrap();
        let single: Vec<u32> = (0..n).map_while(|_| b.allocate_next().unwrap().map(|i| i as u32)).collect();
        prop_assert_eq!(&out[..k], &single[..]);
        prop_assert_eq!(k, n.min(max as usize));
        // Slots past what was taken are untouched.
        prop_assert!(out[k..].iter().all(|&s| s == u32::MAX));
        let cleared = a.release_many(rel.iter().copied());
        let single_cleared = rel.iter().filter(|&&i| b.release(i)).count();
        prop_assert_eq!(cleared, single_cleared);
        prop_assert_eq!(a.iter().collect::<Vec<_>>(), b.iter().collect::<Vec<_>>());
        prop_assert_eq!(a.allocate_next_many(n).unwrap(), b.allocate_next_many(n).unwrap());
    }
}

#[test]
fn full_map_reports_exactly_what_was_taken() {
    let mut m = map(10, 1);
    assert_eq!(m.allocate_next_many(7).unwrap().len(), 7);
    let mut out = [0u32; 8];
    assert_eq!(m.allocate_next_into(&mut out).unwrap(), 3);
    assert_eq!(m.free(), 0);
    assert_eq!(m.allocate_next_into(&mut out).unwrap(), 0);
}
