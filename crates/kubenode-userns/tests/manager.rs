//! Manager behaviour on a real filesystem, case by case against upstream's rules and texts.

use std::fs;
use std::path::Path;

use kubenode_userns::{fsio, Config, ErrorKind, Manager, Options};

const L: u32 = 65536;

fn cfg(first_id: u32, length: u32, max_pods: u32) -> Config {
    Config {
        ids_per_pod: L,
        first_id,
        length,
        max_pods,
    }
}

/// Upstream's test fake: pool (65536, 65536*2000), maxPods 110.
fn test_cfg() -> Config {
    cfg(L, L * 2000, 110)
}

fn open(dir: &Path, c: Config) -> kubenode_userns::Result<Manager> {
    Manager::open(
        dir,
        c,
        Options {
            lock: true,
            seed: Some(7),
        },
    )
}

fn put(dir: &Path, pod: &str, content: &str) {
    fs::create_dir_all(dir.join(pod)).unwrap();
    fs::write(dir.join(pod).join("userns"), content).unwrap();
}

fn file(host: u32, len: u32) -> String {
    format!(
        r#"{{"uidMappings":[{{"hostId":{host},"containerId":0,"length":{len}}}],"gidMappings":[{{"hostId":{host},"containerId":0,"length":{len}}}]}}"#
    )
}

#[test]
fn configuration_checks_in_upstream_order() {
    let t = tempfile::tempdir().unwrap();
    let err = |c: Config| open(t.path(), c).unwrap_err().to_string();
    let c = |l: u32, s: u32, n: u32, p: u32| Config {
        ids_per_pod: l,
        first_id: s,
        length: n,
        max_pods: p,
    };
    assert_eq!(
        err(c(65537, 1, 1, 1)),
        "kubelet user namespace length 65537 is not a multiple of 65536"
    );
    assert_eq!(
        err(c(L, 65537, 1, 1)),
        "kubelet user assigned ID 65537 is not a multiple of 65536"
    );
    assert_eq!(
        err(c(L, 0, 1, 1)),
        "kubelet user assigned ID 0 must be greater or equal to 65536"
    );
    assert_eq!(
        err(c(L, L, L + 1, 1)),
        "kubelet user assigned IDs length 65537 is not a multiple of 65536"
    );
    assert_eq!(
        err(c(L, L, L, 2)),
        "kubelet user assigned IDs are not enough to support 2 pods"
    );
    assert_eq!(
        err(c(2 * L, 2 * L, 3 * L, 110)),
        "kubelet user assigned IDs length 196608 is not a multiple of 131072"
    );
    // Default pool with idsPerPod = 3*65536 fails at the length check, as upstream.
    let (s, n) = kubenode_userns::config::default_pool(3 * L);
    assert_eq!(
        err(c(3 * L, s, n, 110)),
        "kubelet user assigned IDs length 4294770688 is not a multiple of 196608"
    );
    // 67108864 per pod: 63 slots < 110.
    let (s, n) = kubenode_userns::config::default_pool(67108864);
    assert_eq!(
        err(c(67108864, s, n, 110)),
        "kubelet user assigned IDs are not enough to support 110 pods"
    );
    assert!(open(t.path(), c(L, L, L, 1)).is_ok());
    let e = kubenode_userns::config::validate_ids_per_pod(65535).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid configuration: userNamespaces.idsPerPod must not be less than 65536"
    );
    let e = kubenode_userns::config::validate_ids_per_pod(65536 * 3 + 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid configuration: userNamespaces.idsPerPod must be a multiple of 65536"
    );
    let e = kubenode_userns::config::validate_ids_per_pod(1 << 32).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid configuration: userNamespaces.idsPerPod must not be more than 4294967295"
    );
}

