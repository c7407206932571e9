//! The cases of upstream `pkg/registry/core/service/allocator/bitmap_test.go` (Kubernetes
//! v1.37.2; the file and the allocator are the same in v1.36.3), over the same max/offset
//! configurations, plus the edge cases the spec names.
use kubenode_bitmap::{AllocationBitmap, BitmapError, SplitMix64, Strategy};
use std::collections::HashSet;

/// Upstream's table (`max`, `reserved`), then sizes the spec adds.
const CONFIGS: [(u64, usize); 9] = [
    (32, 0),
    (8, 0),
    (128, 16),
    (1024, 64),
    (65_535, 256),
    (256, 0),
    (1024, 0),
    (65_536, 0),
    (1024, 50),
];

fn map(max: u64, offset: usize) -> AllocationBitmap {
    AllocationBitmap::with_rng(
        max,
        "test",
        Strategy::RandomScan { offset },
        SplitMix64::new(max ^ offset as u64),
    )
    .expect("valid configuration")
}

#[test]
fn allocate_next_until_full() {
    for (max, offset) in CONFIGS {
        let mut m = map(max, offset);
        let mut seen = HashSet::new();
        for _ in 0..max {
            let i = m.allocate_next().unwrap().expect("a free slot");
            assert!(i < max as usize);
            assert!(seen.insert(i), "slot {i} handed out twice");
        }
        assert_eq!(m.free(), 0);
        assert_eq!(
            m.allocate_next().unwrap(),
            None,
            "full map hands out nothing"
        );
        let first = *seen.iter().next().expect("non-empty");
        assert!(m.release(first));
        assert_eq!(m.free(), 1);
        assert_eq!(
            m.allocate_next().unwrap(),
            Some(first),
            "the only free slot comes back"
        );
    }
}

#[test]
fn allocate_max_then_next_fails() {
    for (max, offset) in CONFIGS {
        let mut m = map(max, offset);
        for i in 0..max as i64 {
            assert_eq!(m.allocate(i), Ok(true));
        }
        assert_eq!(m.allocate_next().unwrap(), None);
        assert_eq!(m.free(), 0);
        assert_eq!(m.count(), max as usize);
    }
}

#[test]
fn allocate_error_and_bounds() {
    for (max, offset) in CONFIGS {
        let mut m = map(max, offset);
        assert_eq!(m.allocate(1), Ok(true));
        assert_eq!(m.allocate(1), Ok(false), "second allocate of a taken slot");
        let err = m.allocate(max as i64).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("offset {max} out of range [0,{max}]")
        );
        let err = m.allocate(-1).unwrap_err();
        assert_eq!(err, BitmapError::OutOfRange { offset: -1, max });
        assert_eq!(err.to_string(), format!("offset -1 out of range [0,{max}]"));
    }
}

#[test]
fn release_semantics() {
    for (max, offset) in CONFIGS {
        let mut m = map(max, offset);
        assert!(!m.release(5), "release of a free slot is a no-op");
        assert!(!m.release(max as usize + 10), "release past max is a no-op");
        assert_eq!(m.free(), max as i64);
        m.allocate(5).expect("in range");
        assert!(m.has(5));
        assert!(m.release(5));
        assert!(!m.has(5));
        assert_eq!(m.free(), max as i64);
    }
}

#[test]
fn for_each_visits_in_order() {
    for (max, offset) in CONFIGS {
        for subset in [
            vec![],
            vec![0],
            vec![0, 2, 5],
            vec![0, 1, 2, 3, 4, 5, 6, 7],
            vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 31],
        ] {
            if subset.iter().any(|&i| i as u64 >= max) {
                continue;
            }
            let mut m = map(max, offset);
            for &i in &subset {
                m.allocate(i).expect("in range");
            }
            let got: Vec<usize> = m.iter().collect();
            let want: Vec<usize> = subset.iter().map(|&i| i as usize).collect();
            assert_eq!(got, want);
        }
    }
}

#[test]
fn snapshot_and_restore() {
    for (max, offset) in CONFIGS {
        let mut m = map(max, offset);
        let mut taken = Vec::new();
        for _ in 0..max / 2 {
            taken.push(m.allocate_next().unwrap().expect("free"));
        }
        taken.sort_unstable();
        let (spec, data) = m.snapshot();
        assert_eq!(spec, "test");
        let mut other = map(max, offset);
        other.restore(&spec, &data).expect("same range");
        assert_eq!(other.iter().collect::<Vec<_>>(), taken);
        assert_eq!(other.free(), m.free());
        assert_eq!(other.snapshot(), (spec, data));
    }
}

#[test]
fn snapshot_bytes_match_big_int() {
    let mut m = map(32, 0);
    assert_eq!(
        m.snapshot().1,
        Vec::<u8>::new(),
        "nothing set -> empty bytes"
    );
    m.allocate(3).expect("in range");
    assert_eq!(m.snapshot().1, vec![0x08]);
    m.release(3);
    m.allocate(0).expect("in range");
    m.allocate(9).expect("in range");
    assert_eq!(m.snapshot().1, vec![0x02, 0x01]);
}

#[test]
fn restore_with_a_different_range_fails() {
    let mut m = map(32, 0);
    let err = m.restore("other", &[1]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the provided range does not match the current range"
    );
    assert_eq!(m.count(), 0, "failed restore leaves the state alone");
}

