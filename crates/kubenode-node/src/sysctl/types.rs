//! The objects only the boundary has (`#[napi(object)]`); the core's own values cross as they
//! are. Task outcomes carry the shared `NativeError`, since a task can only reject with a plain
//! status.

use napi_derive::napi;

// Imported under their JS names, which the generated typings then use.
use kubenode_sysctl::{Applied as SysctlApplied, ProbeResult as SysctlProbeResult};

use crate::errors::NativeError;

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

#[napi(object, object_from_js = false)]
pub struct SysctlApplyOutcome {
    pub applied: Vec<SysctlApplied>,
    pub error: Option<NativeError>,
}

#[napi(object, object_from_js = false)]
pub struct SysctlProbeOutcome {
    pub results: Vec<SysctlProbeResult>,
    pub error: Option<NativeError>,
}
