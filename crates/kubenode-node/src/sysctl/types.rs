//! The objects that cross the boundary (`#[napi(object)]`). Task outcomes carry the shared
//! `NativeError`, since a task can only reject with a plain status.

use napi_derive::napi;

use crate::errors::NativeError;

/// The kernel namespace a sysctl belongs to, as upstream names it; `""` when not namespaced.
#[napi(string_enum)]
pub enum SysctlNamespace {
    #[napi(value = "IPC")]
    Ipc,
    #[napi(value = "Net")]
    Net,
    #[napi(value = "UTS")]
    Uts,
    #[napi(value = "User")]
    User,
    #[napi(value = "")]
    None,
}

/// What probing one sysctl in throwaway namespaces showed.
#[napi(string_enum)]
pub enum SysctlProbeStatus {
    /// Changed in the new namespace, host unchanged.
    #[napi(value = "isolated")]
    Isolated,
    /// Changing it in the new namespace changed the host value too (then restored).
    #[napi(value = "leaked")]
    Leaked,
    #[napi(value = "absent")]
    Absent,
    #[napi(value = "unchangeable")]
    Unchangeable,
    #[napi(value = "not-namespaced")]
    NotNamespaced,
    #[napi(value = "error")]
    Error,
}

#[napi(object)]
pub struct SysctlNamespaceInfo {
    pub namespace: SysctlNamespace,
    pub name: String,
    pub prefixed: bool,
}

#[napi(object)]
pub struct SysctlSafeList {
    pub names: Vec<String>,
    /// The version used, dotted; absent when unknown.
    pub kernel: Option<String>,
    /// Why the running kernel's version could not be determined (upstream then keeps only the
    /// ungated rows).
    pub kernel_error: Option<String>,
    /// The Kubernetes release whose list this is (`v1.<minor>`).
    pub kubernetes_version: String,
}

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

#[napi(object)]
pub struct SysctlAllowlistEntry {
    pub key: String,
    pub namespace: SysctlNamespace,
    pub prefix: bool,
}

#[napi(object)]
pub struct SysctlRejections {
    /// Indexes of rejected pods, ascending.
    pub indexes: Vec<u32>,
    /// `forbidden sysctl: …` for each rejected pod.
    pub messages: Vec<String>,
}

#[napi(object)]
pub struct SysctlTarget {
    pub pid: Option<u32>,
    pub netns_path: Option<String>,
    pub ipcns_path: Option<String>,
    pub utsns_path: Option<String>,
}

#[napi(object)]
pub struct SysctlPair {
    pub name: String,
    pub value: String,
}

#[napi(object)]
pub struct SysctlApplied {
    pub name: String,
    pub path: String,
    pub previous: String,
    pub value: String,
}

#[napi(object)]
pub struct SysctlApplyOutcome {
    pub applied: Vec<SysctlApplied>,
    pub error: Option<NativeError>,
}

#[napi(object)]
pub struct SysctlProbeResult {
    pub name: String,
    pub namespace: SysctlNamespace,
    pub outcome: SysctlProbeStatus,
    pub host_value: Option<String>,
    pub probe_value: Option<String>,
    pub detail: Option<String>,
}

#[napi(object)]
pub struct SysctlProbeOutcome {
    pub results: Vec<SysctlProbeResult>,
    pub error: Option<NativeError>,
}
