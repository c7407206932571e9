//! The one error shape that crosses the boundary. Task outcomes carry it as `error` (a Task
//! can only reject with a plain status); synchronous calls throw a JS `Error` with the same
//! `code`, `kind` and `scope` properties. `ts/errors.ts` (`fromNative`) picks the typed class
//! from those fields alone. The string enums below are generated into `ts/binding.d.ts`.

use napi::bindgen_prelude::{JsObjectValue, Object, ToNapiValue, TypeName, ValueType};
use napi::{check_status, sys, Env, Status};
use napi_derive::napi;

/// Stable `code` of every kubenode error, one per kind of failure (`error.code` in JS).
#[napi(string_enum)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    #[napi(value = "ERR_KUBENODE_INVALID_ARG")]
    InvalidArg,
    #[napi(value = "ERR_KUBENODE_OUT_OF_RANGE")]
    OutOfRange,
    #[napi(value = "ERR_KUBENODE_IO")]
    Io,
    #[napi(value = "ERR_KUBENODE_PERMISSION")]
    Permission,
    #[napi(value = "ERR_KUBENODE_PARSE")]
    Parse,
    #[napi(value = "ERR_KUBENODE_CONFLICT")]
    Conflict,
    #[napi(value = "ERR_KUBENODE_UNSUPPORTED")]
    Unsupported,
    /// Raised by the TypeScript loader when no binary matches the platform.
    #[napi(value = "ERR_KUBENODE_BINDING_MISSING")]
    BindingMissing,
    /// A failure with no kubenode code (a napi status), raised by the TypeScript façade.
    #[napi(value = "ERR_KUBENODE_INTERNAL")]
    Internal,
}

impl ErrorCode {
    /// The kind of an error that has no finer one than its code.
    fn default_kind(self) -> ErrorKind {
        match self {
            ErrorCode::InvalidArg => ErrorKind::InvalidArgument,
            ErrorCode::OutOfRange => ErrorKind::OutOfRange,
            ErrorCode::Io | ErrorCode::BindingMissing | ErrorCode::Internal => ErrorKind::Io,
            ErrorCode::Permission => ErrorKind::Permission,
            ErrorCode::Parse => ErrorKind::Parse,
            ErrorCode::Conflict => ErrorKind::Conflict,
            ErrorCode::Unsupported => ErrorKind::Unsupported,
        }
    }
}

/// What went wrong, finer than the code: the core's own class of failure.
#[napi(string_enum)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    #[napi(value = "invalid-argument")]
    InvalidArgument,
    #[napi(value = "out-of-range")]
    OutOfRange,
    /// An address or table of the other IP family than the operation's (conntrack).
    #[napi(value = "family")]
    Family,
    /// The conntrack handle was closed.
    #[napi(value = "closed")]
    Closed,
    /// The conntrack handle is in use by a running task.
    #[napi(value = "busy")]
    Busy,
    #[napi(value = "permission")]
    Permission,
    /// ctnetlink is not available.
    #[napi(value = "unavailable")]
    Unavailable,
    #[napi(value = "parse")]
    Parse,
    #[napi(value = "io")]
    Io,
    /// Invalid user-namespace configuration (ids per pod, mapping pool, max pods).
    #[napi(value = "config")]
    Config,
    #[napi(value = "conflict")]
    Conflict,
    /// No free user-namespace range left.
    #[napi(value = "exhausted")]
    Exhausted,
    /// Another manager holds the pods directory's lock.
    #[napi(value = "locked")]
    Locked,
    /// A pod UID that cannot name a directory inside the pods directory.
    #[napi(value = "invalid-pod-uid")]
    InvalidPodUid,
    #[napi(value = "unsupported")]
    Unsupported,
    /// A Kubernetes release that is malformed or that kubenode has no safe list for.
    #[napi(value = "kubernetes-version")]
    KubernetesVersion,
}

impl ErrorKind {
    /// The code of an error of this kind: the one place a kind is filed under a code. (A
    /// Kubernetes release that kubenode has no list for is `Unsupported`, a malformed one
    /// `Parse`: that one call site picks the code itself.)
    pub fn code(self) -> ErrorCode {
        match self {
            ErrorKind::InvalidArgument
            | ErrorKind::Family
            | ErrorKind::Config
            | ErrorKind::InvalidPodUid => ErrorCode::InvalidArg,
            ErrorKind::OutOfRange => ErrorCode::OutOfRange,
            ErrorKind::Closed | ErrorKind::Io => ErrorCode::Io,
            ErrorKind::Busy | ErrorKind::Conflict | ErrorKind::Exhausted | ErrorKind::Locked => {
                ErrorCode::Conflict
            }
            ErrorKind::Permission => ErrorCode::Permission,
            ErrorKind::Unavailable | ErrorKind::Unsupported => ErrorCode::Unsupported,
            ErrorKind::Parse | ErrorKind::KubernetesVersion => ErrorCode::Parse,
        }
    }
}

