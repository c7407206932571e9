//! The tables of upstream `pkg/kubelet/userns/userns_manager_test.go` (Kubernetes v1.37.2; the
//! file is the same in v1.36.3), run through the public manager on a real pods directory: where
//! upstream calls the unexported `record`/`allocateOne`, the same state is reached through
//! per-pod files and `get_or_create`, as the kubelet reaches it.

use std::fs;
use std::path::Path;

use kubenode_userns::{json, Config, Manager, Options, UserNamespace};

const TEST_USERNS_LENGTH: u32 = 65536;
const MINIMUM_MAPPING_UID: u32 = TEST_USERNS_LENGTH;
const MAPPING_LEN: u32 = TEST_USERNS_LENGTH * 2000;
const TEST_MAX_PODS: u32 = 110;

/// Upstream's `testUserNsPodsManager`: a zero first ID means the default pool, zero max pods
/// means 110.
fn fake(ids_per_pod: u32, first_id: u32, length: u32, max_pods: u32) -> Config {
    let (first_id, length) = if first_id != 0 {
        (first_id, length)
    } else {
        (MINIMUM_MAPPING_UID, MAPPING_LEN)
    };
    Config {
        ids_per_pod,
        first_id,
        length,
        max_pods: if max_pods != 0 {
            max_pods
        } else {
            TEST_MAX_PODS
        },
    }
}

fn open(dir: &Path, c: Config) -> kubenode_userns::Result<Manager> {
    Manager::open(
        dir,
        c,
        Options {
            lock: true,
            seed: Some(1),
        },
    )
}

fn write_file(dir: &Path, pod: &str, content: &str) {
    fs::create_dir_all(dir.join(pod)).unwrap();
    fs::write(dir.join(pod).join("userns"), content).unwrap();
}

fn is_set(m: &Manager, host_id: u32) -> bool {
    m.allocations().iter().any(|a| a.host_id == host_id)
}

#[test]
fn user_ns_manager_allocate() {
    let custom = 1_048_576u32;
    let cases = [
        (
            "default",
            TEST_USERNS_LENGTH,
            MINIMUM_MAPPING_UID,
            MAPPING_LEN,
        ),
        ("custom", custom, custom, custom * 2000),
    ];
    for (name, len, first, mapping_len) in cases {
        let t = tempfile::tempdir().unwrap();
        let mut m = open(t.path(), fake(len, first, mapping_len, 0)).unwrap();

        let one = m.get_or_create("one").unwrap().uid_mappings[0];
        assert_eq!(one.length, len, "{name}");
        assert!(is_set(&m, one.host_id), "{name}");
        let two = m.get_or_create("two").unwrap().uid_mappings[0];
        assert_ne!(one.host_id, two.host_id, "{name}");
        assert_eq!(one.length, two.length, "{name}");

        // Re-adding the same pod with the same settings does not fail ...
        assert_eq!(m.get_or_create("two").unwrap().uid_mappings[0], two);
        // ... but it does if anything is different.
        write_file(
            t.path(),
            "two",
            &json::encode(&UserNamespace::single(two.host_id + 1, two.length)),
        );
        assert!(m.get_or_create("two").is_err(), "{name}");

        m.release("one");
        m.release("two");
        assert!(!is_set(&m, one.host_id), "{name}");
        assert!(!is_set(&m, two.host_id), "{name}");

        let mut allocs = Vec::new();
        for i in 0..1000 {
            let a = m.get_or_create(&i.to_string()).unwrap().uid_mappings[0];
            assert_eq!(a.length, len, "{name}: iter {i}");
            assert!(a.host_id >= first, "{name}: iter {i}");
            // The last ID of the range is within bounds.
            assert!(a.host_id <= first + mapping_len - len, "{name}: iter {i}");
            allocs.push(a);
        }
        for (i, a) in allocs.iter().enumerate() {
            let pod = i.to_string();
            assert!(is_set(&m, a.host_id), "{name}: {i}");
            m.release(&pod);
            assert!(!is_set(&m, a.host_id), "{name}: {i}");
            // Recorded again from its file (upstream: record), then released.
            write_file(
                t.path(),
                &pod,
                &json::encode(&UserNamespace::single(a.host_id, len)),
            );
            assert_eq!(m.get_or_create(&pod).unwrap().uid_mappings[0], *a);
            m.release(&pod);
            assert!(!is_set(&m, a.host_id), "{name}: {i}");
        }
    }
}

#[test]
fn make_user_ns_manager() {
    // (name, mappingFirstID, mappingLen, maxPods, success)
    let cases = [
        ("default", 0, 0, 0, true),
        ("firstID not multiple", 65536 + 1, 0, 0, false),
        ("firstID is less than 65535", 1, 0, 0, false),
        ("mappingLen not multiple", 65536, 65536 + 1, 0, false),
        ("range can't fit maxPods", 65536, 65536, 2, false),
    ];
    for (name, first, len, max_pods, success) in cases {
        let t = tempfile::tempdir().unwrap();
        let r = open(t.path(), fake(TEST_USERNS_LENGTH, first, len, max_pods));
        assert_eq!(r.is_ok(), success, "{name}: {:?}", r.err());
    }
}

