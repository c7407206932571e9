//! Whether a filesystem can hold idmapped mounts, which a pod with `hostUsers: false` needs for
//! its volumes (tmpfs for projected service-account tokens, the pods directory's filesystem for
//! emptyDir and the rest). Probed the way container runtimes do: a detached copy of the mount
//! (`open_tree(OPEN_TREE_CLONE)`, or a fresh tmpfs from `fsopen`/`fsmount`) gets
//! `mount_setattr(MOUNT_ATTR_IDMAP)` with a throwaway user namespace. A detached mount belongs
//! to no mount namespace, so the node's mount table never changes, and closing the descriptor
//! drops it.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{errno_text, Error, ErrorKind, Result};
use crate::verify::{close, close_all_but, errno, follow_parent, pipe, read_msg, sys, MSG_LEN};

/// The oldest kernel for pods with user namespaces, as the Kubernetes documentation gives it:
/// Linux 6.3 added idmapped tmpfs mounts, which every pod's projected service-account token
/// needs. The kubelet itself does not check it.
pub const MIN_KERNEL_FOR_PODS: [u64; 2] = [6, 3];

/// The verdict of one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdmapStatus {
    /// The kernel made an idmapped copy of the mount.
    Supported,
    /// The kernel refused: the filesystem (or the kernel) has no idmapped mounts.
    Unsupported,
    /// The probe itself could not run (no such directory, no privilege, no user namespace).
    CannotProbe,
}

impl IdmapStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IdmapStatus::Supported => "supported",
            IdmapStatus::Unsupported => "unsupported",
            IdmapStatus::CannotProbe => "cannot-probe",
        }
    }
}

/// What one probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "IdmapProbe"))]
pub struct IdmapProbe {
    /// The directory probed, or `tmpfs` for the scratch tmpfs.
    pub target: String,
    /// Filesystem type (`statfs` magic name, or its hex value when unknown); None when unknown.
    pub fs_type: Option<String>,
    /// `supported`, `unsupported` or `cannot-probe`.
    pub status: String,
    /// The errno name of the refusal or failure (e.g. `EINVAL`).
    pub errno: Option<String>,
    /// The failing call and the kernel's text; empty when supported.
    pub detail: String,
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// `struct mount_attr` (MOUNT_ATTR_SIZE_VER0).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// An owned descriptor, closed on drop.
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        close(&mut self.0);
    }
}

fn errno_name(e: i32) -> String {
    match e {
        libc::EINVAL => "EINVAL",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::ENOENT => "ENOENT",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOTDIR => "ENOTDIR",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        _ => return format!("errno {e}"),
    }
    .to_string()
}

fn failure(status: IdmapStatus, call: &str, e: i32) -> (IdmapStatus, Option<String>, String) {
    let text = errno_text(&std::io::Error::from_raw_os_error(e));
    (status, Some(errno_name(e)), format!("{call}: {text}"))
}

/// A user namespace mapping 0 → 65536 (65536 IDs), held by its `/proc/<pid>/ns/user`
/// descriptor: a forked child unshares it, the parent writes the maps and opens the file, and
/// the child exits (the descriptor keeps the namespace alive). Needs root.
fn throwaway_userns() -> Result<Fd> {
    let mut to_child = pipe()?;
    let mut to_parent = match pipe() {
        Ok(p) => p,
        Err(e) => {
            close(&mut to_child.r);
            close(&mut to_child.w);
            return Err(e);
        }
    };
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child runs only async-signal-safe system calls on stack values and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let (w, r) = (to_parent.w, to_child.r);
        // SAFETY: the parent's pipe ends; this process never uses them.
        unsafe {
            libc::close(to_child.w);
            libc::close(to_parent.r);
        }
        follow_parent(parent);
        close_all_but([w, r]);
        let mut m = [0u8; MSG_LEN];
        // SAFETY: raw system calls on values owned by this process; the child never returns.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                m[0] = 1;
                m[1..5].copy_from_slice(&(errno() as u32).to_ne_bytes());
            }
            libc::write(w, m.as_ptr().cast(), MSG_LEN);
            // Stays until the parent closes its end (EOF) or dies.
            let mut b = 0u8;
            while libc::read(r, (&mut b as *mut u8).cast(), 1) < 0 && errno() == libc::EINTR {}
            libc::_exit(0);
        }
    }
    let fork_err = (pid < 0).then(|| sys("fork"));
    close(&mut to_child.r);
    close(&mut to_parent.w);
    let result = match fork_err {
        Some(e) => Err(e),
        None => userns_of_child(pid, to_parent.r),
    };
    // EOF tells the child to exit; then it is reaped.
    close(&mut to_child.w);
    close(&mut to_parent.r);
    if pid > 0 {
        let mut st = 0;
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
    }
    result
}

fn userns_of_child(pid: i32, from_child: i32) -> Result<Fd> {
    let m = read_msg(from_child)
        .ok_or_else(|| Error::new(ErrorKind::Io, "user namespace child exited early"))?;
    if m[0] != 0 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&m[1..5]);
        let e = std::io::Error::from_raw_os_error(u32::from_ne_bytes(b) as i32);
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("unshare(CLONE_NEWUSER): {}", errno_text(&e)),
        ));
    }
    for file in ["uid_map", "gid_map"] {
        let p = PathBuf::from(format!("/proc/{pid}/{file}"));
        std::fs::write(&p, "0 65536 65536\n").map_err(|e| Error::io("write", &p, &e))?;
    }
    let ns = CString::new(format!("/proc/{pid}/ns/user"))
        .map_err(|_| Error::new(ErrorKind::Io, "path contains NUL"))?;
    // SAFETY: opens a NUL-terminated path.
    let fd = unsafe { libc::open(ns.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(sys("open user namespace"));
    }
    Ok(Fd(fd))
}