/// Implements `From<&CoreError> for NativeError` for a core whose error kinds are named after
/// the boundary's: each listed core kind becomes the [`ErrorKind`] of the same name, filed
/// under that kind's [`ErrorKind::code`], with the subsystem's scope. The match stays
/// exhaustive, so a new core kind without a boundary twin does not compile.
macro_rules! native_error_from {
    ($error:ty => $scope:ident, $core:ident: $($kind:ident)|+) => {
        impl From<&$error> for $crate::errors::NativeError {
            fn from(e: &$error) -> Self {
                let kind = match e.kind() {
                    $($core::$kind => $crate::errors::ErrorKind::$kind),+
                };
                $crate::errors::NativeError::new(kind.code(), kind, e)
                    .scoped($crate::errors::ErrorScope::$scope)
            }
        }
    };
}
pub(crate) use native_error_from;

/// The subsystem whose core reported the error, for the subsystems that have their own error
/// classes in JS. Absent for argument-conversion errors.
#[napi(string_enum)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorScope {
    #[napi(value = "conntrack")]
    Conntrack,
    #[napi(value = "sysctl")]
    Sysctl,
    #[napi(value = "userns")]
    Userns,
}

/// A failure, as a task outcome's `error` and as the fields of a thrown error.
#[napi(object)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeError {
    pub code: ErrorCode,
    pub kind: ErrorKind,
    /// The core's message (upstream's text wherever upstream has one).
    pub message: String,
    pub scope: Option<ErrorScope>,
}

impl NativeError {
    pub fn new(code: ErrorCode, kind: ErrorKind, message: impl std::fmt::Display) -> Self {
        Self {
            code,
            kind,
            message: message.to_string(),
            scope: None,
        }
    }

    pub fn scoped(mut self, scope: ErrorScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Throws this error as a JS `Error` with `code`, `kind` (and `scope`) set, and returns
    /// the pending-exception status the generated wrapper then passes through untouched.
    pub fn throw(self, env: &Env) -> napi::Error {
        let thrown = self.to_js(env).and_then(|e| {
            // SAFETY: `e` is an error object created in this scope.
            check_status!(unsafe { sys::napi_throw(env.raw(), e) })
        });
        match thrown {
            Ok(()) => napi::Error::new(Status::PendingException, String::new()),
            Err(e) => e,
        }
    }

    fn to_js(&self, env: &Env) -> napi::Result<sys::napi_value> {
        let raw = env.raw();
        let mut e = std::ptr::null_mut();
        // SAFETY: `raw` is the current call's env; every value is created in this scope.
        unsafe {
            let code = ToNapiValue::to_napi_value(raw, self.code)?;
            let message = ToNapiValue::to_napi_value(raw, self.message.as_str())?;
            check_status!(sys::napi_create_error(raw, code, message, &mut e))?;
        }
        let mut obj = Object::from_raw(raw, e);
        obj.set_named_property("kind", self.kind)?;
        if let Some(s) = self.scope {
            obj.set_named_property("scope", s)?;
        }
        Ok(e)
    }
}

impl std::fmt::Display for NativeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a task resolves to: its value or its failure. A task cannot reject with a custom error,
/// so the failure travels as `error`. Declared once in the typings as `Outcome<T>` (napi's object
/// derive has no generics). The userns manager's calls resolve to `UsernsOutcome` instead: its
/// per-pod calls are delivered in batches, each outcome with its own `error`.
pub struct Outcome<T> {
    pub value: Option<T>,
    pub error: Option<NativeError>,
}

impl<T> Outcome<T> {
    pub fn new(value: Option<T>, error: Option<NativeError>) -> Self {
        Self { value, error }
    }
}

impl<T, E> From<std::result::Result<T, E>> for Outcome<T>
where
    for<'a> NativeError: From<&'a E>,
{
    fn from(r: std::result::Result<T, E>) -> Self {
        match r {
            Ok(v) => Self::new(Some(v), None),
            Err(e) => Self::new(None, Some((&e).into())),
        }
    }
}

impl<T: ToNapiValue> ToNapiValue for Outcome<T> {
    unsafe fn to_napi_value(env: sys::napi_env, o: Self) -> napi::Result<sys::napi_value> {
        let mut obj = Object::new(&Env::from_raw(env))?;
        if let Some(v) = o.value {
            obj.set_named_property("value", v)?;
        }
        if let Some(e) = o.error {
            obj.set_named_property("error", e)?;
        }
        // SAFETY: `obj` was created in this call's scope of `env`.
        unsafe { ToNapiValue::to_napi_value(env, obj) }
    }
}

impl<T> TypeName for Outcome<T> {
    fn type_name() -> &'static str {
        "Outcome"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

/// The binding's internal result; `#[napi]` entry points turn its error into a throw with
/// [`OrThrow::or_throw`].
pub type Result<T> = std::result::Result<T, NativeError>;

/// Converts the binding's result at a `#[napi]` entry point: the error is thrown as a JS
/// `Error` carrying the same fields as a task outcome's `error`.
pub trait OrThrow<T> {
    fn or_throw(self, env: &Env) -> napi::Result<T>;
}

impl<T> OrThrow<T> for Result<T> {
    #[inline]
    fn or_throw(self, env: &Env) -> napi::Result<T> {
        self.map_err(|e| e.throw(env))
    }
}

/// An error with no finer kind than its code.
pub fn err(code: ErrorCode, message: impl std::fmt::Display) -> NativeError {
    NativeError::new(code, code.default_kind(), message)
}

/// Runs an entry point's body; its error is thrown as a JS `Error` (see [`OrThrow`]).
#[inline]
pub fn throwing<T>(env: &Env, f: impl FnOnce() -> Result<T>) -> napi::Result<T> {
    f().or_throw(env)
}
