//! Files of the manager: the per-pod `userns` file (read, atomic write, remove), the pods
//! directory listing, and the lock file. Everything stays inside the pods directory: it is held
//! open, and every operation is relative to a directory file descriptor (`openat`, `mkdirat`,
//! `renameat`, `unlinkat`), so no path is resolved twice and a directory swapped for a
//! symbolic link mid-operation is never followed. Pod UIDs are checked before they become
//! names, and directory names are bytes, as in Go.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{
    fstat, fsync, mkdirat, openat, renameat, statat, unlinkat, AtFlags, Dir, FileType,
    FlockOperation, Mode, OFlags, Stat, CWD,
};
use rustix::io::Errno;

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
/// Largest `userns` file read. The kubelet writes ~150 bytes; anything this big is not one of
/// its files, and reading it whole would cost the memory it claims.
pub const MAX_FILE_SIZE: u64 = 64 * 1024;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

fn io_err(op: &str, path: &Path, e: Errno) -> Error {
    Error::io(op, path, &std::io::Error::from(e))
}

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

/// `ls -l`'s word for a non-regular file, for error messages.
fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "named pipe",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        _ => "unknown file type",
    }
}

/// Refuses anything but a regular file of at most [`MAX_FILE_SIZE`] bytes.
fn check_mappings_file(path: &Path, st: &Stat) -> Result<()> {
    let t = FileType::from_raw_mode(st.st_mode);
    if t == FileType::Directory {
        // Go's text for reading a directory, as the kubelet reports it.
        return Err(Error::new(
            ErrorKind::Io,
            format!("read {}: is a directory", path.display()),
        ));
    }
    if t != FileType::RegularFile {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "read {}: not a regular file ({}), refusing to open it",
                path.display(),
                type_name(t)
            ),
        ));
    }
    let size = u64::try_from(st.st_size).unwrap_or(0);
    if size > MAX_FILE_SIZE {
        return Err(too_big(path, Some(size)));
    }
    Ok(())
}

fn too_big(path: &Path, size: Option<u64>) -> Error {
    let size = size.map(|s| format!(" of {s} bytes")).unwrap_or_default();
    Error::new(
        ErrorKind::Io,
        format!(
            "read {}: file{size} is larger than {MAX_FILE_SIZE} bytes, not a user namespace mappings file",
            path.display()
        ),
    )
}

/// The pods directory, held open.
#[derive(Debug)]
pub struct PodsDir {
    path: PathBuf,
    fd: OwnedFd,
}

/// One pod's directory, held open.
#[derive(Debug)]
pub struct PodDir {
    path: PathBuf,
    fd: OwnedFd,
}

