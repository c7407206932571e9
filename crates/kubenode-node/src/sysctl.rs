//! Binding for `kubenode-sysctl`. Admission takes the pod's sysctl names joined by NUL in one
//! string (one crossing per pod, or per batch); namespace work runs as AsyncTasks whose
//! outcome objects carry the error code, since a Task can only reject with a plain status.

use kubenode_sysctl::{
    apply_sysctls, default_probe_names, get_namespace, is_valid_sysctl_name,
    is_valid_sysctl_pattern, normalize_name, probe, read_kernel_version, safe_sysctl_allowlist,
    validate_sysctls, Allowlist, ApplyError, KernelVersion, NsTarget, SAFE_SYSCTLS,
};
use napi::bindgen_prelude::{AsyncTask, Uint32Array, Uint8Array};
use napi::{Env, Task};
use napi_derive::napi;

use crate::errors::{err, Code, Result};

const HOST_NETWORK: u32 = 1;
const HOST_IPC: u32 = 2;

#[napi]
pub fn sysctl_is_valid_name(name: String) -> bool {
    is_valid_sysctl_name(&name)
}

#[napi]
pub fn sysctl_is_valid_pattern(pattern: String) -> bool {
    is_valid_sysctl_pattern(&pattern)
}

#[napi]
pub fn sysctl_normalize_name(name: String) -> String {
    normalize_name(&name).into_owned()
}

#[napi(object)]
pub struct SysctlNamespaceInfo {
    /// `IPC`, `Net`, `UTS`, `User` or `""`.
    pub namespace: String,
    pub name: String,
    pub prefixed: bool,
}

#[napi]
pub fn sysctl_get_namespace(name: String) -> SysctlNamespaceInfo {
    let (ns, name, prefixed) = get_namespace(&name);
    SysctlNamespaceInfo {
        namespace: ns.as_str().to_string(),
        name,
        prefixed,
    }
}

/// `ParseGeneric` components of a kernel version string.
#[napi]
pub fn sysctl_parse_kernel_version(version: String) -> Result<Vec<f64>> {
    let v = KernelVersion::parse(&version).map_err(|e| err(Code::Parse, e))?;
    Ok(v.components().iter().map(|&c| c as f64).collect())
}

#[napi(object)]
pub struct SysctlSafeList {
    pub names: Vec<String>,
    /// The version used, dotted; absent when unknown.
    pub kernel: Option<String>,
    /// Why the running kernel's version could not be determined (upstream then keeps only the
    /// ungated rows).
    pub kernel_error: Option<String>,
}

/// The safe list for `kernel`, or for the running kernel (`/proc/sys/kernel/osrelease`).
#[napi]
pub fn sysctl_safe_allowlist(kernel: Option<String>) -> Result<SysctlSafeList> {
    let (v, kernel_error) = match kernel {
        Some(k) => (
            Some(KernelVersion::parse(&k).map_err(|e| err(Code::Parse, e))?),
            None,
        ),
        None => match read_kernel_version() {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e.to_string())),
        },
    };
    Ok(SysctlSafeList {
        names: safe_sysctl_allowlist(v.as_ref())
            .into_iter()
            .map(String::from)
            .collect(),
        kernel: v.map(|v| v.to_string()),
        kernel_error,
    })
}

#[napi(object)]
pub struct SysctlSafeRow {
    pub name: String,
    pub min_kernel: Option<String>,
    pub since: String,
}

