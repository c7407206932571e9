//! The one rule for opening a namespace file (`/proc/<pid>/ns/net`, `/var/run/netns/NAME`)
//! before `setns`: whatever the path names, opening it never blocks and never has side
//! effects, and only a namespace of the expected type is returned.
//!
//! 1. `O_PATH` open and `fstatfs`: anything not on nsfs (a FIFO, a device, a regular file) is
//!    refused before it is really opened, so no FIFO wait and no device open handler runs.
//! 2. `O_RDONLY | O_NONBLOCK | O_CLOEXEC` open (`setns` needs a real descriptor), then
//!    `fstatfs` again on what was actually opened (the path may have been swapped meanwhile)
//!    and `NS_GET_NSTYPE` to check the kind.
// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::CString;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use thiserror::Error;

/// `f_type` of nsfs (`include/uapi/linux/magic.h`).
pub const NSFS_MAGIC: u32 = 0x6e73_6673;
/// `NS_GET_NSTYPE`, `_IO(0xb7, 0x3)` (Linux 4.11).
const NS_GET_NSTYPE: libc::c_ulong = 0xb703;

/// The namespace kinds kubenode joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Net,
    Ipc,
    Uts,
}

impl Kind {
    /// Name as in `/proc/<pid>/ns/<name>`.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Net => "net",
            Kind::Ipc => "ipc",
            Kind::Uts => "uts",
        }
    }

    /// The `CLONE_NEW*` flag `setns` and `NS_GET_NSTYPE` use.
    pub fn flag(self) -> libc::c_int {
        match self {
            Kind::Net => libc::CLONE_NEWNET,
            Kind::Ipc => libc::CLONE_NEWIPC,
            Kind::Uts => libc::CLONE_NEWUTS,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Name of a `CLONE_NEW*` value from `NS_GET_NSTYPE`, for messages.
fn type_name(flag: libc::c_int) -> &'static str {
    match flag {
        libc::CLONE_NEWNET => "net",
        libc::CLONE_NEWIPC => "ipc",
        libc::CLONE_NEWUTS => "uts",
        libc::CLONE_NEWNS => "mnt",
        libc::CLONE_NEWPID => "pid",
        libc::CLONE_NEWUSER => "user",
        libc::CLONE_NEWCGROUP => "cgroup",
        0x80 => "time",
        _ => "unknown",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// The path could not be opened or inspected; `errno` as the kernel reported it.
    #[error("opening namespace {path}: {message}")]
    Open {
        kind: Kind,
        path: String,
        message: String,
        errno: Option<i32>,
    },
    /// Not a namespace file at all (a FIFO, a device, a regular file, a directory).
    #[error("{path} is not a namespace file (not on nsfs); expected a {kind} namespace such as /proc/<pid>/ns/{kind}")]
    NotNamespace { kind: Kind, path: String },
    /// A namespace of another kind.
    #[error("{path} is a {actual} namespace, not a {kind} namespace")]
    WrongKind {
        kind: Kind,
        path: String,
        actual: &'static str,
    },
}

impl Error {
    /// The kernel refused access (EACCES/EPERM), as opposed to a wrong or missing file.
    pub fn is_permission(&self) -> bool {
        matches!(self, Error::Open { errno: Some(e), .. } if *e == libc::EACCES || *e == libc::EPERM)
    }

    /// The path names something that is not a namespace of the expected kind: bad input.
    pub fn is_wrong_file(&self) -> bool {
        matches!(self, Error::NotNamespace { .. } | Error::WrongKind { .. })
    }
}

/// An open namespace file of a known kind, ready for [`NsFile::join`].
#[derive(Debug)]
pub struct NsFile {
    file: File,
    kind: Kind,
    path: String,
}

impl NsFile {
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The path as given, for messages.
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    /// Moves the *calling thread* into this namespace (`setns(2)`); other threads stay put.
    pub fn join(&self) -> io::Result<()> {
        // SAFETY: a valid open nsfs descriptor and its own CLONE_NEW* flag.
        if unsafe { libc::setns(self.file.as_raw_fd(), self.kind.flag()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

fn open_raw(path: &CString, flags: libc::c_int) -> io::Result<File> {
    // SAFETY: a NUL-terminated path; the returned descriptor is owned by the File.
    let fd: RawFd = unsafe { libc::open(path.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn is_nsfs(f: &File) -> io::Result<bool> {
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: a valid descriptor and a buffer of the right size.
    if unsafe { libc::fstatfs(f.as_raw_fd(), st.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatfs succeeded and filled the struct.
    let f_type = unsafe { st.assume_init() }.f_type;
    // `f_type` is signed and of platform width; the magic is its low 32 bits.
    #[allow(clippy::unnecessary_cast)]
    Ok(f_type as u64 as u32 == NSFS_MAGIC)
}

/// Opens the namespace file at `path`, which must be a `kind` namespace. Never blocks on FIFOs
/// and never opens anything but an nsfs file for reading.
pub fn open(path: &Path, kind: Kind) -> Result<NsFile, Error> {
    let shown = path.display().to_string();
    let io_err = |e: io::Error| Error::Open {
        kind,
        path: shown.clone(),
        message: e.to_string(),
        errno: e.raw_os_error(),
    };
    let not_ns = || Error::NotNamespace {
        kind,
        path: shown.clone(),
    };
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Open {
        kind,
        path: shown.clone(),
        message: "path contains a NUL byte".into(),
        errno: None,
    })?;
    let probe = open_raw(&c, libc::O_PATH | libc::O_CLOEXEC).map_err(io_err)?;
    if !is_nsfs(&probe).map_err(io_err)? {
        return Err(not_ns());
    }
    drop(probe);
    let file = open_raw(&c, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC).map_err(io_err)?;
    if !is_nsfs(&file).map_err(io_err)? {
        return Err(not_ns());
    }
    // SAFETY: an ioctl without argument on a valid descriptor.
    let actual = unsafe { libc::ioctl(file.as_raw_fd(), NS_GET_NSTYPE as _) };
    if actual < 0 {
        let e = io::Error::last_os_error();
        // Kernels before 4.11 lack the ioctl; setns(fd, kind) still checks the kind then.
        if e.raw_os_error() != Some(libc::ENOTTY) {
            return Err(io_err(e));
        }
    } else if actual != kind.flag() {
        return Err(Error::WrongKind {
            kind,
            path: shown,
            actual: type_name(actual),
        });
    }
    Ok(NsFile {
        file,
        kind,
        path: shown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kubenode-netns-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        d
    }

    #[test]
    fn opens_own_namespaces_of_each_kind() {
        for kind in [Kind::Net, Kind::Ipc, Kind::Uts] {
            let p = format!("/proc/self/ns/{kind}");
            let f = open(Path::new(&p), kind).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert_eq!(f.kind(), kind);
            assert_eq!(f.path(), p);
        }
    }

    #[test]
    fn refuses_other_kinds_by_name() {
        let e = open(Path::new("/proc/self/ns/uts"), Kind::Net).unwrap_err();
        assert_eq!(
            e,
            Error::WrongKind {
                kind: Kind::Net,
                path: "/proc/self/ns/uts".into(),
                actual: "uts"
            }
        );
        assert_eq!(
            e.to_string(),
            "/proc/self/ns/uts is a uts namespace, not a net namespace"
        );
        assert!(e.is_wrong_file());
    }

    #[test]
    fn refuses_non_namespace_files_without_blocking() {
        let fifo = tmp("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let regular = tmp("regular");
        std::fs::write(&regular, b"x").unwrap();
        let start = Instant::now();
        for p in [
            fifo.as_path(),
            regular.as_path(),
            Path::new("/dev/null"),
            Path::new("/proc/self"),
        ] {
            let e = open(p, Kind::Net).unwrap_err();
            assert!(matches!(e, Error::NotNamespace { .. }), "{p:?}: {e:?}");
            assert!(e.to_string().contains(&*p.to_string_lossy()), "{e}");
            assert!(e.is_wrong_file());
        }
        assert!(start.elapsed() < Duration::from_secs(2));
        let _ = std::fs::remove_file(&fifo);
        let _ = std::fs::remove_file(&regular);
    }

    #[test]
    fn missing_paths_keep_their_errno() {
        let e = open(
            Path::new("/var/run/netns/kubenode-netns-missing"),
            Kind::Net,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Open {
                    errno: Some(libc::ENOENT),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!e.is_permission());
        assert!(e
            .to_string()
            .starts_with("opening namespace /var/run/netns/kubenode-netns-missing: "));
        let e = open(Path::new("a\0b"), Kind::Net).unwrap_err();
        assert!(matches!(e, Error::Open { errno: None, .. }), "{e:?}");
    }
}
