//! Writing sysctls into a pod's namespaces. `/proc/sys/net/*`, the IPC entries and
//! `kernel.domainname` resolve against the namespaces of the *thread* that opens them, so the
//! work runs on a dedicated thread that `setns`-es into the target and exits afterwards; the
//! caller's threads never change namespace.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use kubenode_netns::Kind;
use thiserror::Error;

use crate::name::is_valid_sysctl_name;
use crate::namespace::{get_namespace, Namespace, NamespaceInfo};
use crate::normalize::normalize_name;
use crate::quote::go_quote;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NsTarget {
    /// The namespaces of a running process (`/proc/<pid>/ns/*`).
    Pid(u32),
    /// Bind-mounted namespace files, as CNI and runtimes keep them.
    Paths {
        net: Option<PathBuf>,
        ipc: Option<PathBuf>,
        uts: Option<PathBuf>,
    },
}

impl NsTarget {
    /// The target named by a process id *or* namespace paths: never both, never neither, so
    /// no path given is silently ignored.
    pub fn new(
        pid: Option<u32>,
        net: Option<PathBuf>,
        ipc: Option<PathBuf>,
        uts: Option<PathBuf>,
    ) -> Result<Self, ApplyError> {
        let paths = net.is_some() || ipc.is_some() || uts.is_some();
        match pid {
            Some(_) if paths => Err(ApplyError::Target("not both")),
            Some(pid) => Ok(NsTarget::Pid(pid)),
            None if paths => Ok(NsTarget::Paths { net, ipc, uts }),
            None => Err(ApplyError::Target("got neither")),
        }
    }
}

/// A target as JavaScript names it: a process id, or namespace paths (the binding checks the
/// pid JS gives as a double before building one). Converting it to an [`NsTarget`] applies
/// [`NsTarget::new`]'s rule (one or the other, never both or neither).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    pub pid: Option<u32>,
    pub netns_path: Option<String>,
    pub ipcns_path: Option<String>,
    pub utsns_path: Option<String>,
}

impl TryFrom<Target> for NsTarget {
    type Error = ApplyError;

    fn try_from(t: Target) -> Result<Self, ApplyError> {
        NsTarget::new(
            t.pid,
            t.netns_path.map(Into::into),
            t.ipcns_path.map(Into::into),
            t.utsns_path.map(Into::into),
        )
    }
}

/// One sysctl setting as a pod spec or an annotation gives it: a name (dotted or slashed) and
/// its value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "SysctlPair"))]
pub struct Sysctl {
    pub name: String,
    pub value: String,
}

impl From<(String, String)> for Sysctl {
    fn from((name, value): (String, String)) -> Self {
        Sysctl { name, value }
    }
}

