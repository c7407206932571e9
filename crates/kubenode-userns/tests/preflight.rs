//! Pre-flight check of a new pool or idsPerPod against pods on a real filesystem, their files
//! written by the manager itself. The check must agree with the restore: a manager opened with
//! the checked configuration starts exactly when the check finds no misfit, and otherwise
//! fails on the first misfit the check names.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use kubenode_userns::{
    check_pool, json, Config, ErrorKind, Manager, Options, PoolCheck, UserNamespace,
};

const L: u32 = 65536;

fn cfg(ids_per_pod: u32, first_id: u32, length: u32, max_pods: u32) -> Config {
    Config {
        ids_per_pod,
        first_id,
        length,
        max_pods,
    }
}

fn open(dir: &Path, c: Config) -> kubenode_userns::Result<Manager> {
    Manager::open(
        dir,
        c,
        Options {
            lock: true,
            seed: Some(3),
        },
    )
}

/// `n` pods created by a manager with `c`; returns pod → first host ID.
fn pods_by_manager(dir: &Path, c: Config, n: usize) -> BTreeMap<String, u32> {
    let mut m = open(dir, c).unwrap();
    (0..n)
        .map(|i| {
            let pod = format!("pod-{i:03}");
            let h = m.get_or_create(&pod).unwrap().uid_mappings[0].host_id;
            (pod, h)
        })
        .collect()
}

fn misfit_pods(r: &PoolCheck) -> Vec<&str> {
    r.misfits.iter().map(|m| m.pod.as_str()).collect()
}

/// The restore agrees with the check: opens iff it fits, else fails on the first misfit.
fn assert_agrees_with_restore(dir: &Path, c: Config, r: &PoolCheck) {
    match open(dir, c) {
        Ok(_) => assert!(r.fits, "manager opened but the check found {:?}", r.misfits),
        Err(e) => {
            let first = r
                .misfits
                .first()
                .expect("manager refused but the check found nothing");
            assert_eq!(
                e.to_string(),
                format!(
                    "record pod mappings for existing pod {:?}: {}",
                    first.pod, first.reason
                )
            );
        }
    }
}

fn put(dir: &Path, pod: &str, content: &[u8]) {
    fs::create_dir_all(dir.join(pod)).unwrap();
    fs::write(dir.join(pod).join("userns"), content).unwrap();
}

#[test]
fn the_same_configuration_fits() {
    let t = tempfile::tempdir().unwrap();
    let c = cfg(L, L, L * 2000, 110);
    pods_by_manager(t.path(), c, 20);
    let r = check_pool(t.path(), c).unwrap();
    assert!(r.fits, "{r:?}");
    assert_eq!((r.pods, r.usable_slots), (20, 2000));
    assert_agrees_with_restore(t.path(), c, &r);
}

#[test]
fn a_new_ids_per_pod_names_every_pod() {
    let t = tempfile::tempdir().unwrap();
    let pods = pods_by_manager(t.path(), cfg(L, L, L * 2000, 110), 7);
    let c = cfg(2 * L, 2 * L, 2 * L * 1000, 110);
    let r = check_pool(t.path(), c).unwrap();
    assert!(!r.fits);
    assert_eq!(
        misfit_pods(&r),
        pods.keys().map(String::as_str).collect::<Vec<_>>()
    );
    for m in &r.misfits {
        assert_eq!(m.host_id, Some(pods[&m.pod]));
        assert_eq!(m.length, Some(L));
        assert_eq!(m.reason, "wrong user namespace length 65536");
    }
    assert_agrees_with_restore(t.path(), c, &r);
}

#[test]
fn a_smaller_pool_names_the_pods_outside_it() {
    let t = tempfile::tempdir().unwrap();
    let pods = pods_by_manager(t.path(), cfg(L, L, L * 2000, 110), 30);
    let c = cfg(L, L, L * 500, 110);
    let want: Vec<&str> = pods
        .iter()
        .filter(|(_, &h)| u64::from(h) >= u64::from(L) * 501)
        .map(|(p, _)| p.as_str())
        .collect();
    assert!(!want.is_empty(), "the seed puts some pods above slot 500");
    let r = check_pool(t.path(), c).unwrap();
    assert_eq!(misfit_pods(&r), want);
    for m in &r.misfits {
        let h = pods[&m.pod];
        assert_eq!(m.reason, format!("id {h} is out of range"));
    }
    assert_agrees_with_restore(t.path(), c, &r);
    // A pool moved by whole ranges: first ID not a multiple of the new idsPerPod.
    let c = cfg(3 * L, 3 * L, 3 * L * 1000, 110);
    let r = check_pool(t.path(), c).unwrap();
    assert!(r
        .misfits
        .iter()
        .all(|m| m.reason.starts_with("wrong user namespace length")));
}

