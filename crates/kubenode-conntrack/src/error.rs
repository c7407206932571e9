use thiserror::Error;

/// Everything the conntrack client can fail with. Kernel errnos are kept so callers can tell a
/// permission problem from a missing module or a rejected request.
#[derive(Debug, Error)]
pub enum Error {
    #[error(
        "{op}: permission denied (CAP_NET_ADMIN is required in the socket's network namespace)"
    )]
    Permission { op: &'static str },
    #[error(
        "{op}: conntrack netlink is not available ({detail}); is nf_conntrack_netlink loaded?"
    )]
    Unsupported { op: &'static str, detail: String },
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        source: std::io::Error,
    },
    #[error("{op}: kernel returned {} ({errno}){}", errno_name(*.errno), ext_msg(.message))]
    Kernel {
        op: &'static str,
        errno: i32,
        message: String,
    },
    #[error("malformed netlink message: {0}")]
    Malformed(&'static str),
    #[error("netlink message truncated: the {0}-byte receive buffer is too small")]
    Truncated(usize),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    FamilyMismatch(String),
    #[error("network namespace {path}: {source}")]
    Netns {
        path: String,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

fn ext_msg(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(": {m}")
    }
}

/// Symbolic names for the errnos ctnetlink reports, for readable messages.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::ENOMEM => "ENOMEM",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ENOBUFS => "ENOBUFS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EAGAIN => "EAGAIN",
        _ => "errno",
    }
}

/// Turns a negative-errno netlink ack into a typed error.
pub(crate) fn from_errno(op: &'static str, errno: i32, message: String) -> Error {
    match errno {
        libc::EPERM | libc::EACCES => Error::Permission { op },
        libc::EOPNOTSUPP | libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT => Error::Unsupported {
            op,
            detail: format!("{} ({errno})", errno_name(errno)),
        },
        _ => Error::Kernel { op, errno, message },
    }
}

pub(crate) fn from_io(op: &'static str, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => Error::Permission { op },
        Some(n @ (libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT)) => Error::Unsupported {
            op,
            detail: format!("{} ({n})", errno_name(n)),
        },
        _ => Error::Io { op, source: e },
    }
}
