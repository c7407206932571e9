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
    /// A number outside the range an operation accepts.
    #[error("{0}")]
    OutOfRange(String),
    #[error("{0}")]
    FamilyMismatch(String),
    /// The handle was closed (before, or while this operation waited for it).
    #[error("the conntrack handle is closed")]
    Closed,
    /// A call that must not wait found an operation running on the handle.
    #[error("the conntrack handle is busy with a running operation")]
    Busy,
    #[error("network namespace {path}: {source}")]
    Netns {
        path: String,
        source: std::io::Error,
    },
    /// The netns path cannot be opened or is not a network namespace.
    #[error(transparent)]
    Namespace(#[from] kubenode_netns::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

/// What went wrong, for callers that react to the class of a failure rather than its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    OutOfRange,
    /// An address of the other IP family than the operation's.
    Family,
    Closed,
    Busy,
    /// No CAP_NET_ADMIN in the socket's network namespace.
    Permission,
    /// ctnetlink is not available.
    Unavailable,
    /// The kernel sent something this client cannot read.
    Parse,
    Io,
}

impl ErrorKind {
    /// The stable name callers see (`kind` in task outcomes).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid-argument",
            ErrorKind::OutOfRange => "out-of-range",
            ErrorKind::Family => "family",
            ErrorKind::Closed => "closed",
            ErrorKind::Busy => "busy",
            ErrorKind::Permission => "permission",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Parse => "parse",
            ErrorKind::Io => "io",
        }
    }
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Permission { .. } => ErrorKind::Permission,
            Error::Unsupported { .. } => ErrorKind::Unavailable,
            Error::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Error::OutOfRange(_) => ErrorKind::OutOfRange,
            Error::FamilyMismatch(_) => ErrorKind::Family,
            Error::Closed => ErrorKind::Closed,
            Error::Busy => ErrorKind::Busy,
            Error::Malformed(_) | Error::Truncated(_) => ErrorKind::Parse,
            Error::Netns { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                ErrorKind::Permission
            }
            Error::Namespace(e) if e.is_permission() => ErrorKind::Permission,
            Error::Namespace(e) if e.is_wrong_file() => ErrorKind::InvalidArgument,
            Error::Io { .. } | Error::Kernel { .. } | Error::Netns { .. } | Error::Namespace(_) => {
                ErrorKind::Io
            }
        }
    }
}

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

/// Like [`from_errno`], for the ack to a dump request. nfnetlink answers a request for a
/// subsystem that is not registered (nf_conntrack_netlink absent) with a bare EINVAL and no
/// extended message; our dump requests are otherwise well formed, and attribute errors come
/// with an extack message, so that case reads as "ctnetlink unavailable".
pub(crate) fn from_dump_errno(op: &'static str, errno: i32, message: String) -> Error {
    if errno == libc::EINVAL && message.is_empty() {
        return Error::Unsupported {
            op,
            detail: "EINVAL (22): the kernel has no ctnetlink subsystem".into(),
        };
    }
    from_errno(op, errno, message)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn errno_acks_map_to_typed_errors() {
        for errno in [libc::EPERM, libc::EACCES] {
            let e = from_errno("op", errno, String::new());
            assert!(
                matches!(e, Error::Permission { op: "op" }),
                "{errno}: {e:?}"
            );
            assert_eq!(
                e.to_string(),
                "op: permission denied (CAP_NET_ADMIN is required in the socket's network namespace)"
            );
        }
        for (errno, name) in [
            (libc::EOPNOTSUPP, "EOPNOTSUPP"),
            (libc::EPROTONOSUPPORT, "EPROTONOSUPPORT"),
            (libc::EAFNOSUPPORT, "EAFNOSUPPORT"),
        ] {
            let e = from_errno("op", errno, String::new());
            assert!(matches!(e, Error::Unsupported { .. }), "{errno}: {e:?}");
            assert_eq!(
                e.to_string(),
                format!("op: conntrack netlink is not available ({name} ({errno})); is nf_conntrack_netlink loaded?")
            );
        }
        let e = from_errno("op", libc::EBUSY, "table busy".into());
        assert!(matches!(e, Error::Kernel { errno, .. } if errno == libc::EBUSY));
        assert_eq!(e.to_string(), "op: kernel returned EBUSY (16): table busy");
        assert_eq!(
            from_errno("op", 4095, String::new()).to_string(),
            "op: kernel returned errno (4095)"
        );
    }

    #[test]
    fn a_bare_einval_to_a_dump_means_no_ctnetlink() {
        let e = from_dump_errno("dump conntrack table", libc::EINVAL, String::new());
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "dump conntrack table: conntrack netlink is not available (EINVAL (22): the kernel \
             has no ctnetlink subsystem); is nf_conntrack_netlink loaded?"
        );
        // With an extended message the kernel rejected an attribute: a plain kernel error.
        let e = from_dump_errno("dump", libc::EINVAL, "bad attr".into());
        assert!(
            matches!(e, Error::Kernel { errno, .. } if errno == libc::EINVAL),
            "{e:?}"
        );
        assert!(matches!(
            from_dump_errno("dump", libc::EPERM, String::new()),
            Error::Permission { .. }
        ));
    }

    #[test]
    fn every_error_has_a_kind() {
        assert_eq!(Error::Closed.kind(), ErrorKind::Closed);
        assert_eq!(Error::Closed.to_string(), "the conntrack handle is closed");
        assert_eq!(Error::Busy.kind().as_str(), "busy");
        assert_eq!(Error::FamilyMismatch("x".into()).kind().as_str(), "family");
        assert_eq!(
            Error::OutOfRange("x".into()).kind().as_str(),
            "out-of-range"
        );
        assert_eq!(Error::Truncated(1).kind(), ErrorKind::Parse);
        assert_eq!(
            from_errno("op", libc::EPERM, String::new()).kind(),
            ErrorKind::Permission
        );
        assert_eq!(
            from_errno("op", libc::EOPNOTSUPP, String::new())
                .kind()
                .as_str(),
            "unavailable"
        );
        assert_eq!(
            from_errno("op", libc::EBUSY, String::new()).kind(),
            ErrorKind::Io
        );
        let denied = Error::Netns {
            path: "/x".into(),
            source: io::Error::from_raw_os_error(libc::EACCES),
        };
        assert_eq!(denied.kind(), ErrorKind::Permission);
    }

    #[test]
    fn socket_errors_map_to_typed_errors() {
        let perm = from_io("open", io::Error::from_raw_os_error(libc::EPERM));
        assert!(matches!(perm, Error::Permission { op: "open" }));
        assert!(matches!(
            from_io("open", io::Error::from_raw_os_error(libc::EACCES)),
            Error::Permission { .. }
        ));
        // socket(AF_NETLINK, .., NETLINK_NETFILTER) without nfnetlink in the kernel.
        let e = from_io(
            "open netlink socket",
            io::Error::from_raw_os_error(libc::EPROTONOSUPPORT),
        );
        assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        assert!(e.to_string().contains("is nf_conntrack_netlink loaded?"));
        let other = from_io("recv", io::Error::from_raw_os_error(libc::EBADF));
        assert!(matches!(other, Error::Io { op: "recv", .. }));
        let custom = from_io("recv", io::Error::other("boom"));
        assert_eq!(custom.to_string(), "recv: boom");
    }
}
