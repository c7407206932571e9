//! Conversions between the core's values and the boundary's objects, and the core errors'
//! `NativeError`s. Every rule and message is the core's.

use kubenode_sysctl::{ApplyError, BatchError, FieldError};

use super::types::SysctlFieldError;
use crate::errors::{err, ErrorCode, ErrorScope, NativeError};

/// The host-flag byte of a pod (`HOST_NETWORK`, `HOST_IPC`, `POD_USERNS`); higher bits are not
/// flags and are dropped.
pub fn flag_byte(flags: u32) -> u8 {
    (flags & 0xff) as u8
}

pub fn batch_err(e: BatchError) -> NativeError {
    let code = match e {
        BatchError::TooFewIds => ErrorCode::OutOfRange,
        BatchError::LengthMismatch | BatchError::UnknownName(_) => ErrorCode::InvalidArg,
    };
    err(code, e)
}

pub fn field_errors(v: Vec<FieldError>) -> Vec<SysctlFieldError> {
    v.into_iter()
        .map(|e| SysctlFieldError {
            r#type: e.kind.reason().to_string(),
            message: e.message(),
            field: e.field,
            bad_value: e.bad_value,
            detail: e.detail,
        })
        .collect()
}

impl From<&ApplyError> for NativeError {
    fn from(e: &ApplyError) -> Self {
        let code = match e {
            ApplyError::Namespace(n) if n.is_permission() => ErrorCode::Permission,
            ApplyError::Namespace(n) if n.is_wrong_file() => ErrorCode::InvalidArg,
            ApplyError::Target(_)
            | ApplyError::InvalidName(_)
            | ApplyError::NotNamespaced(_)
            | ApplyError::UnsafePath { .. }
            | ApplyError::MissingNamespace { .. } => ErrorCode::InvalidArg,
            ApplyError::UserNamespace(_) => ErrorCode::Unsupported,
            ApplyError::HostNamespace(_) => ErrorCode::Conflict,
            ApplyError::Io {
                permission: true, ..
            } => ErrorCode::Permission,
            ApplyError::Setns {
                permission: true, ..
            } => ErrorCode::Permission,
            _ => ErrorCode::Io,
        };
        err(code, e).scoped(ErrorScope::Sysctl)
    }
}