#[test]
fn allocates_writes_upstream_bytes_and_reuses() {
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), test_cfg()).unwrap();
    let ns = m.get_or_create("pod-a").unwrap();
    let id = ns.uid_mappings[0].host_id;
    assert!(
        (L..=L + L * 1999).contains(&id) && id.is_multiple_of(L),
        "{id}"
    );
    let bytes = fs::read_to_string(t.path().join("pod-a/userns")).unwrap();
    assert_eq!(bytes, file(id, L));
    // Same pod again: same range, nothing new.
    assert_eq!(m.get_or_create("pod-a").unwrap(), ns);
    assert_eq!(m.used_slots(), 1);
    // File and directory modes match the kubelet's FileStore (0600 temp file, 0755 dir).
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(t.path().join("pod-a/userns"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_eq!(
        fs::metadata(t.path().join("pod-a"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
}

#[test]
fn loads_kubelet_files_and_restores() {
    let t = tempfile::tempdir().unwrap();
    // Upstream's "basic" test file, with its whitespace.
    put(
        t.path(),
        "pod-k",
        "{\n \"uidMappings\":[ { \"hostId\":131072, \"containerId\":0, \"length\":65536 } ],\n \"gidMappings\":[ { \"hostId\":131072, \"containerId\":0, \"length\":65536 } ]\n }",
    );
    put(t.path(), "pod-j", &file(5 * L, L));
    fs::create_dir(t.path().join("no-userns")).unwrap();
    put(t.path(), "empty", "");
    let mut m = open(t.path(), test_cfg()).unwrap();
    assert_eq!(m.restore_stats().restored, 2);
    assert_eq!(m.allocated("pod-k"), Some(131072));
    assert_eq!(
        m.get_or_create("pod-k").unwrap().uid_mappings[0].host_id,
        131072
    );
    // An empty file means no allocation yet: a new one is made.
    let e = m.get_or_create("empty").unwrap().uid_mappings[0].host_id;
    assert_ne!(e, 131072);
    assert_ne!(e, 5 * L);
}

#[test]
fn restore_failures_name_the_pod() {
    let cases: &[(&str, String, &str)] = &[
        ("wrong length", file(2 * L, 2 * L), "wrong user namespace length 131072"),
        ("out of range", file(L * 3000, L), "id 196608000 is out of range"),
        ("truncated", file(2 * L, L)[..40].to_string(), "invalid user namespace mappings file: unexpected end of JSON input"),
        (
            "wrong type",
            r#"{"uidMappings":[{"hostId":"1"}]}"#.into(),
            "invalid user namespace mappings file: json: cannot unmarshal string into Go struct field idMapping.uidMappings.hostId of type uint32",
        ),
        ("no mapping", "{}".into(), "invalid user namespace configuration: no more than one mapping allowed."),
        ("null", "null".into(), "invalid user namespace configuration: no more than one mapping allowed."),
        (
            "two gids",
            r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536},{"hostId":196608,"containerId":0,"length":65536}]}"#.to_string(),
            "invalid user namespace configuration: GID and UID mappings should be identical.",
        ),
        (
            "uid != gid",
            r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":1,"containerId":0,"length":65536}]}"#.into(),
            "invalid user namespace configuration: GID and UID mapping should be identical",
        ),
        (
            "container id",
            r#"{"uidMappings":[{"hostId":131072,"containerId":1,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":1,"length":65536}]}"#.into(),
            "invalid user namespace configuration: UID 0 must be mapped",
        ),
        (
            "offset",
            r#"{"uidMappings":[{"hostId":131073,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131073,"containerId":0,"length":65536}]}"#.into(),
            "wrong user namespace offset specified 131073",
        ),
    ];
    for (name, content, want) in cases {
        let t = tempfile::tempdir().unwrap();
        put(t.path(), "p1", content);
        let e = open(t.path(), test_cfg()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("record pod mappings for existing pod \"p1\": {want}"),
            "{name}"
        );
        // The same file met by getOrCreate on a running manager.
        let t2 = tempfile::tempdir().unwrap();
        let mut m = open(t2.path(), test_cfg()).unwrap();
        put(t2.path(), "p1", content);
        assert_eq!(
            m.get_or_create("p1").unwrap_err().to_string(),
            format!("user namespace: {want}"),
            "{name}"
        );
        assert_eq!(
            fs::read_to_string(t2.path().join("p1/userns")).unwrap(),
            *content,
            "file kept"
        );
    }
}

#[test]
fn overlapping_files_refuse_start() {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "a", &file(3 * L, L));
    put(t.path(), "b", &file(3 * L, L));
    let e = open(t.path(), test_cfg()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(
        e.to_string(),
        "record pod mappings for existing pod \"b\": range picked for pod \"b\" already taken"
    );
}

#[test]
fn list_errors_and_missing_dir() {
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("file");
    fs::write(&f, "x").unwrap();
    let e = open(&f, test_cfg()).unwrap_err();
    assert!(e.to_string().contains("is not a directory"), "{e}");
    // A missing pods directory is refused and not created (nor is a lock file left).
    let e = open(&t.path().join("pods"), test_cfg()).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert!(!t.path().join("pods").exists());
    assert!(open(&t.path().join("x/y/pods"), test_cfg()).is_err());
    assert!(!t.path().join("x").exists());
    // A `userns` that is a directory: unreadable.
    let t = tempfile::tempdir().unwrap();
    fs::create_dir_all(t.path().join("p/userns")).unwrap();
    let e = open(t.path(), test_cfg()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "record pod mappings for existing pod \"p\": read {}/p/userns: is a directory",
            t.path().display()
        )
    );
}

