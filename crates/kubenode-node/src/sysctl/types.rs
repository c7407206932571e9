//! The objects only the boundary has (`#[napi(object)]`); the core's own values cross as they
//! are. Tasks resolve to the shared `Outcome<T>` (errors.rs).

use napi_derive::napi;

#[napi(object)]
pub struct SysctlSafeRow {
    pub name: String,
    pub min_kernel: Option<String>,
    pub since: String,
}

#[napi(object)]
pub struct SysctlFieldError {
    /// `FieldValueRequired`, `FieldValueInvalid` or `FieldValueDuplicate`.
    pub r#type: String,
    pub field: String,
    pub bad_value: Option<String>,
    pub detail: String,
    /// `field.Error.Error()`.
    pub message: String,
}