#[test]
fn the_reserved_range_and_a_shared_range_do_not_fit() {
    let t = tempfile::tempdir().unwrap();
    let last = u32::MAX - (L - 1);
    put(
        t.path(),
        "a-top",
        json::encode(&UserNamespace::single(last, L)).as_bytes(),
    );
    put(
        t.path(),
        "b-first",
        json::encode(&UserNamespace::single(5 * L, L)).as_bytes(),
    );
    put(
        t.path(),
        "c-again",
        json::encode(&UserNamespace::single(5 * L, L)).as_bytes(),
    );
    let c = cfg(L, L, u32::MAX - (L - 1), 110);
    let r = check_pool(t.path(), c).unwrap();
    assert_eq!(r.usable_slots, 65534);
    assert_eq!(misfit_pods(&r), ["a-top", "c-again"]);
    assert_eq!(
        r.misfits[0].reason,
        "id 4294901760 is out of range: its range holds ID 4294967295, which the kernel cannot map"
    );
    assert_eq!(
        r.misfits[1].reason,
        "range picked for pod \"c-again\" already taken by pod \"b-first\""
    );
    assert_agrees_with_restore(t.path(), c, &r);
}

#[test]
fn hostile_entries_are_reported_or_skipped_never_followed_or_blocked_on() {
    let t = tempfile::tempdir().unwrap();
    let pods = t.path().join("pods");
    let c = cfg(L, L, L * 2000, 110);
    fs::create_dir(&pods).unwrap();
    pods_by_manager(&pods, c, 3);
    // Outside the pods directory: a pod directory with a file the pool refuses.
    let elsewhere = t.path().join("elsewhere");
    put(
        &elsewhere,
        "x",
        json::encode(&UserNamespace::single(L * 5000, L)).as_bytes(),
    );
    // A symbolic link where a pod directory would be: not a pod (the kubelet lists directories).
    std::os::unix::fs::symlink(elsewhere.join("x"), pods.join("link-pod")).unwrap();
    // A FIFO and a huge sparse file at the top level: not pods either.
    let fifo = |p: &Path| {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };
    fifo(&pods.join("fifo-entry"));
    // Pods whose `userns` is a FIFO (reading it would block), a huge file, a symbolic link to
    // a valid file, and a directory.
    fs::create_dir_all(pods.join("p-fifo")).unwrap();
    fifo(&pods.join("p-fifo").join("userns"));
    fs::create_dir_all(pods.join("p-huge")).unwrap();
    let huge = fs::File::create(pods.join("p-huge").join("userns")).unwrap();
    huge.set_len(1 << 30).unwrap();
    fs::create_dir_all(pods.join("p-link")).unwrap();
    std::os::unix::fs::symlink(
        pods.join("pod-000").join("userns"),
        pods.join("p-link").join("userns"),
    )
    .unwrap();
    fs::create_dir_all(pods.join("p-dir").join("userns")).unwrap();

    let r = check_pool(&pods, c).unwrap();
    assert_eq!(misfit_pods(&r), ["p-dir", "p-fifo", "p-huge", "p-link"]);
    let reason = |p: &str| &r.misfits.iter().find(|m| m.pod == p).unwrap().reason;
    let file = |p: &str| pods.join(p).join("userns").display().to_string();
    assert_eq!(
        reason("p-dir"),
        &format!("read {}: is a directory", file("p-dir"))
    );
    assert_eq!(
        reason("p-fifo"),
        &format!(
            "read {}: not a regular file (named pipe), refusing to open it",
            file("p-fifo")
        )
    );
    assert_eq!(
        reason("p-huge"),
        &format!(
            "read {}: file of 1073741824 bytes is larger than 65536 bytes, not a user namespace mappings file",
            file("p-huge")
        )
    );
    assert_eq!(
        reason("p-link"),
        &format!(
            "read {}: not a regular file (symbolic link), refusing to open it",
            file("p-link")
        )
    );
    assert!(r
        .misfits
        .iter()
        .all(|m| m.host_id.is_none() && m.length.is_none()));
    assert_eq!(r.pods, 7);
    assert_agrees_with_restore(&pods, c, &r);
    // Nothing was changed: the same files, no lock file left taken.
    assert!(pods.join("p-fifo").join("userns").exists());
    assert_eq!(
        fs::metadata(pods.join("p-huge").join("userns"))
            .unwrap()
            .len(),
        1 << 30
    );
}

#[test]
fn a_bad_configuration_or_a_missing_directory_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    let e = check_pool(t.path(), cfg(L, L, L * 100, 110)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert_eq!(
        e.to_string(),
        "kubelet user assigned IDs are not enough to support 110 pods"
    );
    let e = check_pool(&t.path().join("missing"), cfg(L, L, L * 2000, 110)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "read pods from disk: open {}: no such file or directory",
            t.path().join("missing").display()
        )
    );
}
