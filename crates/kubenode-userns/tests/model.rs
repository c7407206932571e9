//! Property test: random sequences of create / release / cleanup / restart against a simple
//! model (pod → range). Ranges never overlap, every answer agrees with the model, and the
//! files on disk always say what the model says.

use std::collections::{BTreeMap, BTreeSet};

use kubenode_userns::{Config, ErrorKind, Manager, Options};
use proptest::prelude::*;

const L: u32 = 65536;
const SLOTS: u32 = 6;

#[derive(Debug, Clone)]
enum Op {
    Create(u8),
    Release(u8),
    /// Cleanup keeping the pods whose bit is set.
    Cleanup(u16),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..10).prop_map(Op::Create),
        3 => (0u8..10).prop_map(Op::Release),
        1 => any::<u16>().prop_map(Op::Cleanup),
        1 => Just(Op::Restart),
    ]
}

fn pod(i: u8) -> String {
    format!("pod-{i}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn agrees_with_model(ops in proptest::collection::vec(op(), 1..60), seed in any::<u64>()) {
        let t = tempfile::tempdir().unwrap();
        let cfg = Config { ids_per_pod: L, first_id: 2 * L, length: SLOTS * L, max_pods: SLOTS };
        let open = || Manager::open(t.path(), cfg, Options { lock: true, seed: Some(seed) }).unwrap();
        let mut m = open();
        let mut model: BTreeMap<String, u32> = BTreeMap::new();
        // Pods whose directory exists (getOrCreate creates it, nothing here removes it).
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        for op in ops {
            match op {
                Op::Create(i) => {
                    let p = pod(i);
                    dirs.insert(p.clone());
                    match m.get_or_create(&p) {
                        Ok(ns) => {
                            let id = ns.uid_mappings[0].host_id;
                            prop_assert_eq!(ns.gid_mappings[0].host_id, id);
                            match model.get(&p) {
                                Some(&prev) => prop_assert_eq!(prev, id),
                                None => {
                                    prop_assert!(!model.values().any(|&v| v == id), "overlap {}", id);
                                    prop_assert!((2 * L..(2 + SLOTS) * L).contains(&id) && id.is_multiple_of(L));
                                    model.insert(p, id);
                                }
                            }
                        }
                        Err(e) => {
                            prop_assert_eq!(e.kind(), ErrorKind::Exhausted);
                            prop_assert!(!model.contains_key(&p));
                            prop_assert_eq!(model.len(), SLOTS as usize);
                        }
                    }
                }
                Op::Release(i) => {
                    m.release(&pod(i));
                    model.remove(&pod(i));
                }
                Op::Cleanup(mask) => {
                    let keep: Vec<String> = (0..10u8).filter(|i| mask & (1 << i) != 0).map(pod).collect();
                    m.cleanup_orphans(&keep, &[]).unwrap();
                    model.retain(|p, _| keep.contains(p) && dirs.contains(p));
                }
                Op::Restart => {
                    drop(m);
                    m = open();
                }
            }
            let got: BTreeMap<String, u32> = m.allocations().into_iter().map(|a| (a.pod.into_string().unwrap(), a.host_id)).collect();
            prop_assert_eq!(&got, &model);
            prop_assert_eq!(m.used_slots(), model.len());
            for i in 0..10u8 {
                let f = t.path().join(pod(i)).join("userns");
                match model.get(&pod(i)) {
                    Some(&id) => {
                        let want = kubenode_userns::json::encode(&kubenode_userns::UserNamespace::single(id, L));
                        prop_assert_eq!(std::fs::read_to_string(&f).unwrap(), want);
                    }
                    None => prop_assert!(!f.exists()),
                }
            }
        }
    }
}
