//! The range that holds ID 4294967295 (the last of a pool ending at 2^32) is never handed out:
//! the kernel refuses any map extent that reaches `(uid_t)-1`, so a pod given it never starts.
//! Upstream hands it out (kubernetes/kubernetes#139916).

use std::fs;
use std::path::Path;

use kubenode_userns::{json, verify_mapping, Config, ErrorKind, Manager, Options, UserNamespace};

const L: u32 = 65536;
const TOP: u64 = 1 << 32;

fn open(dir: &Path, c: Config) -> kubenode_userns::Result<Manager> {
    Manager::open(
        dir,
        c,
        Options {
            lock: true,
            seed: Some(11),
        },
    )
}

/// The last three ranges below 2^32.
fn top_pool(max_pods: u32) -> Config {
    Config {
        ids_per_pod: L,
        first_id: (TOP - 3 * u64::from(L)) as u32,
        length: 3 * L,
        max_pods,
    }
}

#[test]
fn the_last_range_is_never_handed_out_and_the_others_map_in_the_kernel() {
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), top_pool(2)).unwrap();
    assert_eq!(m.used_slots(), 0);
    let mut got = Vec::new();
    for pod in ["a", "b"] {
        let ns = m.get_or_create(pod).unwrap();
        got.push(ns.uid_mappings[0].host_id);
    }
    got.sort_unstable();
    assert_eq!(got, [4294770688, 4294836224]);
    let e = m.get_or_create("c").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Exhausted);
    assert_eq!(
        e.to_string(),
        "create user namespace: could not find an empty slot to allocate a user namespace"
    );
    assert!(!t.path().join("c").join("userns").exists());
    assert_eq!(m.used_slots(), 2);
    // What was handed out works in the kernel (the reserved range does not: tests/verify.rs).
    for host in got {
        assert!(verify_mapping(host, L).unwrap().ok);
    }
    // Released and taken again, the reserved slot still stays out.
    m.release("a");
    m.release("b");
    for pod in ["x", "y"] {
        let h = m.get_or_create(pod).unwrap().uid_mappings[0].host_id;
        assert!(u64::from(h) + u64::from(L) < TOP, "{h}");
    }
}

#[test]
fn a_pool_counts_the_reserved_range_out_of_max_pods() {
    let t = tempfile::tempdir().unwrap();
    let e = open(t.path(), top_pool(3)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert_eq!(
        e.to_string(),
        "kubelet user assigned IDs are not enough to support 3 pods: the range with ID 4294967295 is never handed out"
    );
}

#[test]
fn a_file_that_claims_the_reserved_range_is_refused_as_out_of_range() {
    let t = tempfile::tempdir().unwrap();
    let last = (TOP - u64::from(L)) as u32;
    fs::create_dir_all(t.path().join("old")).unwrap();
    fs::write(
        t.path().join("old").join("userns"),
        json::encode(&UserNamespace::single(last, L)),
    )
    .unwrap();
    let want =
        "id 4294901760 is out of range: its range holds ID 4294967295, which the kernel cannot map";
    // At restore, like any other invalid file: the manager does not start.
    let e = open(t.path(), top_pool(2)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(
        e.to_string(),
        format!("record pod mappings for existing pod \"old\": {want}")
    );
    // Asked for by the pod itself on a running manager: the pod gets the error.
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), top_pool(2)).unwrap();
    fs::create_dir_all(t.path().join("late")).unwrap();
    fs::write(
        t.path().join("late").join("userns"),
        json::encode(&UserNamespace::single(last, L)),
    )
    .unwrap();
    let e = m.get_or_create("late").unwrap_err();
    assert_eq!(e.to_string(), format!("user namespace: {want}"));
    assert_eq!(m.used_slots(), 0);
}
