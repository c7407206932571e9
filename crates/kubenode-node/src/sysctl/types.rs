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

/// Where `sysctlApply` writes: a process id, or namespace paths. The pid comes as JS's double so
/// that a fraction or an out-of-range value is refused rather than truncated by napi.
#[napi(object)]
pub struct SysctlTarget {
    pub pid: Option<f64>,
    pub netns_path: Option<String>,
    pub ipcns_path: Option<String>,
    pub utsns_path: Option<String>,
}

impl SysctlTarget {
    /// The core's target, with the pid checked to be in `[1, 2^32 - 1]`.
    pub fn checked(self) -> crate::errors::Result<kubenode_sysctl::Target> {
        let pid = match self.pid {
            Some(v) => Some(crate::convert::uint32("pid", v, 1)?),
            None => None,
        };
        Ok(kubenode_sysctl::Target {
            pid,
            netns_path: self.netns_path,
            ipcns_path: self.ipcns_path,
            utsns_path: self.utsns_path,
        })
    }
}