#[test]
fn release_and_cleanup_follow_upstream() {
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), test_cfg()).unwrap();
    for p in ["pod-1", "pod-2", "pod-3"] {
        m.get_or_create(p).unwrap();
    }
    m.release("pod-1");
    assert!(!t.path().join("pod-1/userns").exists());
    assert!(
        t.path().join("pod-1").is_dir(),
        "the pod directory is the kubelet's"
    );
    m.release("pod-1"); // twice: no-op
                        // Unknown pod: no-op, its file is left alone.
    put(t.path(), "stranger", &file(9 * L, L));
    m.release("stranger");
    assert!(t.path().join("stranger/userns").exists());
    assert_eq!(m.used_slots(), 2);

    // "one running pod": pod-2 running, pod-3 unknown → released; "stranger" unknown too.
    m.cleanup_orphans(&[] as &[&str], &["pod-2"]).unwrap();
    assert_eq!(
        m.allocations()
            .iter()
            .map(|a| a.pod.to_str().unwrap())
            .collect::<Vec<_>>(),
        ["pod-2"]
    );
    // "set before cleanup but not listed ⇒ unset", even when running.
    fs::remove_dir_all(t.path().join("pod-2")).unwrap();
    m.cleanup_orphans(&["pod-2"], &["pod-2"]).unwrap();
    assert!(m.allocations().is_empty());
    assert_eq!(m.used_slots(), 0);
}

#[test]
fn exhaustion_then_release_makes_room() {
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), cfg(L, 3 * L, 3)).unwrap();
    let ids: Vec<u32> = ["a", "b", "c"]
        .iter()
        .map(|p| m.get_or_create(p).unwrap().uid_mappings[0].host_id)
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [L, 2 * L, 3 * L]);
    let e = m.get_or_create("d").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Exhausted);
    assert_eq!(
        e.to_string(),
        "create user namespace: could not find an empty slot to allocate a user namespace"
    );
    assert!(!t.path().join("d/userns").exists());
    m.release("b");
    assert_eq!(
        m.get_or_create("d").unwrap().uid_mappings[0].host_id,
        ids[1]
    );
}

#[test]
fn record_bounds() {
    // Upstream TestRecordBounds: room for exactly one pod.
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "0", &file(L, L));
    put(t.path(), "2", &file(2 * L, L));
    let e = open(t.path(), cfg(L, L, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "record pod mappings for existing pod \"2\": id 131072 is out of range"
    );
}

#[test]
fn reinit_threshold_bounds_the_pod_map() {
    let t = tempfile::tempdir().unwrap();
    let mut m = open(t.path(), test_cfg()).unwrap();
    for i in 0..1001 {
        let p = format!("p{i}");
        m.get_or_create(&p).unwrap();
        m.release(&p);
        assert_eq!(m.removed_since_rebuild(), (i + 1) % 1000);
    }
    assert_eq!(m.used_slots(), 0);
}

#[test]
fn second_manager_is_refused_until_the_first_is_gone() {
    let t = tempfile::tempdir().unwrap();
    let m = open(t.path(), test_cfg()).unwrap();
    let e = open(t.path(), test_cfg()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Locked);
    assert!(
        e.to_string()
            .contains("already managed by another user namespace manager"),
        "{e}"
    );
    drop(m);
    assert!(open(t.path(), test_cfg()).is_ok());
}

