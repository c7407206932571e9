//! Crash-test helper: opens a manager on a pods directory and allocates, releases and cleans
//! up pods in a loop until it is killed. After each completed step it prints one line
//! (`A <pod> <hostId>` after an allocation returned, `R <pod>` before a release starts), so the
//! test can check what must have survived the kill.
//!
//! Usage: userns-churn <podsDir> <seed> <pods> <slots>

use std::io::Write;

use kubenode_userns::{Config, Manager, Options};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(seed), Some(pods), Some(slots)) =
        (args.get(1), args.get(2), args.get(3), args.get(4))
    else {
        eprintln!("usage: userns-churn <podsDir> <seed> <pods> <slots>");
        std::process::exit(2);
    };
    let seed: u64 = seed.parse().unwrap_or(1);
    let pods: u64 = pods.parse().unwrap_or(64);
    let slots: u32 = slots.parse().unwrap_or(128);
    let config = Config {
        ids_per_pod: 65536,
        first_id: 65536,
        length: slots * 65536,
        max_pods: 0,
    };
    let mut m = match Manager::open(
        dir,
        config,
        Options {
            lock: true,
            seed: Some(seed),
        },
    ) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("open: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "S");
    let _ = out.flush();
    let mut rng = kubenode_bitmap::SplitMix64::new(seed ^ 0x5eed);
    loop {
        let pod = format!("pod-{:04}", rng.below(pods));
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
                let keep: Vec<String> = (0..pods)
                    .filter(|i| i % 7 != 3)
                    .map(|i| format!("pod-{i:04}"))
                    .collect();
                for i in (0..pods).filter(|i| i % 7 == 3) {
                    let _ = writeln!(out, "R pod-{i:04}");
                }
                let _ = out.flush();
                let none: Vec<String> = Vec::new();
                if let Err(e) = m.cleanup_orphans(&keep, &none) {
                    let _ = writeln!(out, "E cleanup {e}");
                }
            }
        }
        let _ = out.flush();
    }
}
