//! Proof in the kernel that a mapping does what the file says: a child process enters a new
//! user namespace, the parent (root in the initial namespace) writes the pod's range to
//! `/proc/<pid>/uid_map` and `gid_map`, the child becomes uid/gid 0 inside and creates a file.
//! The report holds what each side observed: ids inside, ids in `/proc/<pid>/status` outside,
//! and the owner of the file on disk.
//!
//! The child runs between `fork` and `_exit` without allocating or locking (the parent may be
//! multi-threaded), using only raw system calls on memory prepared before the fork.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// What a mapping check saw: a process in a new user namespace with the range, uid 0 inside.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "UsernsVerifyReport"))]
pub struct VerifyReport {
    /// Pod UID, when the range came from a pod's `userns` file.
    pub pod: Option<String>,
    /// First host ID of the range (what uid/gid 0 inside maps to).
    pub host_id: u32,
    /// Number of IDs in the range.
    pub length: u32,
    /// Host PID of the checking process.
    pub pid: u32,
    /// `getuid()` inside the namespace after `setresuid(0)`.
    pub inside_uid: u32,
    /// `getgid()` inside the namespace after `setresgid(0)`.
    pub inside_gid: u32,
    /// Real uid of the same process, seen from the initial namespace.
    pub outside_uid: u32,
    /// Real gid of the same process, seen from the initial namespace.
    pub outside_gid: u32,
    /// Host owner uid of a file the process created inside the namespace.
    pub file_uid: u32,
    /// Host owner gid of that file.
    pub file_gid: u32,
    /// `/proc/<pid>/uid_map` as read from the host.
    pub uid_map: String,
    /// `/proc/<pid>/gid_map` as read from the host.
    pub gid_map: String,
    /// Every observation agrees: 0 inside is `hostId` outside.
    pub ok: bool,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

pub(crate) fn sys(what: &str) -> Error {
    let e = std::io::Error::last_os_error();
    let kind = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => ErrorKind::Permission,
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::ENOSPC) => ErrorKind::Unsupported,
        _ => ErrorKind::Io,
    };
    Error::new(kind, format!("{what}: {}", crate::error::errno_text(&e)))
}

/// Child-side messages: a tag byte, then three u32 values.
pub(crate) const MSG_LEN: usize = 13;
const TAG_READY: u8 = 1;
const TAG_RESULT: u8 = 2;
const TAG_FAIL: u8 = 3;

pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Closes every descriptor from 3 up except `keep` (both >= 3). Without an exec, O_CLOEXEC does
/// nothing, and an inherited copy of the flock'ed pods-directory lock would keep the lock held
/// for as long as this child lives.
pub(crate) fn close_all_but(mut keep: [i32; 2]) {
    keep.sort_unstable();
    let mut lo = 3u32;
    for k in keep {
        // A kept descriptor below 3 (stdin closed by the embedder) needs no gap.
        let Ok(k) = u32::try_from(k) else { continue };
        if k >= lo {
            if k > lo {
                close_range(lo, k - 1);
            }
            lo = k + 1;
        }
    }
    close_range(lo, u32::MAX);
}

fn close_range(lo: u32, hi: u32) {
    // SAFETY: close_range only closes descriptors; none in the range is used by this process.
    if unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) } == 0 {
        return;
    }
    // Kernels before 5.9: close one by one up to the descriptor limit.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills a stack struct.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur.min(1 << 20) as u32
    } else {
        1 << 16
    };
    for fd in lo..hi.min(max.saturating_sub(1)).saturating_add(1) {
        // SAFETY: as above.
        unsafe { libc::close(fd as i32) };
    }
}

