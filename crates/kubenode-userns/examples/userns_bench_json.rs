//! Times the core the way the Go peer `userns-bench` times upstream (same scenarios, same
//! parameters, same JSON line protocol), so the bench can compare core against core and, for
//! the file path, separate the binding and thread-pool cost from the file work.
//!
//!   cargo run --release -p kubenode-userns --example userns_bench_json -- \
//!     -scenario alloc-near-full|getorcreate-release [-iters N] [-samples K] \
//!     [-pods N] [-held H] [-dir D] [-podsdir P]
//!
//! alloc-near-full: the bitmap exactly as the manager builds it (the kubelet's default pool,
//! 65535 slots of 65536 IDs, random scan), 99 % of the slots taken by a seeded shuffle; one op
//! is AllocateNext + Release.
//! getorcreate-release: a Manager over `<dir>/<fresh>`; `-held` pods are first written to disk
//! (untimed, not fsynced: they stand for the pods the node already runs) and restored when the
//! manager opens; one sample then does get_or_create for `-pods` other pods and releases them.
//! With `-podsdir P` the pods folder P is used as it is (its held pods already there) and only
//! the cycled pods' folders are removed at the end, as in the Go peer.
//! One untimed warm-up sample runs first, as in the Go peer.
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use kubenode_benchkit::{emit, per_op, SEED};
use kubenode_bitmap::SplitMix64;
use kubenode_userns::{config, json, Config, Manager, Options, UserNamespace, RANGE_SPEC};

const IDS_PER_POD: u32 = 65536;

struct Args {
    scenario: String,
    iters: usize,
    samples: usize,
    pods: usize,
    held: usize,
    dir: String,
    pods_dir: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        scenario: "alloc-near-full".into(),
        iters: 100_000,
        samples: 15,
        pods: 110,
        held: 0,
        dir: std::env::temp_dir().to_string_lossy().into_owned(),
        pods_dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        let num = |s: String| s.parse::<usize>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "-scenario" => a.scenario = v()?,
            "-iters" => a.iters = num(v()?)?,
            "-samples" => a.samples = num(v()?)?,
            "-pods" => a.pods = num(v()?)?,
            "-held" => a.held = num(v()?)?,
            "-dir" => a.dir = v()?,
            "-podsdir" => a.pods_dir = Some(v()?),
            "-json" => {}
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.iters == 0 || a.samples == 0 || a.pods == 0 {
        return Err("-iters, -samples and -pods must be >= 1".into());
    }
    Ok(a)
}

fn default_config(max_pods: u32) -> Config {
    let (first_id, length) = config::default_pool(IDS_PER_POD);
    Config {
        ids_per_pod: IDS_PER_POD,
        first_id,
        length,
        max_pods,
    }
}

fn alloc_near_full(a: &Args) -> Result<(), String> {
    let layout = default_config(0).layout().map_err(|e| e.to_string())?;
    let slots = layout.slots as usize;
    let full = slots * 99 / 100;
    let mut m = kubenode_benchkit::shuffled(slots as u64, RANGE_SPEC, full, SEED)
        .map_err(|e| e.to_string())?;
    let per_op = per_op(1, a.samples, a.iters, || {
        let t = Instant::now();
        for _ in 0..a.iters {
            if let Some(i) = m.allocate_next().unwrap() {
                m.release(black_box(i));
            }
        }
        t.elapsed()
    });
    emit(
        "userns",
        "alloc-near-full",
        per_op,
        a.iters,
        &format!(",\"slots\":{slots},\"allocated\":{}", m.count()),
    );
    Ok(())
}

/// Same UID shape as the Go peer (`%x-%x-%x-%x-%x` of 16 seeded random bytes).
fn pod_uids(n: usize, seed: u64) -> Vec<String> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|i| {
            let a = rng.next_u64();
            format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                a as u32,
                (a >> 32) as u16,
                (a >> 48) & 0xfff,
                0x8000 | (i as u64 >> 48) as u16,
                i
            )
        })
        .collect()
}

/// The slots the held pods occupy: all but `free` slots, the free ones spread evenly
/// (slot ⌊k·slots/free⌋ for k < free), the same rule as the Go peer.
pub fn held_slots(slots: usize, held: usize) -> Vec<u32> {
    let free = slots - held;
    let mut is_free = vec![false; slots];
    for k in 0..free {
        is_free[k * slots / free] = true;
    }
    (0..slots as u32)
        .filter(|&i| !is_free[i as usize])
        .collect()
}

fn write_held(pods_dir: &Path, slots: usize, held: usize) -> Result<(), String> {
    std::fs::create_dir_all(pods_dir).map_err(|e| e.to_string())?;
    for (k, slot) in held_slots(slots, held).into_iter().enumerate() {
        let dir = pods_dir.join(format!("00000000-0000-4000-8000-{k:012x}"));
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let ns = UserNamespace::single((slot + 1) * IDS_PER_POD, IDS_PER_POD);
        std::fs::write(dir.join("userns"), json::encode(&ns)).map_err(|e| e.to_string())?;
    }
    // Otherwise the first timed fsync would commit all of these to the journal.
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    Ok(())
}

fn getorcreate_release(a: &Args) -> Result<(), String> {
    let slots = default_config(0).layout().map_err(|e| e.to_string())?.slots as usize;
    if a.held + a.pods > slots {
        return Err(format!("-held + -pods must be <= {slots}"));
    }
    // Removed when dropped (a fresh folder) or kept (a given one).
    let fresh;
    let root: &Path = match &a.pods_dir {
        Some(p) => Path::new(p),
        None => {
            fresh = tempfile::Builder::new()
                .prefix("userns-bench-")
                .tempdir_in(&a.dir)
                .map_err(|e| format!("create pods folder in {}: {e}", a.dir))?;
            write_held(fresh.path(), slots, a.held)?;
            fresh.path()
        }
    };
    let max_pods = (a.held + a.pods) as u32;
    let mut m = Manager::open(
        root,
        default_config(max_pods),
        Options {
            lock: false,
            seed: None,
        },
    )
    .map_err(|e| e.to_string())?;
    if m.used_slots() != a.held {
        return Err(format!("restored {} pods, want {}", m.used_slots(), a.held));
    }
    let pods = pod_uids(a.pods, SEED);
    let mut failed = None;
    let per_op = per_op(1, a.samples, a.pods, || {
        let t = Instant::now();
        for p in &pods {
            if let Err(e) = m.get_or_create(p) {
                failed.get_or_insert(e.to_string());
            }
        }
        for p in &pods {
            m.release(p);
        }
        t.elapsed()
    });
    if a.pods_dir.is_some() {
        for p in &pods {
            let _ = std::fs::remove_dir(root.join(p));
        }
    }
    if let Some(e) = failed {
        return Err(format!("get_or_create: {e}"));
    }
    emit(
        "userns",
        "getorcreate-release",
        per_op,
        a.pods,
        &format!(
            ",\"pods\":{},\"held\":{},\"dir\":{:?}",
            a.pods,
            a.held,
            root.display().to_string()
        ),
    );
    Ok(())
}

fn main() {
    let r = parse_args().and_then(|a| match a.scenario.as_str() {
        "alloc-near-full" => alloc_near_full(&a),
        "getorcreate-release" => getorcreate_release(&a),
        s => Err(format!("unknown scenario {s}")),
    });
    if let Err(e) = r {
        eprintln!("userns_bench_json: {e}");
        std::process::exit(1);
    }
}