impl PodsDir {
    /// Opens the pods directory; `None` when it does not exist. The manager that `owns` it
    /// refuses a missing one (the kubelet creates it before the manager starts; creating it would
    /// leave a lock file where no kubelet looks) and a symbolic link.
    pub fn open(path: &Path, owns: bool) -> Result<Option<Self>> {
        let flags = if owns {
            DIR_FLAGS
        } else {
            DIR_FLAGS.difference(OFlags::NOFOLLOW)
        };
        match openat(CWD, path, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(Self {
                path: path.to_path_buf(),
                fd,
            })),
            Err(Errno::NOENT) if !owns => Ok(None),
            Err(Errno::NOENT) => Err(Error::new(
                ErrorKind::Io,
                format!("pods directory {} does not exist", path.display()),
            )),
            Err(Errno::NOTDIR | Errno::LOOP) => Err(Error::new(
                ErrorKind::Io,
                format!("pods directory {} is not a directory", path.display()),
            )),
            Err(e) => Err(io_err("open", path, e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory of pod `name`; `None` when it does not exist and `create` is false. With
    /// `create` it is made when missing (Go's `os.MkdirAll(dir, 0755)` for this one level). A
    /// symbolic link is refused, never followed.
    pub fn pod(&self, name: &OsStr, create: bool) -> Result<Option<PodDir>> {
        let path = self.path.join(name);
        if create {
            match mkdirat(&self.fd, name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(io_err("mkdir", &path, e)),
            }
        }
        match openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Some(PodDir { path, fd })),
            Err(Errno::NOENT) if !create => Ok(None),
            // O_DIRECTORY | O_NOFOLLOW on a symbolic link fails with ENOTDIR (or ELOOP).
            Err(Errno::NOTDIR | Errno::LOOP) => {
                let link = statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
                let why = if link {
                    "is a symbolic link, refusing to follow it"
                } else {
                    "not a directory"
                };
                Err(Error::new(
                    ErrorKind::Io,
                    format!("mkdir {}: {why}", path.display()),
                ))
            }
            Err(e) => Err(io_err("open", &path, e)),
        }
    }

    /// The kubelet's `listPodsFromDisk`: names of the directories (not symbolic links) under
    /// the pods directory, as bytes, sorted like `os.ReadDir`.
    pub fn list_pods(&self) -> std::io::Result<Vec<OsString>> {
        let mut out = Vec::new();
        for e in Dir::read_from(&self.fd)? {
            let e = e?;
            let name = OsStr::from_bytes(e.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let t = match e.file_type() {
                FileType::Unknown => {
                    match statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => FileType::from_raw_mode(st.st_mode),
                        // Gone since the listing: as if it had not been listed.
                        Err(Errno::NOENT) => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
                t => t,
            };
            if t == FileType::Directory {
                out.push(name.to_os_string());
            }
        }
        out.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        Ok(out)
    }

    /// An exclusive `flock` on the lock file; released when dropped or when the process dies.
    pub fn lock(&self) -> Result<DirLock> {
        let path = self.path.join(LOCK_FILE);
        let fd = openat(
            &self.fd,
            LOCK_FILE,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io_err("open", &path, e))?;
        let mut file = File::from(fd);
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => {
                let mut holder = String::new();
                let _ = (&file).take(64).read_to_string(&mut holder);
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
                        self.path.display(),
                        path.display()
                    ),
                ));
            }
            Err(e) => return Err(io_err("flock", &path, e)),
        }
        // Best effort: the holder's PID helps an operator; the lock itself is the flock.
        let _ = file.set_len(0);
        let _ = writeln!(file, "{}", std::process::id());
        Ok(DirLock { _file: file, path })
    }
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl PodDir {
    /// Contents of `userns`, `None` when it does not exist (upstream's `ErrKeyNotFound`).
    /// Anything but a regular file of at most [`MAX_FILE_SIZE`] bytes is refused before it is
    /// read: a FIFO would block, a huge file would cost its size in memory.
    pub fn read_mappings(&self) -> Result<Option<Vec<u8>>> {
        let path = self.path.join(MAPPINGS_FILE);
        // Looked at before opening: opening a FIFO or a device can block or act on it.
        match statat(&self.fd, MAPPINGS_FILE, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => check_mappings_file(&path, &st)?,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(io_err("stat", &path, e)),
        }
        let flags =
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match openat(&self.fd, MAPPINGS_FILE, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(io_err("open", &path, e)),
        };
        // What was opened may have replaced what was looked at.
        check_mappings_file(&path, &fstat(&fd).map_err(|e| io_err("stat", &path, e))?)?;
        let mut buf = Vec::with_capacity(160);
        File::from(fd)
            .take(MAX_FILE_SIZE + 1)
            .read_to_end(&mut buf)
            .map_err(|e| Error::io("read", &path, &e))?;
        if buf.len() as u64 > MAX_FILE_SIZE {
            return Err(too_big(&path, None));
        }
        Ok(Some(buf))
    }

    /// Upstream's durable atomic write: temp file in the same directory, write, fsync, close,
    /// rename over `userns`, then fsync the directory. The temp file is removed on failure.
    pub fn write_mappings(&self, data: &[u8]) -> Result<()> {
        let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp_name = format!("{TMP_PREFIX}{}.{seq}{TMP_SUFFIX}", std::process::id());
        let tmp = self.path.join(&tmp_name);
        let path = self.path.join(MAPPINGS_FILE);
        let written = (|| {
            let fd = openat(
                &self.fd,
                tmp_name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| io_err("open", &tmp, e))?;
            let mut f = File::from(fd);
            f.write_all(data)
                .map_err(|e| Error::io("write", &tmp, &e))?;
            f.sync_all().map_err(|e| Error::io("sync", &tmp, &e))?;
            drop(f);
            renameat(&self.fd, tmp_name.as_str(), &self.fd, MAPPINGS_FILE).map_err(|e| {
                let e = std::io::Error::from(e);
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
            let _ = unlinkat(&self.fd, tmp_name.as_str(), AtFlags::empty());
            return Err(e);
        }
        fsync(&self.fd).map_err(|e| io_err("sync", &self.path, e))
    }

    /// Removes `userns`, ignoring errors as upstream does.
    pub fn remove_mappings(&self) {
        let _ = unlinkat(&self.fd, MAPPINGS_FILE, AtFlags::empty());
    }

    /// Removes temp files of ours that a crash left here; returns how many.
    pub fn remove_stale_temps(&self) -> usize {
        let Ok(entries) = Dir::read_from(&self.fd) else {
            return 0;
        };
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name();
            let b = name.to_bytes();
            if b.starts_with(TMP_PREFIX.as_bytes())
                && b.ends_with(TMP_SUFFIX.as_bytes())
                && statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
                && unlinkat(&self.fd, name, AtFlags::empty()).is_ok()
            {
                n += 1;
            }
        }
        n
    }
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
