//! Conversions between the core's values and the boundary's objects, and the core errors'
//! `NativeError`s. Every rule and message is the core's.

use std::borrow::Cow;

use kubenode_sysctl::{ApplyError, BatchError, FieldError};
use napi::{JsString, JsValue};

use super::types::SysctlFieldError;
use crate::errors::{err, ErrorCode, ErrorScope, NativeError, Result};

/// The host-flag byte of a pod (`HOST_NETWORK`, `HOST_IPC`, `POD_USERNS`); higher bits are not
/// flags and are dropped.
pub fn flag_byte(flags: u32) -> u8 {
    (flags & 0xff) as u8
}

/// Reusable buffers for reading the joined names, so an admission allocates nothing.
#[derive(Default)]
pub struct Scratch {
    units: Vec<u16>,
    bytes: Vec<u8>,
}

/// Reads the NUL-joined names. V8 copies a one-byte string to UTF-16 with a plain widening loop,
/// several times faster than its UTF-8 writer; ASCII (every real sysctl name) is narrowed here,
/// anything else decoded as the UTF-8 path would (lone surrogates become U+FFFD).
pub fn read_joined<'s>(s: &JsString, scratch: &'s mut Scratch) -> Result<Cow<'s, str>> {
    let v = s.value();
    let mut len = 0usize;
    // SAFETY: a null buffer asks only for the length in UTF-16 units.
    let status = unsafe {
        napi::sys::napi_get_value_string_utf16(v.env, v.value, std::ptr::null_mut(), 0, &mut len)
    };
    if status != napi::sys::Status::napi_ok {
        return Err(err(ErrorCode::InvalidArg, "names must be a string"));
    }
    let units = &mut scratch.units;
    // Grown, never cleared: V8 overwrites what it reports as written.
    if units.len() < len + 1 {
        units.resize(len + 1, 0);
    }
    let mut written = 0usize;
    // SAFETY: `units` holds at least `len + 1` writable u16s, the size passed (room for the NUL).
    let status = unsafe {
        napi::sys::napi_get_value_string_utf16(
            v.env,
            v.value,
            units.as_mut_ptr(),
            len + 1,
            &mut written,
        )
    };
    if status != napi::sys::Status::napi_ok {
        return Err(err(ErrorCode::InvalidArg, "names must be a string"));
    }
    let units = units.get(..written).unwrap_or_default();
    if units.iter().fold(0u16, |acc, &c| acc | c) < 0x80 {
        let bytes = &mut scratch.bytes;
        bytes.clear();
        bytes.extend(units.iter().map(|&c| c as u8));
        std::str::from_utf8(bytes)
            .map(Cow::Borrowed)
            .map_err(|e| err(ErrorCode::InvalidArg, e))
    } else {
        Ok(Cow::Owned(String::from_utf16_lossy(units)))
    }
}

pub fn batch_err(e: BatchError) -> NativeError {
    let code = match e {
        BatchError::Separator => ErrorCode::Conflict,
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