/// Dies with SIGKILL when the parent does, and exits now if it already has. Set again after
/// each credential change, which clears the setting. The signal follows the forking thread,
/// which waits for (and reaps) the child before `verify_mapping` returns; should it go first
/// anyway, the closed pipe ends still end the child at its next read.
pub(crate) fn follow_parent(parent: libc::pid_t) {
    // SAFETY: prctl/getppid/_exit are plain system calls.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// Runs in the forked child: raw system calls only. `to_parent` and `from_parent` are the
/// child's ends; `unused` are the parent's ends, closed first so that the parent's death
/// reads as EOF here.
fn child(
    to_parent: i32,
    from_parent: i32,
    unused: [i32; 2],
    parent: libc::pid_t,
    probe: &CString,
) -> ! {
    for fd in unused {
        // SAFETY: the parent's pipe ends; this process never uses them.
        unsafe { libc::close(fd) };
    }
    follow_parent(parent);
    close_all_but([to_parent, from_parent]);
    let send = |tag: u8, a: u32, b: u32, c: u32| {
        let mut m = [0u8; MSG_LEN];
        m[0] = tag;
        m[1..5].copy_from_slice(&a.to_ne_bytes());
        m[5..9].copy_from_slice(&b.to_ne_bytes());
        m[9..13].copy_from_slice(&c.to_ne_bytes());
        // SAFETY: writes a stack buffer to a pipe we own.
        unsafe { libc::write(to_parent, m.as_ptr().cast(), MSG_LEN) };
    };
    let wait = || {
        let mut b = 0u8;
        loop {
            // SAFETY: reads one byte into a stack variable.
            let n = unsafe { libc::read(from_parent, (&mut b as *mut u8).cast(), 1) };
            if n >= 0 || errno() != libc::EINTR {
                return n == 1;
            }
        }
    };
    // SAFETY: plain system calls on values owned by this process; the child never returns.
    unsafe {
        if libc::unshare(libc::CLONE_NEWUSER) != 0 {
            send(TAG_FAIL, 1, errno() as u32, 0);
            libc::_exit(1);
        }
        send(TAG_READY, 0, 0, 0);
        if !wait() {
            libc::_exit(1);
        }
        // Supplementary groups of the parent are unmapped here; dropping them may fail, which
        // does not affect the check.
        libc::setgroups(0, std::ptr::null());
        if libc::setresgid(0, 0, 0) != 0 {
            send(TAG_FAIL, 2, errno() as u32, 0);
            libc::_exit(1);
        }
        if libc::setresuid(0, 0, 0) != 0 {
            send(TAG_FAIL, 3, errno() as u32, 0);
            libc::_exit(1);
        }
        follow_parent(parent);
        let uid = libc::getuid();
        let gid = libc::getgid();
        let fd = libc::open(
            probe.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC,
            0o600,
        );
        let open_err = if fd < 0 { errno() as u32 } else { 0 };
        if fd >= 0 {
            libc::close(fd);
        }
        send(TAG_RESULT, uid, gid, open_err);
        // Stay alive until the parent has read /proc/<pid>/status.
        wait();
        libc::_exit(0);
    }
}

pub(crate) struct Pipe {
    pub(crate) r: i32,
    pub(crate) w: i32,
}

pub(crate) fn pipe() -> Result<Pipe> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(sys("pipe2"));
    }
    Ok(Pipe {
        r: fds[0],
        w: fds[1],
    })
}