#[test]
fn user_ns_manager_parse_user_ns_file() {
    let cases = [
        (
            "basic",
            r#"{
	                        "uidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ],
	                        "gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]
                               }"#,
            true,
        ),
        (
            "invalid length",
            r#"{
	                        "uidMappings":[ { "hostId":131072, "containerId":0, "length":0 } ],
	                        "gidMappings":[ { "hostId":131072, "containerId":0, "length":0 } ]
                               }"#,
            false,
        ),
        (
            "wrong offset",
            r#"{
	                        "uidMappings":[ {"hostId":131072, "containerId":0, "length":65536 } ],
	                        "gidMappings":[ {"hostId":1, "containerId":0, "length":65536 } ]
                               }"#,
            false,
        ),
        (
            "two GID mappings",
            r#"{
	                        "uidMappings":[ { "hostId":131072, "containerId":0, "length":userNsLength } ],
	                        "gidMappings":[ { "hostId":131072, "containerId":0, "length":userNsLength }, { "hostId":196608, "containerId":0, "length":65536 } ]
                               }"#,
            false,
        ),
        (
            "two UID mappings",
            r#"{
	                        "uidMappings":[ { "hostId":131072, "containerId":0, "length":65536 }, { "hostId":196608, "containerId":0, "length":65536 } ],
	                        "gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]
                               }"#,
            false,
        ),
        (
            "no root UID",
            r#"{
	                        "uidMappings":[ { "hostId":131072, "containerId":1, "length":65536 } ],
	                        "gidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ]
                               }"#,
            false,
        ),
        (
            "no root GID",
            r#"{
	                        "uidMappings":[ { "hostId":131072, "containerId":0, "length":65536 } ],
	                        "gidMappings":[ { "hostId":131072, "containerId":1, "length":65536 } ]
                               }"#,
            false,
        ),
    ];
    // One manager for all cases, as upstream: each file is parsed and recorded under its name.
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), fake(TEST_USERNS_LENGTH, 0, 0, 0)).unwrap();
    for (name, file, success) in cases {
        write_file(t.path(), name, file);
        let r = m.get_or_create(name);
        assert_eq!(r.is_ok(), success, "{name}: {:?}", r.err());
    }
}

#[test]
fn cleanup_orphaned_pod_userns_allocations() {
    struct Case {
        name: &'static str,
        running: &'static [&'static str],
        pods: &'static [&'static str],
        listed: &'static [&'static str],
        set_before: &'static [&'static str],
        set_after: &'static [&'static str],
        unset_after: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "no stale pods",
            running: &[],
            pods: &[],
            listed: &["pod-1", "pod-2"],
            set_before: &[],
            set_after: &[],
            unset_after: &[],
        },
        Case {
            name: "no stale pods set",
            running: &[],
            pods: &[],
            listed: &["pod-1", "pod-2"],
            set_before: &["pod-1", "pod-2"],
            set_after: &[],
            unset_after: &["pod-1", "pod-2"],
        },
        Case {
            name: "one running pod",
            running: &["pod-1"],
            pods: &[],
            listed: &["pod-1", "pod-2"],
            set_before: &["pod-1", "pod-2"],
            set_after: &["pod-1"],
            unset_after: &["pod-2"],
        },
        Case {
            name: "pod set before cleanup but not listed ==> unset",
            running: &["pod-1"],
            pods: &[],
            listed: &[],
            set_before: &["pod-1", "pod-2"],
            set_after: &[],
            unset_after: &["pod-1", "pod-2"],
        },
        Case {
            name: "one pod",
            running: &[],
            pods: &["pod-1"],
            listed: &["pod-1", "pod-2"],
            set_before: &["pod-1", "pod-2"],
            set_after: &["pod-1"],
            unset_after: &["pod-2"],
        },
        Case {
            name: "no listed pods ==> all unset",
            running: &[],
            pods: &[],
            listed: &[],
            set_before: &["pod-1", "pod-2"],
            set_after: &[],
            unset_after: &["pod-1", "pod-2"],
        },
    ];
    for c in cases {
        let t = tempfile::tempdir().unwrap();
        let mut m = open(t.path(), fake(TEST_USERNS_LENGTH, 0, 0, 0)).unwrap();
        // Recorded at (i+1)*65536, as upstream's `record` call.
        for (i, pod) in c.set_before.iter().enumerate() {
            let host = (i as u32 + 1) * 65536;
            write_file(
                t.path(),
                pod,
                &json::encode(&UserNamespace::single(host, 65536)),
            );
            assert_eq!(
                m.get_or_create(pod).unwrap().uid_mappings[0].host_id,
                host,
                "{}",
                c.name
            );
        }
        // The pods directory lists exactly `listed` (upstream's fake ListPodsFromDisk).
        for pod in c.set_before {
            if !c.listed.contains(pod) {
                fs::remove_dir_all(t.path().join(pod)).unwrap();
            }
        }
        for pod in c.listed {
            fs::create_dir_all(t.path().join(pod)).unwrap();
        }
        m.cleanup_orphans(c.pods, c.running).unwrap();
        for pod in c.set_after {
            assert!(
                m.allocated(pod).is_some(),
                "{}: {pod} should be allocated",
                c.name
            );
        }
        for pod in c.unset_after {
            assert!(
                m.allocated(pod).is_none(),
                "{}: {pod} should not be allocated",
                c.name
            );
        }
    }
}

#[test]
fn make_user_ns_manager_fails_list_pod() {
    // Upstream's fake fails ListPodsFromDisk with a permission error; as root, a pods
    // "directory" that is a file makes the listing fail the same way.
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("pods");
    fs::write(&file, "").unwrap();
    let e = open(&file, fake(TEST_USERNS_LENGTH, 0, 0, 0)).unwrap_err();
    assert!(e.to_string().contains("read pods from disk"), "{e}");
}

#[test]
fn record_bounds() {
    // Room for exactly one pod.
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), fake(TEST_USERNS_LENGTH, 65536, 65536, 1)).unwrap();
    write_file(
        t.path(),
        "0",
        &json::encode(&UserNamespace::single(65536, 65536)),
    );
    m.get_or_create("0").unwrap();
    write_file(
        t.path(),
        "2",
        &json::encode(&UserNamespace::single(2 * 65536, 65536)),
    );
    let e = m.get_or_create("2").unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
}
