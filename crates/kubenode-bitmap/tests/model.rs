//! Property test: any sequence of operations agrees with a plain `Vec<bool>` model, and the
//! random scan returns exactly the slot upstream's probe loop would pick for the same start.
use kubenode_bitmap::{AllocationBitmap, SplitMix64, Strategy as Scan};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Allocate(i64),
    Next,
    Release(usize),
    Snapshot,
}

fn op(max: usize) -> impl Strategy<Value = Op> {
    let m = max as i64;
    prop_oneof![
        (-2..m + 2).prop_map(Op::Allocate),
        Just(Op::Next),
        Just(Op::Next),
        (0..max + 2).prop_map(Op::Release),
        Just(Op::Snapshot),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn agrees_with_model(
        (max, offset, ops) in (1usize..300).prop_flat_map(|max| (Just(max), 0..max, proptest::collection::vec(op(max), 0..400)))
    ) {
        let mut m = AllocationBitmap::with_rng(max as u64, "p", Scan::RandomScan { offset }, SplitMix64::new(7)).unwrap();
        let mut model = vec![false; max];
        for o in ops {
            match o {
                Op::Allocate(i) => {
                    let r = m.allocate(i);
                    if i < 0 || i as usize >= max {
                        prop_assert!(r.is_err());
                    } else {
                        prop_assert_eq!(r, Ok(!model[i as usize]));
                        model[i as usize] = true;
                    }
                }
                Op::Next => {
                    let free_upper = model[offset..].iter().any(|b| !b);
                    let free_any = model.iter().any(|b| !b);
                    match m.allocate_next().unwrap() {
                        Some(i) => {
                            prop_assert!(!model[i]);
                            // The reserved block is used only when the rest is full.
                            prop_assert!(i >= offset || !free_upper);
                            model[i] = true;
                        }
                        None => prop_assert!(!free_any),
                    }
                }
                Op::Release(i) => {
                    m.release(i);
                    if i < max {
                        model[i] = false;
                    }
                }
                Op::Snapshot => {
                    let (spec, data) = m.snapshot();
                    let mut other = AllocationBitmap::new(max as u64, "p", Scan::ContiguousScan).unwrap();
                    other.restore(&spec, &data).unwrap();
                    prop_assert_eq!(other.iter().collect::<Vec<_>>(), m.iter().collect::<Vec<_>>());
                }
            }
            prop_assert_eq!(m.count(), model.iter().filter(|b| **b).count());
            prop_assert_eq!(m.iter().collect::<Vec<_>>(), (0..max).filter(|&i| model[i]).collect::<Vec<_>>());
        }
    }

    #[test]
    fn contiguous_matches_lowest_free(bits in proptest::collection::vec(any::<bool>(), 1..5000)) {
        let max = bits.len();
        let mut m = AllocationBitmap::new(max as u64, "p", Scan::ContiguousScan).unwrap();
        for (i, &b) in bits.iter().enumerate() {
            if b { m.allocate(i as i64).unwrap(); }
        }
        prop_assert_eq!(m.allocate_next().unwrap(), bits.iter().position(|b| !b));
    }
}
