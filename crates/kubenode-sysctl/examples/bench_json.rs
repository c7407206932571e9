//! Times the core admission the way the Go peer `sysctl-bench` times upstream's `Admit` (same
//! allowlist, same pod, same JSON line protocol), so `npm run bench` compares core against core.
//!   cargo run --release -p kubenode-sysctl --example bench_json -- \
//!     <iters> <samples> <safe,…> <patterns,…> <sysctls,…>
//! The lists are comma-separated (a valid sysctl name or pattern has no comma).
use kubenode_benchkit::{emit, per_op};
use kubenode_sysctl::Allowlist;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

fn list(s: Option<&String>) -> Vec<&str> {
    s.map(|s| s.split(',').filter(|p| !p.is_empty()).collect())
        .unwrap_or_default()
}

fn admit_n(allow: &Allowlist, names: &[&str], n: usize) -> bool {
    let mut ok = true;
    for _ in 0..n {
        ok &= allow
            .admit(black_box(names).iter().copied(), false, false, true)
            .is_ok();
    }
    ok
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (iters, samples) = (num(0, 200_000), num(1, 15).max(1));
    let safe = list(args.get(2));
    let patterns = list(args.get(3));
    let names = list(args.get(4));
    let allow = match Allowlist::new(&[safe.as_slice(), patterns.as_slice()].concat()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("NewAllowlist: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = allow.admit(names.iter().copied(), false, false, true) {
        eprintln!("pod not admitted: {}", e.message());
        return ExitCode::FAILURE;
    }
    // Two warm-up samples, like the peers.
    let per_op = per_op(2, samples, iters, || {
        let t = Instant::now();
        let ok = admit_n(&allow, &names, iters);
        let elapsed = t.elapsed();
        assert!(ok, "pod rejected during timing");
        elapsed
    });
    emit("sysctl", "admit-pod-8-sysctls", per_op, iters, "");
    ExitCode::SUCCESS
}
