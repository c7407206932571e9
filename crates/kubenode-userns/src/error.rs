use std::fmt;

/// What went wrong, so callers (and the binding's error codes) can tell failures apart without
/// parsing messages. The message itself is upstream's text wherever upstream has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Invalid configuration (ids per pod, mapping pool, max pods).
    Config,
    /// A `userns` file that does not decode or does not pass upstream's checks.
    Parse,
    /// A range that conflicts with the allocation state (taken, different, out of range).
    Conflict,
    /// No free slot left.
    Exhausted,
    /// Another manager holds the pods directory.
    Locked,
    /// A pod UID that cannot name a directory inside the pods directory.
    InvalidPodUid,
    /// A filesystem error other than permissions.
    Io,
    /// A permission error (EACCES/EPERM).
    Permission,
    /// The kernel refused something the user-namespace check needs.
    Unsupported,
}

/// An error with upstream's message, wrapped the way upstream wraps it (`prefix: cause`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prepends `prefix: ` like Go's `fmt.Errorf("prefix: %w", err)`.
    pub fn wrap(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }

    /// A filesystem error rendered like Go's `*os.PathError`: `<op> <path>: <errno text>`.
    pub fn io(op: &str, path: &std::path::Path, e: &std::io::Error) -> Self {
        let kind = match e.kind() {
            std::io::ErrorKind::PermissionDenied => ErrorKind::Permission,
            _ => ErrorKind::Io,
        };
        Self::new(kind, format!("{op} {}: {}", path.display(), errno_text(e)))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Go's `syscall.Errno` text: glibc's `strerror` with a lower-case first letter
/// ("permission denied", "no such file or directory").
pub fn errno_text(e: &std::io::Error) -> String {
    let Some(code) = e.raw_os_error() else {
        return e.to_string();
    };
    let full = std::io::Error::from_raw_os_error(code).to_string();
    let text = full.split(" (os error").next().unwrap_or(&full);
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