pub(crate) fn close(fd: &mut i32) {
    if *fd >= 0 {
        // SAFETY: closes a descriptor this module opened, once.
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

pub(crate) fn read_msg(fd: i32) -> Option<[u8; MSG_LEN]> {
    let mut m = [0u8; MSG_LEN];
    let mut got = 0;
    while got < MSG_LEN {
        // SAFETY: reads into the remaining part of a stack buffer.
        let n = unsafe { libc::read(fd, m[got..].as_mut_ptr().cast(), MSG_LEN - got) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            return None;
        }
        got += n as usize;
    }
    Some(m)
}

fn field(m: &[u8; MSG_LEN], i: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&m[1 + 4 * i..5 + 4 * i]);
    u32::from_ne_bytes(b)
}

/// Real id (first column) of the `Uid:`/`Gid:` line of `/proc/<pid>/status`.
fn status_id(status: &str, key: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Deletes the probe directory and reaps the child on every path out of `verify_mapping`.
struct Cleanup {
    pid: i32,
    dir: PathBuf,
    fds: Vec<i32>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for fd in &mut self.fds {
            close(fd);
        }
        if self.pid > 0 {
            let mut st = 0;
            // SAFETY: reaps our own child; SIGKILL first in case it is still waiting.
            unsafe {
                if libc::waitpid(self.pid, &mut st, libc::WNOHANG) == 0 {
                    libc::kill(self.pid, libc::SIGKILL);
                    libc::waitpid(self.pid, &mut st, 0);
                }
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Reads `<pods_dir>/<pod>/userns` with upstream's checks and verifies its mapping; the report
/// names the pod.
pub fn verify_pod(pods_dir: &Path, pod: &str) -> Result<VerifyReport> {
    let (host_id, length) = crate::manager::read_pod_mapping(pods_dir, pod)?;
    let report = verify_mapping(host_id, length)?;
    Ok(VerifyReport {
        pod: Some(pod.to_string()),
        ..report
    })
}

/// Starts a process in a new user namespace mapped `0 → host_id` for `length` IDs (UIDs and
/// GIDs) and reports what the kernel shows. Needs root (CAP_SETUID/CAP_SETGID and CAP_CHOWN)
/// in the initial namespace.
pub fn verify_mapping(host_id: u32, length: u32) -> Result<VerifyReport> {
    if length == 0 || u64::from(host_id) + u64::from(length) > 1 << 32 {
        return Err(Error::new(
            ErrorKind::Config,
            format!("mapping {host_id}+{length} does not fit in 32-bit IDs"),
        ));
    }
    if host_id < crate::config::UNIT_LENGTH {
        // The kubelet never assigns these (its pool starts at idsPerPod or later); only a
        // wrapped slot ID ends here, and then root in the pod is a host system ID, root at 0.
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "mapping 0 -> {host_id} puts container root on host ID {host_id}, below {}: not a range the kubelet assigns",
                crate::config::UNIT_LENGTH
            ),
        ));
    }
    let dir = std::env::temp_dir().join(format!(
        "kubenode-userns-verify-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| Error::io("mkdir", &dir, &e))?;
    let mut guard = Cleanup {
        pid: -1,
        dir: dir.clone(),
        fds: Vec::new(),
    };
    // The child is host_id outside once mapped: it needs to own the directory to write in it.
    std::os::unix::fs::chown(&dir, Some(host_id), Some(host_id))
        .map_err(|e| Error::io("chown", &dir, &e))?;
    let probe_path = dir.join("probe");
    let probe = CString::new(probe_path.as_os_str().as_bytes())
        .map_err(|_| Error::new(ErrorKind::Io, "temporary path contains NUL"))?;

    // Each pipe goes into the guard as soon as it exists, so a failing second pipe2 does not
    // leak the first.
    let mut to_child = pipe()?;
    guard.fds.extend([to_child.r, to_child.w]);
    let mut to_parent = pipe()?;
    guard.fds.extend([to_parent.r, to_parent.w]);

    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child only runs `child`, which uses async-signal-safe system calls and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(sys("fork"));
    }
    if pid == 0 {
        child(
            to_parent.w,
            to_child.r,
            [to_child.w, to_parent.r],
            parent,
            &probe,
        );
    }
    guard.pid = pid;
    close(&mut to_child.r);
    close(&mut to_parent.w);
    guard.fds = vec![to_child.w, to_parent.r];

    let fail = |m: [u8; MSG_LEN]| {
        let step = match field(&m, 0) {
            1 => "unshare(CLONE_NEWUSER)",
            2 => "setresgid(0) inside the namespace",
            _ => "setresuid(0) inside the namespace",
        };
        let e = std::io::Error::from_raw_os_error(field(&m, 1) as i32);
        Error::new(
            ErrorKind::Unsupported,
            format!("{step}: {}", crate::error::errno_text(&e)),
        )
    };
    let ready = read_msg(to_parent.r)
        .ok_or_else(|| Error::new(ErrorKind::Io, "user namespace child exited early"))?;
    if ready[0] == TAG_FAIL {
        return Err(fail(ready));
    }
    let map = format!("0 {host_id} {length}\n");
    for file in ["uid_map", "gid_map"] {
        let p = PathBuf::from(format!("/proc/{pid}/{file}"));
        fs::write(&p, &map).map_err(|e| {
            let err = Error::io("write", &p, &e);
            if u64::from(host_id) + u64::from(length) > u64::from(u32::MAX) {
                // The kernel never maps ID 4294967295 ((uid_t)-1); upstream can still hand out
                // the pool's last range (kubernetes/kubernetes#139916).
                return Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{err} (the range includes ID 4294967295, which the kernel cannot map)"
                    ),
                );
            }
            err
        })?;
    }
    // SAFETY: writes one byte from a stack variable to our pipe.
    if unsafe { libc::write(to_child.w, [1u8].as_ptr().cast(), 1) } != 1 {
        return Err(sys("write to user namespace child"));
    }
    let res = read_msg(to_parent.r)
        .ok_or_else(|| Error::new(ErrorKind::Io, "user namespace child exited early"))?;
    if res[0] == TAG_FAIL {
        return Err(fail(res));
    }
    let status_path = PathBuf::from(format!("/proc/{pid}/status"));
    let status =
        fs::read_to_string(&status_path).map_err(|e| Error::io("read", &status_path, &e))?;
    let uid_map = fs::read_to_string(format!("/proc/{pid}/uid_map")).unwrap_or_default();
    let gid_map = fs::read_to_string(format!("/proc/{pid}/gid_map")).unwrap_or_default();
    let open_err = field(&res, 2);
    if open_err != 0 {
        let e = std::io::Error::from_raw_os_error(open_err as i32);
        return Err(Error::io(
            "open (inside the user namespace)",
            &probe_path,
            &e,
        ));
    }
    let meta = fs::metadata(&probe_path).map_err(|e| Error::io("stat", &probe_path, &e))?;
    let (outside_uid, outside_gid) = match (status_id(&status, "Uid:"), status_id(&status, "Gid:"))
    {
        (Some(u), Some(g)) => (u, g),
        _ => {
            return Err(Error::new(
                ErrorKind::Io,
                format!("no Uid/Gid lines in {}", status_path.display()),
            ))
        }
    };
    let mut report = VerifyReport {
        pod: None,
        host_id,
        length,
        pid: pid as u32,
        inside_uid: field(&res, 0),
        inside_gid: field(&res, 1),
        outside_uid,
        outside_gid,
        file_uid: meta.uid(),
        file_gid: meta.gid(),
        uid_map: uid_map.split_whitespace().collect::<Vec<_>>().join(" "),
        gid_map: gid_map.split_whitespace().collect::<Vec<_>>().join(" "),
        ok: false,
    };
    report.ok = report.inside_uid == 0
        && report.inside_gid == 0
        && report.outside_uid == host_id
        && report.outside_gid == host_id
        && report.file_uid == host_id
        && report.file_gid == host_id;
    Ok(report)
}