#[test]
fn restore_counts_bits_past_max_like_upstream() {
    // max 10 -> 2 bytes hold bits 0..15; bits 10..15 are past max but upstream keeps them.
    let mut m = map(10, 0);
    m.restore("test", &[0b1000_0100, 0b0000_0001])
        .expect("fits in two bytes");
    assert_eq!(m.count(), 3);
    assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 10, 15]);
    assert!(m.has(15));
    assert_eq!(m.free(), 7);
    assert_eq!(m.snapshot().1, vec![0b1000_0100, 0b0000_0001]);
    assert!(m.release(15));
    assert_eq!(m.count(), 2);
}

#[test]
fn restore_rejects_snapshots_longer_than_the_map() {
    let mut m = map(16, 0);
    let err = m.restore("test", &[1, 0, 0]).unwrap_err();
    assert!(matches!(
        err,
        BitmapError::SnapshotTooLong {
            got: 3,
            max: 16,
            limit: 2
        }
    ));
    // Leading zero bytes carry no bits and are accepted.
    m.restore("test", &[0, 0, 0, 1])
        .expect("only one significant byte");
    assert_eq!(m.iter().collect::<Vec<_>>(), vec![0]);
}

#[test]
fn offset_block_is_used_last() {
    // Upstream TestAllocateMax_BitmapReserved / TestPreAllocateReservedFull_BitmapReserved.
    let (max, offset) = (128u64, 16usize);
    let mut m = map(max, offset);
    for _ in 0..(max as usize - offset) {
        let i = m.allocate_next().unwrap().expect("free");
        assert!(
            i >= offset,
            "slot {i} from the reserved block before the rest was full"
        );
    }
    for _ in 0..offset {
        let i = m.allocate_next().unwrap().expect("free");
        assert!(i < offset);
    }
    assert_eq!(m.allocate_next().unwrap(), None);

    let mut m = map(max, offset);
    for i in 0..offset as i64 {
        m.allocate(i).expect("in range");
    }
    for _ in 0..(max as usize - offset) {
        assert!(m.allocate_next().unwrap().is_some());
    }
    assert_eq!(m.allocate_next().unwrap(), None);
}

#[test]
fn allocate_uniqueness() {
    let mut m = map(65_536, 0);
    let mut seen = HashSet::new();
    while let Some(i) = m.allocate_next().unwrap() {
        assert!(seen.insert(i));
    }
    assert_eq!(seen.len(), 65_536);
}

#[test]
fn contiguous_scan_hands_out_lowest_first() {
    // Upstream's legacy TestContiguousAllocation: 0, 1, …, 9, then none.
    let mut m = AllocationBitmap::new(10, "test", Strategy::ContiguousScan).expect("valid");
    for want in 0..10 {
        assert_eq!(m.allocate_next().unwrap(), Some(want));
    }
    assert_eq!(m.allocate_next().unwrap(), None);
    m.release(4);
    m.release(7);
    assert_eq!(m.allocate_next().unwrap(), Some(4));
    assert_eq!(m.allocate_next().unwrap(), Some(7));
}

#[test]
fn empty_and_invalid_configurations() {
    let mut m = map(0, 0);
    assert_eq!(m.allocate_next().unwrap(), None);
    assert!(m.allocate(0).is_err());
    assert_eq!(m.free(), 0);
    assert!(matches!(
        AllocationBitmap::new((1 << 32) + 1, "x", Strategy::ContiguousScan),
        Err(BitmapError::TooLarge { .. })
    ));
}

#[test]
fn seeded_sequences_are_reproducible() {
    let run = || {
        let mut m = map(1024, 0);
        (0..100)
            .filter_map(|_| m.allocate_next().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

/// Upstream `TestSnapshotAndRestore`, both cases: `NewAllocationMapWithOffset(10, "test", 0)`
/// and `(10, "test", 16)`, an offset past the size, which upstream accepts.
#[test]
fn snapshot_and_restore_with_offset() {
    for reserved in [0usize, 16] {
        let offset = 3;
        let mut m = map(10, reserved);
        assert_eq!(m.allocate(offset), Ok(true));
        let (spec, bytes) = m.snapshot();
        let mut m2 = map(10, reserved);
        m2.restore(&spec, &bytes).expect("restore");
        assert_eq!(m2.count(), 1, "reserved {reserved}");
        assert!(m2.has(offset as usize), "reserved {reserved}");
    }
}

/// Where upstream's random scan would panic (offset not below the size, map not full), the
/// core reports `InvalidOffset`; a full map is full first, as upstream checks that before.
#[test]
fn allocate_next_with_offset_past_size_is_an_error() {
    for (max, offset) in [(10u64, 16usize), (10, 10)] {
        let mut m = map(max, offset);
        assert_eq!(
            m.allocate_next(),
            Err(BitmapError::InvalidOffset {
                offset: offset as u64,
                max
            })
        );
        assert_eq!(m.count(), 0, "nothing taken");
        for i in 0..max as i64 {
            assert_eq!(m.allocate(i), Ok(true));
        }
        assert_eq!(m.allocate_next(), Ok(None));
    }
}
