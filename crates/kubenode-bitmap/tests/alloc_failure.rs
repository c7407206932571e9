//! A map whose memory cannot be allocated is a typed error, not a process abort. The failing
//! case runs in a re-executed copy of this test binary with its address space capped, so the
//! 512 MiB of a full 2^32-slot map really cannot be had.
use kubenode_bitmap::{AllocationBitmap, BitmapError, SplitMix64, Strategy, MAX_SLOTS};
use std::os::unix::process::CommandExt;
use std::process::Command;

const CHILD_ENV: &str = "KUBENODE_BITMAP_ALLOC_CHILD";
/// Enough for the test harness, well short of the 512 MiB level 0 of a 2^32-slot map.
const CAP_BYTES: u64 = 256 << 20;

fn full_size_map() -> Result<AllocationBitmap, BitmapError> {
    AllocationBitmap::with_rng(
        MAX_SLOTS,
        "test",
        Strategy::RandomScan { offset: 0 },
        SplitMix64::new(1),
    )
}

/// Runs only inside the capped child (a no-op in a normal run).
#[test]
fn child_full_size_map_under_cap() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    match full_size_map() {
        Err(BitmapError::AllocationFailed { max, bytes }) => {
            assert_eq!(max, MAX_SLOTS);
            assert_eq!(bytes, (MAX_SLOTS / 8) as usize);
            println!("ALLOCATION-FAILED-REPORTED");
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a 2^32-slot map fitted under a {CAP_BYTES}-byte address space cap"),
    }
}

#[test]
fn allocation_failure_is_an_error_not_an_abort() {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "child_full_size_map_under_cap",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, "1");
    // SAFETY: setrlimit is async-signal-safe and touches no state shared with the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: CAP_BYTES,
                rlim_max: CAP_BYTES,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run capped child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("ALLOCATION-FAILED-REPORTED"),
        "child status {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn error_text() {
    let e = BitmapError::AllocationFailed {
        max: MAX_SLOTS,
        bytes: 1 << 29,
    };
    assert_eq!(
        e.to_string(),
        "cannot allocate 536870912 bytes for a bitmap of 4294967296 slots"
    );
}

#[test]
fn full_size_map_works_when_memory_is_there() {
    let mut m = full_size_map().expect("512 MiB available on the test machine");
    assert_eq!(m.max(), MAX_SLOTS as usize);
    assert!(m.allocate((MAX_SLOTS - 1) as i64).expect("in range"));
    assert_eq!(m.count(), 1);
    assert!(m.has((MAX_SLOTS - 1) as usize));
}

/// Restore now clears the levels in place; it must still leave exactly the snapshot's slots.
#[test]
fn restore_in_place_replaces_content() {
    let mut m = AllocationBitmap::with_rng(
        64 * 64 * 2 + 3,
        "test",
        Strategy::ContiguousScan,
        SplitMix64::new(1),
    )
    .expect("valid");
    for _ in 0..m.max() {
        m.allocate_next().unwrap().expect("free slot");
    }
    let (range, _) = m.snapshot();
    let mut one =
        AllocationBitmap::new(m.max() as u64, "test", Strategy::ContiguousScan).expect("valid");
    one.allocate(4096).expect("in range");
    let (_, data) = one.snapshot();
    m.restore(&range, &data).expect("restore");
    assert_eq!(m.count(), 1);
    assert_eq!(m.iter().collect::<Vec<_>>(), vec![4096]);
    assert_eq!(m.allocate_next().unwrap(), Some(0));
}