#[test]
fn pod_uids_cannot_escape_the_pods_directory() {
    let outer = tempfile::tempdir().unwrap();
    let pods = outer.path().join("pods");
    fs::create_dir(&pods).unwrap();
    let mut m = open(&pods, test_cfg()).unwrap();
    for bad in ["", ".", "..", "../escape", "a/b", "/abs", "x\0y"] {
        let e = m.get_or_create(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidPodUid, "{bad:?}");
        m.release(bad);
    }
    assert!(m.allocations().is_empty());
    let mut names: Vec<_> = fs::read_dir(outer.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["pods"]);
    // A pod directory that is a symbolic link to elsewhere is not followed.
    let elsewhere = outer.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, pods.join("linked")).unwrap();
    let e = m.get_or_create("linked").unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A `userns` symlink is not read through.
    let target = outer.path().join("target");
    fs::write(&target, file(4 * L, L)).unwrap();
    fs::create_dir(pods.join("p")).unwrap();
    std::os::unix::fs::symlink(&target, pods.join("p/userns")).unwrap();
    assert!(m.get_or_create("p").is_err());
    assert_eq!(fs::read_to_string(&target).unwrap(), file(4 * L, L));
}

#[test]
fn restore_removes_only_our_stale_temp_files() {
    let t = tempfile::tempdir().unwrap();
    put(t.path(), "p", &file(2 * L, L));
    fs::write(t.path().join("p/.userns.123.4.tmp"), "{\"uidMapp").unwrap();
    fs::write(t.path().join("p/.123456"), "kubelet temp").unwrap();
    let m = open(t.path(), test_cfg()).unwrap();
    assert_eq!(m.restore_stats().stale_temp_files_removed, 1);
    assert!(!t.path().join("p/.userns.123.4.tmp").exists());
    assert!(t.path().join("p/.123456").exists());
}

#[test]
fn pools_past_2_pow_32_are_refused_not_wrapped() {
    // kubelet:327680:4294836224 → off 5, slots 65534: upstream computes slot 65531's first ID
    // in uint32 and it wraps to host ID 0. Refused here, before any slot exists.
    let c = Config {
        ids_per_pod: L,
        first_id: 327680,
        length: 4294836224,
        max_pods: 110,
    };
    let e = c.layout().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert_eq!(
        e.to_string(),
        "kubelet user assigned IDs from 327680 with length 4294836224 go past the largest ID 4294967295"
    );
    // The first slot ends at the largest ID, so the second would wrap to host ID 0.
    let t = tempfile::tempdir().unwrap();
    let e = open(t.path(), cfg(u32::MAX - L + 1, L * 110, 110)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(
        e.to_string().contains("go past the largest ID 4294967295"),
        "{e}"
    );
    // Ending exactly at 2^32 (the default pool) is fine, and its last slot ends there.
    let l = cfg(L, u32::MAX - L + 1, 110).layout().unwrap();
    assert_eq!(l.first_id(l.slots - 1), Some(u32::MAX - L + 1));
    assert_eq!(l.first_id(l.slots), None);
}

#[test]
fn failed_write_rolls_back() {
    // A tmpfs with 3 inodes: root, pods directory, pod directory. The temp file cannot be
    // created, so the write fails after the slot was taken.
    let t = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,nr_inodes=3", "tmpfs"])
        .arg(t.path())
        .status()
        .expect("mount(8) must be available (tests run as root)");
    assert!(st.success(), "mounting a tmpfs needs root");
    let pods = t.path().join("pods");
    let r = std::panic::catch_unwind(|| {
        fs::create_dir(&pods).unwrap();
        let mut m = Manager::open(
            &pods,
            test_cfg(),
            Options {
                lock: false,
                seed: Some(1),
            },
        )
        .unwrap();
        let e = m.get_or_create("p").unwrap_err();
        assert!(
            e.to_string().starts_with("create user namespace: open "),
            "{e}"
        );
        assert!(e.to_string().ends_with(": no space left on device"), "{e}");
        assert!(m.allocations().is_empty());
        assert_eq!(m.used_slots(), 0);
        assert_eq!(fs::read_dir(pods.join("p")).unwrap().count(), 0);
    });
    let _ = std::process::Command::new("umount").arg(t.path()).status();
    if let Err(p) = r {
        std::panic::resume_unwind(p);
    }
    let _ = fsio::LOCK_FILE;
}