/// Sets MOUNT_ATTR_IDMAP on the detached mount `mnt`.
fn idmap(mnt: &Fd, userns: &Fd) -> (IdmapStatus, Option<String>, String) {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.0 as u64,
    };
    // SAFETY: mount_setattr reads `attr` (size given) and an empty NUL-terminated path.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mnt.0,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        return (IdmapStatus::Supported, None, String::new());
    }
    let e = errno();
    // EINVAL: the filesystem lacks FS_ALLOW_IDMAP (or the kernel the attribute); ENOSYS: no
    // mount_setattr at all (before Linux 5.12). EPERM is about the caller, not the filesystem.
    let status = match e {
        libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP => IdmapStatus::Unsupported,
        _ => IdmapStatus::CannotProbe,
    };
    failure(status, "mount_setattr(MOUNT_ATTR_IDMAP)", e)
}

fn fs_type(path: &Path) -> Option<String> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs fills a zeroed struct from a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let magic = st.f_type as u64 & 0xffff_ffff;
    Some(
        match magic {
            0x0102_1994 => "tmpfs",
            0xef53 => "ext4",
            0x5846_5342 => "xfs",
            0x9123_683e => "btrfs",
            0x794c_7630 => "overlay",
            0x6573_5546 => "fuse",
            0x2fc1_2fc1 => "zfs",
            0x6969 => "nfs",
            0xff53_4d42 | 0xfe53_4d42 => "cifs",
            0x0102_1997 => "9p",
            0x6a65_6a65 => "virtiofs",
            0x7366_746e => "ntfs",
            0x6462_6720 => "debugfs",
            0x8584_58f6 => "ramfs",
            0x4d44 => "vfat",
            _ => return Some(format!("0x{magic:x}")),
        }
        .to_string(),
    )
}

fn probe_path(path: &Path, userns: &Fd) -> (IdmapStatus, Option<String>, String) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return (
            IdmapStatus::CannotProbe,
            None,
            "path contains NUL".to_string(),
        );
    };
    // SAFETY: open_tree reads a NUL-terminated path; the result is a descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if fd < 0 {
        let e = errno();
        let status = if e == libc::ENOSYS {
            IdmapStatus::Unsupported
        } else {
            IdmapStatus::CannotProbe
        };
        return failure(status, "open_tree(OPEN_TREE_CLONE)", e);
    }
    idmap(&Fd(fd as i32), userns)
}

fn probe_tmpfs(userns: &Fd) -> (IdmapStatus, Option<String>, String) {
    // SAFETY: fsopen reads a NUL-terminated name.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
    if fs < 0 {
        let e = errno();
        let status = if e == libc::ENOSYS {
            IdmapStatus::Unsupported
        } else {
            IdmapStatus::CannotProbe
        };
        return failure(status, "fsopen(tmpfs)", e);
    }
    let fs = Fd(fs as i32);
    // SAFETY: FSCONFIG_CMD_CREATE takes no key or value.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.0,
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    if r != 0 {
        return failure(
            IdmapStatus::CannotProbe,
            "fsconfig(FSCONFIG_CMD_CREATE)",
            errno(),
        );
    }
    // SAFETY: fsmount on a created filesystem context; returns a descriptor or -1.
    let mnt = unsafe { libc::syscall(libc::SYS_fsmount, fs.0, FSMOUNT_CLOEXEC, 0u32) };
    if mnt < 0 {
        return failure(IdmapStatus::CannotProbe, "fsmount", errno());
    }
    idmap(&Fd(mnt as i32), userns)
}

fn report(
    target: String,
    fs: Option<String>,
    r: (IdmapStatus, Option<String>, String),
) -> IdmapProbe {
    IdmapProbe {
        target,
        fs_type: fs,
        status: r.0.as_str().to_string(),
        errno: r.1,
        detail: r.2,
    }
}

/// Probes a scratch tmpfs (when `tmpfs`) and then each directory of `paths`, in that order.
/// Never fails: a probe that cannot run says why. Needs root (CAP_SYS_ADMIN).
pub fn probe_idmap_mounts(tmpfs: bool, paths: &[PathBuf]) -> Vec<IdmapProbe> {
    let userns = throwaway_userns();
    let mut out = Vec::with_capacity(paths.len() + 1);
    let no_userns = |e: &Error| {
        (
            IdmapStatus::CannotProbe,
            None,
            format!("throwaway user namespace: {}", e.message()),
        )
    };
    if tmpfs {
        let r = match &userns {
            Ok(ns) => probe_tmpfs(ns),
            Err(e) => no_userns(e),
        };
        out.push(report("tmpfs".to_string(), Some("tmpfs".to_string()), r));
    }
    for p in paths {
        let target = p.display().to_string();
        let r = match std::fs::metadata(p) {
            Err(e) => (
                IdmapStatus::CannotProbe,
                e.raw_os_error().map(errno_name),
                format!("stat: {}", errno_text(&e)),
            ),
            Ok(m) if !m.is_dir() => (
                IdmapStatus::CannotProbe,
                Some("ENOTDIR".to_string()),
                "not a directory".to_string(),
            ),
            Ok(_) => match &userns {
                Ok(ns) => probe_path(p, ns),
                Err(e) => no_userns(e),
            },
        };
        out.push(report(target, fs_type(p), r));
    }
    out
}
