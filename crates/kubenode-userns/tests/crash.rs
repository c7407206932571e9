//! Crash safety for real: a child process (this test binary again, running `churn_child`)
//! allocates, releases and cleans up pods in a loop on a real directory and is killed with
//! SIGKILL at 1,000 random moments.
//! After each kill a fresh manager must start (every file parses, no two pods overlap), every
//! allocation the child reported as done must be on disk with the same range, and nothing
//! half-written may be named `userns`.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kubenode_bitmap::SplitMix64;
use kubenode_userns::{Config, Manager, Options};

const SLOTS: u32 = 96;
const PODS: u64 = 64;
/// Set by the parent for the child: `<seed>` (the round); the pods directory is in `CHILD_DIR`.
const CHILD_SEED: &str = "KUBENODE_USERNS_CHURN_SEED";
const CHILD_DIR: &str = "KUBENODE_USERNS_CHURN_DIR";

fn kills() -> usize {
    std::env::var("USERNS_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

#[test]
fn sigkill_at_random_moments_never_corrupts_or_overlaps() {
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods");
    std::fs::create_dir(&pods).unwrap();
    let config = Config {
        ids_per_pod: 65536,
        first_id: 65536,
        length: SLOTS * 65536,
        max_pods: 0,
    };
    let mut rng = SplitMix64::new(0xC0FFEE);
    // Last word of the child on each pod: Some(id) after a completed allocation, None once a
    // release started. Carried across kills.
    let mut expect: HashMap<String, Option<u32>> = HashMap::new();
    let started = Instant::now();
    let mut completed_ops = 0usize;
    let mut stale = 0usize;
    let n = kills();
    for round in 0..n {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["churn_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, &pods)
            .env(CHILD_SEED, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the churn child");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // The test harness prints its own lines first; the child's protocol starts at `S`.
        let mut first = String::new();
        while out.read_line(&mut first).unwrap() > 0 && first.trim() != "S" {
            first.clear();
        }
        if first.trim() != "S" {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("round {round}: child did not start: {first:?} {err}");
        }
        // Kill somewhere in the next 0–3 ms of work (a few to a few dozen operations).
        std::thread::sleep(Duration::from_micros(rng.below(3000)));
        child.kill().unwrap();
        child.wait().unwrap();
        for line in out.lines() {
            let line = line.unwrap();
            let mut f = line.split(' ');
            match (f.next(), f.next(), f.next()) {
                (Some("A"), Some(pod), Some(id)) => {
                    expect.insert(pod.to_string(), Some(id.parse().unwrap()));
                    completed_ops += 1;
                }
                (Some("R"), Some(pod), None) => {
                    expect.insert(pod.to_string(), None);
                    completed_ops += 1;
                }
                // A line cut by the kill carries no promise.
                _ => {}
            }
        }
        let m = Manager::open(
            &pods,
            config,
            Options {
                lock: true,
                seed: Some(1),
            },
        )
        .unwrap_or_else(|e| panic!("round {round}: fresh manager refused to start: {e}"));
        stale += m.restore_stats().stale_temp_files_removed;
        let allocs = m.allocations();
        let mut ids = HashSet::new();
        for a in &allocs {
            assert!(
                ids.insert(a.host_id),
                "round {round}: range {} handed out twice",
                a.host_id
            );
            assert!(
                a.host_id >= 65536 && a.host_id <= SLOTS * 65536,
                "round {round}: {a:?}"
            );
        }
        for (pod, want) in &expect {
            if let Some(id) = want {
                assert_eq!(
                    m.allocated(pod),
                    Some(*id),
                    "round {round}: completed allocation of {pod} lost"
                );
            }
        }
        // No stray file with another name than ours or `userns` (torn files would fail above).
        for e in std::fs::read_dir(&pods).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                for f in std::fs::read_dir(e.path()).unwrap() {
                    let name = f.unwrap().file_name().into_string().unwrap();
                    assert_eq!(
                        name, "userns",
                        "round {round}: unexpected file {name} after restore"
                    );
                }
            }
        }
        drop(m);
    }
    eprintln!(
        "{n} kills, {completed_ops} completed operations observed, {stale} stale temp files cleaned, {:?}",
        started.elapsed()
    );
    assert!(
        completed_ops > n,
        "the child must get work done between kills ({completed_ops} ops)"
    );
}

/// The child's side: opens a manager on the pods directory and allocates, releases and cleans up
/// pods in a loop until it is killed. After each completed step it prints one line (`A <pod>
/// <hostId>` after an allocation returned, `R <pod>` before a release starts), so the parent can
/// check what must have survived the kill. Without the parent's environment it does nothing.
#[test]
fn churn_child() {
    let (Ok(dir), Ok(seed)) = (std::env::var(CHILD_DIR), std::env::var(CHILD_SEED)) else {
        return;
    };
    let seed: u64 = seed.parse().unwrap();
    let config = Config {
        ids_per_pod: 65536,
        first_id: 65536,
        length: SLOTS * 65536,
        max_pods: 0,
    };
    let options = Options {
        lock: true,
        seed: Some(seed),
    };
    let mut m = Manager::open(&dir, config, options).unwrap();
    let mut out = std::io::stdout().lock();
    // On a line of its own, whatever the harness printed before.
    writeln!(out, "\nS").unwrap();
    out.flush().unwrap();
    let mut rng = SplitMix64::new(seed ^ 0x5eed);
    loop {
        let pod = format!("pod-{:04}", rng.below(PODS));
        match rng.below(10) {
            0..=5 => match m.get_or_create(&pod) {
                Ok(ns) => {
                    let id = ns.uid_mappings.first().map(|u| u.host_id).unwrap_or(0);
                    let _ = writeln!(out, "A {pod} {id}");
                }
                Err(e) => {
                    let _ = writeln!(out, "E {pod} {e}");
                }
            },
            6..=8 => {
                let _ = writeln!(out, "R {pod}");
                let _ = out.flush();
                m.release(&pod);
            }
            _ => {
                // Everything is desired except a few pods, which cleanup releases.
                let keep: Vec<String> = (0..PODS)
                    .filter(|i| i % 7 != 3)
                    .map(|i| format!("pod-{i:04}"))
                    .collect();
                for i in (0..PODS).filter(|i| i % 7 == 3) {
                    let _ = writeln!(out, "R pod-{i:04}");
                }
                let _ = out.flush();
                if let Err(e) = m.cleanup_orphans(&keep, &[]) {
                    let _ = writeln!(out, "E cleanup {e}");
                }
            }
        }
        let _ = out.flush();
    }
}
