//! The kernel check for real: a process in a new user namespace with a pod's mapping.

use kubenode_userns::{json, verify_mapping, verify_pod, ErrorKind};

#[test]
fn uid_zero_inside_is_host_id_outside() {
    for (host, len) in [
        (131072u32, 65536u32),
        (4294836224, 65536),
        (65536 * 7, 65536 * 2),
    ] {
        let r = verify_mapping(host, len)
            .unwrap_or_else(|e| panic!("user namespaces must work here (root): {e}"));
        assert_eq!((r.inside_uid, r.inside_gid), (0, 0), "{r:?}");
        assert_eq!((r.outside_uid, r.outside_gid), (host, host), "{r:?}");
        assert_eq!((r.file_uid, r.file_gid), (host, host), "{r:?}");
        assert_eq!(r.uid_map, format!("0 {host} {len}"));
        assert_eq!(r.gid_map, format!("0 {host} {len}"));
        assert!(r.ok);
    }
}

#[test]
fn the_last_range_cannot_be_mapped() {
    // Upstream's default pool ends at 2^32, so its last slot includes 4294967295, which the
    // kernel refuses (kubernetes/kubernetes#139916): the check shows it.
    let e = verify_mapping(4294901760, 65536).unwrap_err();
    assert!(e.to_string().contains("uid_map: invalid argument"), "{e}");
    assert!(e.to_string().contains("4294967295"), "{e}");
}

#[test]
fn impossible_mappings_are_refused() {
    assert!(verify_mapping(4294901760, 131072).is_err());
    assert!(verify_mapping(65536, 0).is_err());
}

#[test]
fn container_root_on_host_system_ids_is_never_ok() {
    // What a wrapped slot ID gave: `0 0 65536`, root inside is root outside.
    for host in [0u32, 1000, 65535] {
        let e = verify_mapping(host, 65536).expect_err("must not report ok");
        assert_eq!(e.kind(), kubenode_userns::ErrorKind::Config, "{e}");
        assert!(
            e.to_string()
                .contains(&format!("host ID {host}, below 65536")),
            "{e}"
        );
    }
}

const HELPER_ENV: &str = "KUBENODE_USERNS_VERIFY_HELPER";

/// Runs only in the re-executed helper: holds the pods-directory lock and verifies in a loop
/// until killed.
#[test]
fn helper_verify_forever_holding_the_lock() {
    let Some(pods) = std::env::var_os(HELPER_ENV) else {
        return;
    };
    let _m = kubenode_userns::Manager::open(pods, config(), lock())
        .unwrap_or_else(|e| panic!("helper cannot open the pods dir: {e}"));
    println!("HELPER-READY");
    loop {
        verify_mapping(131072, 65536).unwrap_or_else(|e| panic!("verify in helper: {e}"));
    }
}

fn config() -> kubenode_userns::Config {
    kubenode_userns::Config {
        ids_per_pod: 65536,
        first_id: 65536,
        length: 16 * 65536,
        max_pods: 0,
    }
}

fn lock() -> kubenode_userns::Options {
    kubenode_userns::Options {
        lock: true,
        seed: Some(1),
    }
}

/// Children of `pid` (every thread of it), from `/proc`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let list = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(
            list.split_whitespace()
                .filter_map(|v| v.parse::<u32>().ok()),
        );
    }
    out
}

/// Kills and reaps the helper should an assertion fail (a no-op once it has been waited for).
struct Helper(std::process::Child);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

/// A process that dies in the middle of a check must not leave the child behind: it would
/// block forever and, holding an inherited copy of the pods-directory lock, keep every later
/// manager from opening.
#[test]
fn killing_the_caller_mid_check_leaves_no_child_and_no_lock() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods");
    std::fs::create_dir(&pods).unwrap();
    for round in 0..5 {
        let mut helper = Helper(
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "helper_verify_forever_holding_the_lock",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(HELPER_ENV, &pods)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn helper"),
        );
        let mut out = BufReader::new(helper.0.stdout.take().unwrap());
        let mut line = String::new();
        // The marker follows the harness's "test ... " text on the same line.
        while !line.contains("HELPER-READY") {
            line.clear();
            if out.read_line(&mut line).unwrap() == 0 {
                // Say why: the helper's panic message is on its stderr.
                let mut err = String::new();
                if let Some(mut e) = helper.0.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("round {round}: helper ended before it held the lock: {err}");
            }
        }
        // Kill the helper while one of its checks has a child. Each child lives for a moment
        // only, so a loaded machine may take a while to show one: the wait is long, and a
        // helper that ended instead says why.
        let deadline = Instant::now() + Duration::from_secs(60);
        let caught = loop {
            let kids = children(helper.0.id());
            if !kids.is_empty() {
                helper.0.kill().unwrap();
                break kids;
            }
            if let Ok(Some(status)) = helper.0.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = helper.0.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!(
                    "round {round}: helper ended ({status}) before a check child was seen: {err}"
                );
            }
            assert!(
                Instant::now() < deadline,
                "round {round}: no check child seen in 60 s"
            );
        };
        helper.0.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while caught.iter().any(|&p| running(p)) {
            assert!(
                Instant::now() < deadline,
                "round {round}: check child {caught:?} outlived its parent"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        kubenode_userns::Manager::open(&pods, config(), lock())
            .unwrap_or_else(|e| panic!("round {round}: pods dir still locked: {e}"));
    }
}

#[test]
fn a_pods_file_is_read_with_upstreams_checks_and_its_report_names_the_pod() {
    let t = tempfile::tempdir().unwrap();
    let pod = t.path().join("pod-a");
    std::fs::create_dir(&pod).unwrap();
    let ns = json::UserNamespace::single(65536 * 3, 65536);
    std::fs::write(pod.join("userns"), json::encode(&ns)).unwrap();

    let r = verify_pod(t.path(), "pod-a").expect("verify the pod's mapping");
    assert_eq!(r.pod.as_deref(), Some("pod-a"));
    assert_eq!((r.host_id, r.length), (65536 * 3, 65536));
    assert_eq!((r.outside_uid, r.file_uid), (65536 * 3, 65536 * 3), "{r:?}");
    assert!(r.ok, "{r:?}");

    assert_eq!(
        verify_pod(t.path(), "../pod-a").unwrap_err().kind(),
        ErrorKind::InvalidPodUid
    );
    let missing = verify_pod(t.path(), "pod-b").unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Io);
    assert!(
        missing
            .to_string()
            .contains("has no user namespace mappings file"),
        "{missing}"
    );
}