#[napi]
pub fn sysctl_safe_table() -> Vec<SysctlSafeRow> {
    SAFE_SYSCTLS
        .iter()
        .map(|s| SysctlSafeRow {
            name: s.name.to_string(),
            min_kernel: s
                .min_kernel
                .map(|m| m.iter().map(u64::to_string).collect::<Vec<_>>().join(".")),
            since: s.since.to_string(),
        })
        .collect()
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

/// `validateSysctls` over the names in spec order. `flags`: 1 hostNetwork, 2 hostIPC,
/// 4 AllowNamespacedSysctlsForHostNetAndHostIPC.
#[napi]
pub fn sysctl_validate(names: Vec<String>, path: String, flags: u32) -> Vec<SysctlFieldError> {
    validate_sysctls(
        names.iter().map(String::as_str),
        &path,
        flags & HOST_NETWORK != 0,
        flags & HOST_IPC != 0,
        flags & 4 != 0,
    )
    .into_iter()
    .map(|e| SysctlFieldError {
        r#type: e.kind.reason().to_string(),
        message: e.message(),
        field: e.field,
        bad_value: e.bad_value,
        detail: e.detail,
    })
    .collect()
}

#[napi(object)]
pub struct SysctlAllowlistEntry {
    pub key: String,
    pub namespace: String,
    pub prefix: bool,
}

#[napi(object)]
pub struct SysctlRejections {
    /// Indexes of rejected pods, ascending.
    pub indexes: Vec<u32>,
    /// `forbidden sysctl: …` for each rejected pod.
    pub messages: Vec<String>,
}

#[napi(js_name = "SysctlAllowlist")]
pub struct JsSysctlAllowlist {
    inner: Allowlist,
}

fn separator_conflict() -> crate::errors::Error {
    err(Code::Conflict, "a sysctl name contains the NUL separator")
}

#[napi]
impl JsSysctlAllowlist {
    /// `NewAllowlist`; errors carry upstream's message.
    #[napi(constructor)]
    pub fn new(patterns: Vec<String>) -> Result<Self> {
        let inner = Allowlist::new(&patterns).map_err(|e| err(Code::InvalidArg, e))?;
        Ok(Self { inner })
    }

    /// Admits one pod: `joined` holds `count` names separated by NUL. Returns null when
    /// admitted, else the message. Throws `ERR_KUBENODE_CONFLICT` if a name contains NUL
    /// (the caller then uses `admitList`).
    #[napi]
    pub fn admit_joined(&self, joined: String, count: u32, flags: u32) -> Result<Option<String>> {
        if joined.split('\0').count() != count as usize {
            return Err(separator_conflict());
        }
        Ok(self
            .inner
            .admit(
                joined.split('\0'),
                flags & HOST_NETWORK != 0,
                flags & HOST_IPC != 0,
            )
            .err()
            .map(|e| e.message()))
    }

    #[napi]
    pub fn admit_list(&self, names: Vec<String>, flags: u32) -> Option<String> {
        self.inner
            .admit(
                names.iter().map(String::as_str),
                flags & HOST_NETWORK != 0,
                flags & HOST_IPC != 0,
            )
            .err()
            .map(|e| e.message())
    }

    /// Admits many pods in one crossing: all names NUL-joined, `counts[i]` names and
    /// `flags[i]` for pod i.
    #[napi]
    pub fn admit_many(
        &self,
        joined: String,
        counts: Uint32Array,
        flags: Uint8Array,
    ) -> Result<SysctlRejections> {
        if counts.len() != flags.len() {
            return Err(err(
                Code::InvalidArg,
                "counts and flags must have the same length",
            ));
        }
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let mut names = joined.split('\0');
        if total == 0 {
            names.next();
        } else if joined.split('\0').count() as u64 != total {
            return Err(separator_conflict());
        }
        let mut out = SysctlRejections {
            indexes: Vec::new(),
            messages: Vec::new(),
        };
        for (i, (&c, &f)) in counts.iter().zip(flags.iter()).enumerate() {
            let (host_net, host_ipc) = (
                u32::from(f) & HOST_NETWORK != 0,
                u32::from(f) & HOST_IPC != 0,
            );
            let mut failed = None;
            // Consume all of this pod's names even after the first failure.
            for n in names.by_ref().take(c as usize) {
                if failed.is_none() {
                    failed = self.inner.validate_sysctl(n, host_net, host_ipc).err();
                }
            }
            if let Some(e) = failed {
                out.indexes.push(i as u32);
                out.messages.push(e.message());
            }
        }
        Ok(out)
    }

    /// The entries as stored: normalised keys, prefixes without the `*`.
    #[napi]
    pub fn entries(&self) -> Vec<SysctlAllowlistEntry> {
        let mut v: Vec<SysctlAllowlistEntry> = self
            .inner
            .exact()
            .map(|(k, ns)| SysctlAllowlistEntry {
                key: k.to_string(),
                namespace: ns.as_str().to_string(),
                prefix: false,
            })
            .chain(self.inner.prefixes().map(|(k, ns)| SysctlAllowlistEntry {
                key: k.to_string(),
                namespace: ns.as_str().to_string(),
                prefix: true,
            }))
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key).then(a.prefix.cmp(&b.prefix)));
        v
    }
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
pub struct SysctlTaskError {
    pub code: String,
    pub message: String,
}

#[napi(object)]
pub struct SysctlApplyOutcome {
    pub applied: Vec<SysctlApplied>,
    pub error: Option<SysctlTaskError>,
}

