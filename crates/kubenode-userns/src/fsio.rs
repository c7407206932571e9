//! Files of the manager: the per-pod `userns` file (read, atomic write, remove), the pods
//! directory listing, and the lock file. Everything stays inside the pods directory: pod UIDs
//! are checked before they become paths, and symbolic links are never followed.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// Upstream's `mappingsFile`.
pub const MAPPINGS_FILE: &str = "userns";
/// Prefix of our temporary files. Upstream's FileStore uses `.` followed by digits; ours are
/// recognisable so that restore can remove the ones a crash left behind without touching any
/// file the kubelet owns.
pub const TMP_PREFIX: &str = ".userns.";
pub const TMP_SUFFIX: &str = ".tmp";
/// Lock file inside the pods directory; a regular file, so the kubelet's pod listing (which
/// keeps directories only) never sees it.
pub const LOCK_FILE: &str = ".kubenode-userns.lock";

/// A pod UID must name exactly one directory entry inside the pods directory.
pub fn check_pod_uid(uid: &str) -> Result<()> {
    let why = if uid.is_empty() {
        Some("must not be empty")
    } else if uid == "." || uid == ".." {
        Some("must not be \".\" or \"..\"")
    } else if uid.contains('/') {
        Some("must not contain \"/\"")
    } else if uid.contains('\0') {
        Some("must not contain NUL")
    } else if uid.len() > 255 {
        Some("must not be longer than 255 bytes")
    } else {
        None
    };
    match why {
        Some(w) => Err(Error::new(
            ErrorKind::InvalidPodUid,
            format!("invalid pod UID {uid:?}: {w}"),
        )),
        None => Ok(()),
    }
}

/// Go's `os.MkdirAll(dir, 0755)` for the one level below the pods directory, except that a
/// symbolic link is refused rather than followed.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "mkdir {}: is a symbolic link, refusing to follow it",
                    dir.display()
                ),
            ))
        }
        Ok(_) => {
            return Err(Error::new(
                ErrorKind::Io,
                format!("mkdir {}: not a directory", dir.display()),
            ))
        }
        Err(_) => {}
    }
    match fs::DirBuilder::new().mode(0o755).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(Error::io("mkdir", dir, &e)),
    }
}

/// Contents of `<dir>/userns`, `None` when it does not exist (upstream's `ErrKeyNotFound`).
pub fn read_mappings(dir: &Path) -> Result<Option<Vec<u8>>> {
    let path = dir.join(MAPPINGS_FILE);
    let mut f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", &path, &e)),
    };
    let mut buf = Vec::with_capacity(160);
    std::io::Read::read_to_end(&mut f, &mut buf).map_err(|e| Error::io("read", &path, &e))?;
    Ok(Some(buf))
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Upstream's durable atomic write: temp file in the same directory, write, fsync, close,
/// rename over `userns`, then fsync the directory. The temp file is removed on failure.
pub fn write_mappings(dir: &Path, data: &[u8]) -> Result<()> {
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(
        "{TMP_PREFIX}{}.{seq}{TMP_SUFFIX}",
        std::process::id()
    ));
    let path = dir.join(MAPPINGS_FILE);
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(|e| Error::io("open", &tmp, &e))?;
        f.write_all(data)
            .map_err(|e| Error::io("write", &tmp, &e))?;
        f.sync_all().map_err(|e| Error::io("sync", &tmp, &e))?;
        drop(f);
        fs::rename(&tmp, &path).map_err(|e| {
            Error::new(
                if e.kind() == std::io::ErrorKind::PermissionDenied {
                    ErrorKind::Permission
                } else {
                    ErrorKind::Io
                },
                format!(
                    "rename {} {}: {}",
                    tmp.display(),
                    path.display(),
                    crate::error::errno_text(&e)
                ),
            )
        })
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    let d = File::open(dir).map_err(|e| Error::io("open", dir, &e))?;
    d.sync_all().map_err(|e| Error::io("sync", dir, &e))
}

/// Removes `<dir>/userns`, ignoring errors as upstream does.
pub fn remove_mappings(dir: &Path) {
    let _ = fs::remove_file(dir.join(MAPPINGS_FILE));
}

/// Removes temp files of ours that a crash left in `dir`; returns how many.
pub fn remove_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let b = name.as_bytes();
        if b.starts_with(TMP_PREFIX.as_bytes())
            && b.ends_with(TMP_SUFFIX.as_bytes())
            && e.file_type().map(|t| t.is_file()).unwrap_or(false)
            && fs::remove_file(e.path()).is_ok()
        {
            n += 1;
        }
    }
    n
}

/// The kubelet's `listPodsFromDisk`: names of the directories (not symbolic links) under the
/// pods directory, sorted by name like `os.ReadDir`.
pub fn list_pods(pods_dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in fs::read_dir(pods_dir)? {
        let e = e?;
        if !e.file_type()?.is_dir() {
            continue;
        }
        let name = e.file_name();
        match name.to_str() {
            Some(s) => out.push(s.to_string()),
            None => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("pod directory name {:?} is not UTF-8", OsStr::new(&name)),
                ))
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Renders a `list_pods` error like Go's `os.ReadDir` error.
pub fn list_error(pods_dir: &Path, e: &std::io::Error) -> Error {
    if e.raw_os_error().is_some() {
        Error::io("open", pods_dir, e)
    } else {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

/// An exclusive `flock` on the lock file; released when dropped or when the process dies.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    pub path: PathBuf,
}

pub fn lock_pods_dir(pods_dir: &Path) -> Result<DirLock> {
    match fs::symlink_metadata(pods_dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Error::new(
                ErrorKind::Io,
                format!("pods directory {} is not a directory", pods_dir.display()),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The kubelet creates its pods directory before the manager starts; a missing one is
            // a wrong path, and creating it would leave a lock file where no kubelet looks.
            return Err(Error::new(
                ErrorKind::Io,
                format!("pods directory {} does not exist", pods_dir.display()),
            ));
        }
        Err(e) => return Err(Error::io("stat", pods_dir, &e)),
    }
    let path = pods_dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| Error::io("open", &path, &e))?;
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let holder = fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim();
            let who = if holder.is_empty() {
                String::new()
            } else {
                format!(" by process {holder}")
            };
            return Err(Error::new(
                ErrorKind::Locked,
                format!(
                    "pods directory {} is already managed by another user namespace manager (lock {} is held{who})",
                    pods_dir.display(),
                    path.display()
                ),
            ));
        }
        return Err(Error::io("flock", &path, &e));
    }
    // Best effort: the holder's PID helps an operator; the lock itself is the flock.
    let _ = file.set_len(0);
    let _ = writeln!(file, "{}", std::process::id());
    Ok(DirLock { _file: file, path })
}
