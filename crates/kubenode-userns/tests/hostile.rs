//! Hostile pods directories: a pod directory swapped for a symbolic link mid-operation, files
//! that are not regular files or are huge, and directory names that are not UTF-8.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use kubenode_userns::{list_mappings, read_pod_mapping, Config, ErrorKind, Manager, Options};

const L: u32 = 65536;

fn cfg() -> Config {
    Config {
        ids_per_pod: L,
        first_id: L,
        length: L * 2000,
        max_pods: 110,
    }
}

fn open(dir: &Path) -> kubenode_userns::Result<Manager> {
    Manager::open(
        dir,
        cfg(),
        Options {
            lock: true,
            seed: Some(5),
        },
    )
}

fn file(host: u32) -> String {
    format!(
        r#"{{"uidMappings":[{{"hostId":{host},"containerId":0,"length":{L}}}],"gidMappings":[{{"hostId":{host},"containerId":0,"length":{L}}}]}}"#
    )
}

/// Every file under `dir`, recursively, without following symbolic links.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(e.path());
            } else if t.is_file() {
                out.push((e.path(), fs::read(e.path()).unwrap()));
            } else {
                out.push((e.path(), Vec::new()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_pod_directory_swapped_for_a_symlink_never_leads_elsewhere() {
    let t = tempfile::tempdir().unwrap();
    let pods = t.path().join("pods");
    let victim = t.path().join("victim");
    fs::create_dir_all(&victim).unwrap();
    fs::write(victim.join("userns"), file(7 * L)).unwrap();
    fs::write(victim.join("data"), "not the kubelet's").unwrap();
    let before = tree(&victim);

    fs::create_dir(&pods).unwrap();
    let mut m = open(&pods).unwrap();
    let pod = pods.join("pod-race");
    let link = pods.join("link");
    fs::create_dir(&pod).unwrap();
    std::os::unix::fs::symlink(&victim, &link).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (pod, link) = (pod.clone(), link.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &pod,
                    rustix::fs::CWD,
                    &link,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("renameat2(RENAME_EXCHANGE)");
                swaps += 1;
            }
            swaps
        })
    };
    let start = Instant::now();
    let (mut ok, mut refused) = (0u64, 0u64);
    while start.elapsed() < Duration::from_secs(4) {
        match m.get_or_create("pod-race") {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Io, "{e}");
                refused += 1;
            }
        }
        m.release("pod-race");
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 1000, "only {swaps} swaps");
    assert!(ok > 0, "no call got through ({refused} refused)");
    assert_eq!(tree(&victim), before, "the victim directory changed");
    let temps: Vec<_> = tree(t.path())
        .into_iter()
        .filter(|(p, _)| p.file_name().unwrap().as_bytes().starts_with(b".userns."))
        .collect();
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

/// Runs `f` on a thread and fails if it has not returned within 5 s (a blocked open of a FIFO
/// never returns; the thread is then left behind and dies with the test process).
fn within_5s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("blocked for 5 s on a hostile file")
}

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Peak resident memory of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let s = fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn non_regular_and_huge_files_are_refused_without_blocking() {
    type Make = fn(&Path);
    let cases: [(&str, Make, &str); 4] = [
        ("fifo", |p| mkfifo(p), "not a regular file (named pipe)"),
        (
            "symlink",
            |p| std::os::unix::fs::symlink("/etc/hostname", p).unwrap(),
            "not a regular file (symbolic link)",
        ),
        ("dir", |p| fs::create_dir(p).unwrap(), "is a directory"),
        (
            "sparse",
            |p| fs::File::create(p).unwrap().set_len(2 << 30).unwrap(),
            "file of 2147483648 bytes is larger than 65536 bytes",
        ),
    ];
    for (name, make, want) in cases {
        let t = tempfile::tempdir().unwrap();
        let pods = t.path().join("pods");
        let aside = t.path().join("aside");
        fs::create_dir_all(pods.join("p")).unwrap();
        let f = pods.join("p/userns");
        make(&f);
        let want_msg = format!("{}: {want}", f.display());
        let started = Instant::now();
        let rss = peak_rss_kib();

        // Restore at start.
        let p = pods.clone();
        let e = within_5s(move || open(&p).map(|_| ())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{name}: {e}");
        assert!(e.to_string().contains(&want_msg), "{name}: {e}");
        // getOrCreate on a running manager.
        fs::rename(pods.join("p"), &aside).unwrap();
        let p = pods.clone();
        let e = within_5s(move || {
            let mut m = open(&p).unwrap();
            fs::rename(&aside, p.join("p")).unwrap();
            m.get_or_create("p").map(|_| ())
        })
        .unwrap_err();
        assert!(e.to_string().contains(&want_msg), "{name}: {e}");
        // The read-only listing and the verify reader.
        let p = pods.clone();
        let listed = within_5s(move || list_mappings(&p)).unwrap();
        assert_eq!(listed.len(), 1, "{name}");
        let err = listed[0].mapping.clone().unwrap_err();
        assert!(err.contains(&want_msg), "{name}: {err}");
        let p = pods.clone();
        let e = within_5s(move || read_pod_mapping(&p, "p")).unwrap_err();
        assert!(e.to_string().contains(&want_msg), "{name}: {e}");

        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{name}: took {:?}",
            started.elapsed()
        );
        let grown = peak_rss_kib().saturating_sub(rss);
        assert!(grown < 64 * 1024, "{name}: peak memory grew by {grown} KiB");
    }
}

#[test]
fn pod_directories_with_non_utf8_names_are_pods_like_any_other() {
    let t = tempfile::tempdir().unwrap();
    let pods = t.path();
    let odd = OsStr::from_bytes(b"pod-\xff\xfe");
    fs::create_dir(pods.join(odd)).unwrap();
    fs::write(pods.join(odd).join("userns"), file(3 * L)).unwrap();
    fs::create_dir(pods.join("plain")).unwrap();
    fs::write(pods.join("plain/userns"), file(4 * L)).unwrap();

    let mut m = open(pods).unwrap();
    assert_eq!(m.restore_stats().restored, 2);
    assert_eq!(m.allocated(odd), Some(3 * L));
    let listed = list_mappings(pods).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].pod, odd, "sorted by bytes");
    assert_eq!(listed[1].mapping, Ok((3 * L, L)));
    // Its range stays taken...
    for i in 0..50 {
        let h = m.get_or_create(&format!("new-{i}")).unwrap().uid_mappings[0].host_id;
        assert_ne!(h, 3 * L);
    }
    // ...until cleanup finds no pod with that name, as in the kubelet.
    let known: Vec<String> = (0..50).map(|i| format!("new-{i}")).collect();
    m.cleanup_orphans(&known, &["plain".to_string()]).unwrap();
    assert_eq!(m.allocated(odd), None);
    assert!(!pods.join(odd).join("userns").exists());
    assert!(pods.join("plain/userns").exists());
}
