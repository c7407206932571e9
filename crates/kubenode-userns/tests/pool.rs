//! Pools near the top of the 32-bit ID space: every range the manager hands out lies inside
//! the pool and at or above idsPerPod (never wrapped onto host root), and a pool that ends past
//! 2^32 is refused before any range exists.

use std::collections::HashSet;

use kubenode_userns::{Config, ErrorKind, Manager, Options};
use proptest::prelude::*;

const SPACE: u64 = 1 << 32;

/// A pool of `slots` ranges of `k * 65536` IDs whose end is `shift` ranges away from 2^32
/// (negative: inside, positive: past it), with `max_pods` the number of slots, so that every
/// slot, the last one included, gets allocated.
fn pool() -> impl Strategy<Value = (Config, u64)> {
    (1u32..=4, 1u32..=4, -3i64..=3).prop_map(|(k, slots, shift)| {
        let l = u64::from(k) * 65536;
        let end = (SPACE / l) as i64 + shift;
        let first = (end - i64::from(slots)).max(1) as u64 * l;
        let c = Config {
            ids_per_pod: l as u32,
            first_id: first.min(u64::from(u32::MAX)) as u32,
            length: u64::from(slots) as u32 * l as u32,
            max_pods: slots,
        };
        (c, first)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn no_range_wraps_or_reaches_below_ids_per_pod((c, first) in pool(), seed in any::<u64>()) {
        let t = tempfile::tempdir().unwrap();
        let l = u64::from(c.ids_per_pod);
        let end = first + u64::from(c.length);
        let opened = Manager::open(t.path(), c, Options { lock: true, seed: Some(seed) });
        if first > u64::from(u32::MAX) || first % l != 0 {
            // Not representable as this pool; nothing to check.
            return Ok(());
        }
        if end > SPACE {
            let e = opened.expect_err("a pool past 2^32 must be refused");
            prop_assert_eq!(e.kind(), ErrorKind::Config);
            prop_assert!(e.to_string().contains("go past the largest ID 4294967295"), "{}", e);
            return Ok(());
        }
        // A pool ending at 2^32 keeps its last range (with 4294967295) back: one pod fewer.
        let reserved = end == SPACE;
        let mut m = if reserved {
            let e = opened.expect_err("every slot counted although the last one is reserved");
            prop_assert!(e.to_string().contains("the range with ID 4294967295 is never handed out"), "{}", e);
            let c = Config { max_pods: c.max_pods - 1, ..c };
            Manager::open(t.path(), c, Options { lock: true, seed: Some(seed) }).unwrap()
        } else {
            opened.unwrap()
        };
        let usable = c.max_pods - u32::from(reserved);
        let mut seen = HashSet::new();
        for i in 0..usable {
            let ns = m.get_or_create(&format!("pod-{i}")).unwrap();
            let h = u64::from(ns.uid_mappings[0].host_id);
            prop_assert!(h >= l, "host ID {} below idsPerPod {}", h, l);
            prop_assert!(h >= first && h + l <= end, "host ID {} outside [{}, {})", h, first, end);
            prop_assert!(h + l < SPACE, "range {} reaches 4294967295", h);
            prop_assert!(seen.insert(h), "range {} handed out twice", h);
        }
        // Every slot but the reserved one is taken now.
        let e = m.get_or_create("one-more").unwrap_err();
        prop_assert_eq!(e.kind(), ErrorKind::Exhausted);
    }
}

#[test]
fn the_example_pool_is_refused_instead_of_giving_host_root() {
    // 2^32 - 65536 with room for 110 pods: the second slot would start at host ID 0.
    let t = tempfile::tempdir().unwrap();
    let c = Config {
        ids_per_pod: 65536,
        first_id: u32::MAX - 65535,
        length: 65536 * 110,
        max_pods: 110,
    };
    match Manager::open(
        t.path(),
        c,
        Options {
            lock: true,
            seed: Some(39),
        },
    ) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Config);
            assert_eq!(
                e.to_string(),
                "kubelet user assigned IDs from 4294901760 with length 7208960 go past the largest ID 4294967295"
            );
        }
        Ok(mut m) => {
            let ids: Vec<u32> = (0..110)
                .map(|i| m.get_or_create(&format!("pod-{i}")).unwrap().uid_mappings[0].host_id)
                .collect();
            panic!("pool accepted; host IDs handed out: {ids:?}");
        }
    }
}