impl From<Sysctl> for (String, String) {
    fn from(s: Sysctl) -> Self {
        (s.name, s.value)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApplyError {
    #[error(
        "target must be {{ pid }} or namespace paths {{ netnsPath, ipcnsPath, utsnsPath }}, {0}"
    )]
    Target(&'static str),
    #[error("sysctl {} is not a valid sysctl name", go_quote(.0))]
    InvalidName(String),
    /// runc's text for sysctls outside the net, IPC and UTS namespaces.
    #[error("sysctl {} is not in a separate kernel namespace", go_quote(.0))]
    NotNamespaced(String),
    #[error("sysctl {} is in the User namespace; setting ucounts needs the pod's user namespace, which a multithreaded process cannot join", go_quote(.0))]
    UserNamespace(String),
    #[error("sysctl {} needs the target's {ns} namespace, but no {ns} namespace path was given", go_quote(.name))]
    MissingNamespace { name: String, ns: &'static str },
    #[error("the target's {0} namespace is the host's; refusing to change host sysctls")]
    HostNamespace(&'static str),
    #[error("opening namespace {path}: {message}")]
    OpenNamespace { path: String, message: String },
    /// A namespace path that cannot be opened or is not a namespace of the needed kind.
    #[error(transparent)]
    Namespace(#[from] kubenode_netns::Error),
    /// `permission`: the kernel answered EPERM (no CAP_SYS_ADMIN), not some other failure.
    #[error("joining {ns} namespace {path}: {message}")]
    Setns {
        ns: &'static str,
        path: String,
        message: String,
        permission: bool,
    },
    /// A path that would leave `/proc/sys/` (or is not plain there); never opened.
    #[error("refusing to open {path}: not a plain path under /proc/sys/")]
    UnsafePath { path: String },
    #[error("sysctl {}: {message}", go_quote(.name))]
    Io {
        name: String,
        message: String,
        permission: bool,
    },
    #[error("{0}")]
    Thread(String),
}

/// One sysctl as set: `previous` and `value` are read back from the kernel (whitespace as the
/// kernel prints it, trailing newline removed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlApplied"))]
pub struct Applied {
    pub name: String,
    pub path: String,
    pub previous: String,
    pub value: String,
}

/// `/proc/sys/` path of a normalised name: dots separate components, a slash is a literal dot.
pub fn proc_path(normalized: &str) -> String {
    let mut p = String::with_capacity(10 + normalized.len());
    p.push_str("/proc/sys/");
    for c in normalized.chars() {
        p.push(match c {
            '.' => '/',
            '/' => '.',
            c => c,
        });
    }
    p
}

/// `setns`/`unshare` failure from `errno`.
pub(crate) fn setns_err(ns: &'static str, path: String, e: &std::io::Error) -> ApplyError {
    ApplyError::Setns {
        ns,
        path,
        message: e.to_string(),
        permission: e.raw_os_error() == Some(libc::EPERM),
    }
}

/// Whether `path` is `/proc/sys/` plus components that are neither empty, `.` nor `..`: a
/// valid name always gives such a path, and nothing else is ever opened for reading or writing.
fn is_plain_proc_sys_path(path: &str) -> bool {
    path.strip_prefix("/proc/sys/").is_some_and(|rest| {
        rest.split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
    })
}

fn checked(path: &str) -> Result<(), ApplyError> {
    if is_plain_proc_sys_path(path) {
        Ok(())
    } else {
        Err(ApplyError::UnsafePath {
            path: path.to_string(),
        })
    }
}

pub(crate) fn io_err(name: &str, e: &std::io::Error) -> ApplyError {
    ApplyError::Io {
        name: name.to_string(),
        message: e.to_string(),
        permission: e.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

pub(crate) fn read_value(name: &str, path: &str) -> Result<String, ApplyError> {
    checked(path)?;
    let mut s = String::new();
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .and_then(|mut f| f.read_to_string(&mut s))
        .map_err(|e| io_err(name, &e))?;
    Ok(s.trim_end_matches('\n').to_string())
}

/// One `write(2)` at offset 0: procfs sysctls parse exactly what one write delivers.
pub(crate) fn write_value(name: &str, path: &str, value: &str) -> Result<(), ApplyError> {
    checked(path)?;
    let mut f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io_err(name, &e))?;
    let n = f.write(value.as_bytes()).map_err(|e| io_err(name, &e))?;
    if n != value.len() {
        return Err(ApplyError::Io {
            name: name.to_string(),
            message: format!("short write ({n} of {} bytes)", value.len()),
            permission: false,
        });
    }
    Ok(())
}

/// The normalised name and namespace of a sysctl that may be written in a net, IPC or UTS
/// namespace; every other name is refused here, before any file is opened.
pub(crate) fn writable_name(raw: &str) -> Result<(String, Namespace), ApplyError> {
    kind_of(raw).map(|(name, kind)| {
        let ns = match kind {
            Kind::Net => Namespace::Net,
            Kind::Ipc => Namespace::Ipc,
            Kind::Uts => Namespace::Uts,
        };
        (name, ns)
    })
}

fn kind_of(raw: &str) -> Result<(String, Kind), ApplyError> {
    if !is_valid_sysctl_name(raw) {
        return Err(ApplyError::InvalidName(raw.to_string()));
    }
    let NamespaceInfo {
        namespace: ns,
        name,
        ..
    } = get_namespace(raw);
    let kind = match ns {
        Namespace::Net => Kind::Net,
        Namespace::Ipc => Kind::Ipc,
        Namespace::Uts => Kind::Uts,
        Namespace::User => return Err(ApplyError::UserNamespace(name)),
        Namespace::Unknown => {
            return Err(ApplyError::NotNamespaced(normalize_name(raw).into_owned()))
        }
    };
    Ok((name, kind))
}

fn ns_file(target: &NsTarget, kind: Kind) -> Option<PathBuf> {
    match target {
        NsTarget::Pid(pid) => Some(PathBuf::from(format!("/proc/{pid}/ns/{}", kind.label()))),
        NsTarget::Paths { net, ipc, uts } => match kind {
            Kind::Net => net.clone(),
            Kind::Ipc => ipc.clone(),
            Kind::Uts => uts.clone(),
        },
    }
}

/// Sets `sysctls` (name, value) inside the target's namespaces, in order. All names are checked
/// before anything is written; if a write fails, the values written so far are restored.
pub fn apply_sysctls(
    target: &NsTarget,
    sysctls: &[(String, String)],
) -> Result<Vec<Applied>, ApplyError> {
    let mut plan = Vec::with_capacity(sysctls.len());
    let mut kinds: Vec<Kind> = Vec::new();
    for (raw, value) in sysctls {
        let (name, kind) = kind_of(raw)?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
        plan.push((name, value.clone()));
    }
    // Open the namespace files on the caller's thread; refuse the caller's own namespaces.
    let mut files = Vec::with_capacity(kinds.len());
    for kind in kinds {
        let Some(path) = ns_file(target, kind) else {
            let name = plan
                .iter()
                .zip(sysctls)
                .find(|(_, (raw, _))| kind_of(raw).map(|(_, k)| k == kind).unwrap_or(false))
                .map(|(p, _)| p.0.clone())
                .unwrap_or_default();
            return Err(ApplyError::MissingNamespace {
                name,
                ns: kind.label(),
            });
        };
        let f = kubenode_netns::open(&path, kind)?;
        let own =
            std::fs::metadata(format!("/proc/thread-self/ns/{}", kind.label())).map_err(|e| {
                ApplyError::OpenNamespace {
                    path: "/proc/thread-self/ns".into(),
                    message: e.to_string(),
                }
            })?;
        let theirs = f.file().metadata().map_err(|e| ApplyError::OpenNamespace {
            path: f.path().to_string(),
            message: e.to_string(),
        })?;
        if own.ino() == theirs.ino() && own.dev() == theirs.dev() {
            return Err(ApplyError::HostNamespace(kind.label()));
        }
        files.push(f);
    }
    let worker = std::thread::Builder::new()
        .name("kubenode-sysctl-apply".into())
        .spawn(move || -> Result<Vec<Applied>, ApplyError> {
            for f in &files {
                f.join()
                    .map_err(|e| setns_err(f.kind().label(), f.path().to_string(), &e))?;
            }
            write_all(&plan)
        })
        .map_err(|e| ApplyError::Thread(format!("spawning the namespace thread: {e}")))?;
    worker
        .join()
        .map_err(|_| ApplyError::Thread("the namespace thread panicked".into()))?
}

/// Runs inside the target namespaces: read, write, read back; undo on failure.
fn write_all(plan: &[(String, String)]) -> Result<Vec<Applied>, ApplyError> {
    let mut done: Vec<Applied> = Vec::with_capacity(plan.len());
    for (name, value) in plan {
        let path = proc_path(name);
        let step = read_value(name, &path).and_then(|previous| {
            write_value(name, &path, value)?;
            let now = read_value(name, &path)?;
            Ok(Applied {
                name: name.clone(),
                path: path.clone(),
                previous,
                value: now,
            })
        });
        match step {
            Ok(a) => done.push(a),
            Err(e) => {
                for a in done.iter().rev() {
                    // Best effort: the original error is what the caller needs to see.
                    let _ = write_value(&a.name, &a.path, &a.previous);
                }
                return Err(e);
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            proc_path("net.ipv4.ip_local_port_range"),
            "/proc/sys/net/ipv4/ip_local_port_range"
        );
        assert_eq!(
            proc_path("net.ipv4.conf.eno2/100.rp_filter"),
            "/proc/sys/net/ipv4/conf/eno2.100/rp_filter"
        );
    }

    #[test]
    fn setns_errors_say_whether_permission_was_missing() {
        let e = |errno| setns_err("net", "p".into(), &std::io::Error::from_raw_os_error(errno));
        assert!(matches!(
            e(libc::EPERM),
            ApplyError::Setns {
                permission: true,
                ..
            }
        ));
        assert!(matches!(
            e(libc::EINVAL),
            ApplyError::Setns {
                permission: false,
                ..
            }
        ));
        assert!(e(libc::EPERM)
            .to_string()
            .starts_with("joining net namespace p: "));
    }

    #[test]
    fn never_opens_outside_proc_sys() {
        // Invalid names may map to a traversal; the open itself refuses it, whoever asks.
        let escape = proc_path("net.//.//.//.etc.shadow");
        assert_eq!(escape, "/proc/sys/net/../../../etc/shadow");
        for bad in [
            escape.as_str(),
            "/etc/shadow",
            "/proc/sys",
            "/proc/sys/",
            "/proc/sys/net//ipv4",
            "/proc/sys/./net",
            "/proc/sysfoo/x",
            "/proc/sys/net/ipv4/\0",
        ] {
            let want = ApplyError::UnsafePath { path: bad.into() };
            assert_eq!(read_value("x", bad), Err(want.clone()), "{bad:?}");
            assert_eq!(write_value("x", bad, "1"), Err(want), "{bad:?}");
        }
        assert!(is_plain_proc_sys_path(
            "/proc/sys/net/ipv4/conf/eno2.100/rp_filter"
        ));
        // Every valid name gives a plain path.
        for n in [
            "a",
            "net.ipv4.conf.eno2/100.rp_filter",
            "a/b.c",
            "kernel/sem",
        ] {
            assert!(is_valid_sysctl_name(n));
            assert!(
                is_plain_proc_sys_path(&proc_path(&normalize_name(n))),
                "{n}"
            );
        }
    }

    #[test]
    fn a_target_is_a_pid_or_paths_never_both() {
        let net = || Some(PathBuf::from("/var/run/netns/x"));
        assert_eq!(
            NsTarget::new(Some(7), None, None, None),
            Ok(NsTarget::Pid(7))
        );
        assert_eq!(
            NsTarget::new(None, net(), None, None),
            Ok(NsTarget::Paths {
                net: net(),
                ipc: None,
                uts: None
            })
        );
        let both = NsTarget::new(Some(7), net(), None, None).unwrap_err();
        assert_eq!(
            both.to_string(),
            "target must be { pid } or namespace paths { netnsPath, ipcnsPath, utsnsPath }, not both"
        );
        assert_eq!(
            NsTarget::new(Some(7), None, None, Some("/u".into())),
            Err(both)
        );
        assert_eq!(
            NsTarget::new(None, None, None, None),
            Err(ApplyError::Target("got neither"))
        );
    }

    #[test]
    fn a_js_target_converts_by_the_same_rule() {
        let pid = Target {
            pid: Some(7),
            ..Target::default()
        };
        assert_eq!(NsTarget::try_from(pid.clone()), Ok(NsTarget::Pid(7)));
        let paths = Target {
            netns_path: Some("/var/run/netns/x".into()),
            utsns_path: Some("/u".into()),
            ..Target::default()
        };
        assert_eq!(
            NsTarget::try_from(paths.clone()),
            Ok(NsTarget::Paths {
                net: Some("/var/run/netns/x".into()),
                ipc: None,
                uts: Some("/u".into())
            })
        );
        let both = Target {
            pid: Some(7),
            ..paths
        };
        assert_eq!(
            NsTarget::try_from(both),
            Err(ApplyError::Target("not both"))
        );
        assert_eq!(
            NsTarget::try_from(Target::default()),
            Err(ApplyError::Target("got neither"))
        );
    }

    #[test]
    fn a_sysctl_pair_is_a_name_value_tuple() {
        let t: (String, String) = ("kernel.shmmax".into(), "1".into());
        let s = Sysctl::from(t.clone());
        assert_eq!((s.name.as_str(), s.value.as_str()), ("kernel.shmmax", "1"));
        assert_eq!(<(String, String)>::from(s), t);
    }

    #[test]
    fn refuses_namespace_paths_that_are_not_that_namespace() {
        let net = |p: &str| NsTarget::Paths {
            net: Some(p.into()),
            ipc: None,
            uts: None,
        };
        let set = [("net.ipv4.ip_forward".to_string(), "1".to_string())];
        let e = apply_sysctls(&net("/dev/null"), &set).unwrap_err();
        assert!(
            matches!(&e, ApplyError::Namespace(n) if n.is_wrong_file()),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("/dev/null is not a namespace file"),
            "{e}"
        );
        let e = apply_sysctls(&net("/proc/self/ns/uts"), &set).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/proc/self/ns/uts is a uts namespace, not a net namespace"
        );
    }

    #[test]
    fn refuses_before_touching_anything() {
        let t = NsTarget::Pid(std::process::id());
        let one = |n: &str| apply_sysctls(&t, &[(n.to_string(), "1".to_string())]).unwrap_err();
        assert_eq!(
            one("vm.swappiness"),
            ApplyError::NotNamespaced("vm.swappiness".into())
        );
        assert_eq!(
            one("kernel/hostname"),
            ApplyError::NotNamespaced("kernel.hostname".into())
        );
        assert!(matches!(
            one("user.max_user_namespaces"),
            ApplyError::UserNamespace(_)
        ));
        assert!(matches!(
            one("../../etc/passwd"),
            ApplyError::InvalidName(_)
        ));
        assert!(matches!(one("net.*"), ApplyError::InvalidName(_)));
        assert_eq!(
            one("net.//.//.//.etc.shadow"),
            ApplyError::InvalidName("net.//.//.//.etc.shadow".into())
        );
        // Our own namespaces are the host's.
        assert_eq!(
            one("net.ipv4.tcp_syncookies"),
            ApplyError::HostNamespace("net")
        );
        let paths = NsTarget::Paths {
            net: Some("/proc/self/ns/net".into()),
            ipc: None,
            uts: None,
        };
        let e = apply_sysctls(&paths, &[("kernel.shmmax".into(), "1".into())]).unwrap_err();
        assert_eq!(
            e,
            ApplyError::MissingNamespace {
                name: "kernel.shmmax".into(),
                ns: "ipc"
            }
        );
    }
}