fn task_error(e: &ApplyError) -> SysctlTaskError {
    let code = match e {
        ApplyError::InvalidName(_)
        | ApplyError::NotNamespaced(_)
        | ApplyError::MissingNamespace { .. } => Code::InvalidArg,
        ApplyError::UserNamespace(_) => Code::Unsupported,
        ApplyError::HostNamespace(_) => Code::Conflict,
        ApplyError::Io {
            permission: true, ..
        } => Code::Permission,
        ApplyError::Setns { message, .. } if message.contains("not permitted") => Code::Permission,
        _ => Code::Io,
    };
    SysctlTaskError {
        code: code.as_ref().to_string(),
        message: e.to_string(),
    }
}

pub struct ApplyTask {
    target: NsTarget,
    sysctls: Vec<(String, String)>,
}

impl Task for ApplyTask {
    type Output = std::result::Result<Vec<kubenode_sysctl::Applied>, ApplyError>;
    type JsValue = SysctlApplyOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(apply_sysctls(&self.target, &self.sysctls))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(v) => SysctlApplyOutcome {
                applied: v
                    .into_iter()
                    .map(|a| SysctlApplied {
                        name: a.name,
                        path: a.path,
                        previous: a.previous,
                        value: a.value,
                    })
                    .collect(),
                error: None,
            },
            Err(e) => SysctlApplyOutcome {
                applied: Vec::new(),
                error: Some(task_error(&e)),
            },
        })
    }
}

/// Writes sysctls inside the target's namespaces off the JS thread.
#[napi(ts_return_type = "Promise<SysctlApplyOutcome>")]
pub fn sysctl_apply(
    target: SysctlTarget,
    sysctls: Vec<SysctlPair>,
) -> Result<AsyncTask<ApplyTask>> {
    let target = match target {
        SysctlTarget { pid: Some(pid), netns_path: None, ipcns_path: None, utsns_path: None } => NsTarget::Pid(pid),
        SysctlTarget { pid: None, netns_path, ipcns_path, utsns_path }
            if netns_path.is_some() || ipcns_path.is_some() || utsns_path.is_some() =>
        {
            NsTarget::Paths {
                net: netns_path.map(Into::into),
                ipc: ipcns_path.map(Into::into),
                uts: utsns_path.map(Into::into),
            }
        }
        _ => return Err(err(Code::InvalidArg, "target must be { pid } or namespace paths { netnsPath, ipcnsPath, utsnsPath }, not both")),
    };
    Ok(AsyncTask::new(ApplyTask {
        target,
        sysctls: sysctls.into_iter().map(|p| (p.name, p.value)).collect(),
    }))
}

#[napi(object)]
pub struct SysctlProbeResult {
    pub name: String,
    pub namespace: String,
    /// `isolated`, `leaked`, `absent`, `unchangeable` or `error`.
    pub outcome: String,
    pub host_value: Option<String>,
    pub probe_value: Option<String>,
    pub detail: Option<String>,
}

#[napi(object)]
pub struct SysctlProbeOutcome {
    pub results: Vec<SysctlProbeResult>,
    pub error: Option<SysctlTaskError>,
}

pub struct ProbeTask {
    names: Vec<String>,
}

impl Task for ProbeTask {
    type Output = std::result::Result<Vec<kubenode_sysctl::ProbeResult>, ApplyError>;
    type JsValue = SysctlProbeOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(probe(&self.names))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(v) => SysctlProbeOutcome {
                results: v
                    .into_iter()
                    .map(|r| SysctlProbeResult {
                        name: r.name,
                        namespace: r.namespace.as_str().to_string(),
                        outcome: r.outcome.as_str().to_string(),
                        host_value: r.host_value,
                        probe_value: r.probe_value,
                        detail: r.detail,
                    })
                    .collect(),
                error: None,
            },
            Err(e) => SysctlProbeOutcome {
                results: Vec::new(),
                error: Some(task_error(&e)),
            },
        })
    }
}

/// Probes `names` (default: safe list, namespace tables, fs.mqueue.*) in throwaway namespaces.
#[napi(ts_return_type = "Promise<SysctlProbeOutcome>")]
pub fn sysctl_probe(names: Option<Vec<String>>) -> AsyncTask<ProbeTask> {
    AsyncTask::new(ProbeTask {
        names: names.unwrap_or_else(default_probe_names),
    })
}

#[napi]
pub fn sysctl_probe_default_names() -> Vec<String> {
    default_probe_names()
}
