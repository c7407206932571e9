//! Binding for `kubenode-sysctl`. Admission takes the pod's sysctl names as indexes into a
//! `NameTable` (each distinct name crosses once, via `intern`): one crossing per pod, or per
//! batch; namespace work runs as AsyncTasks whose
//! outcome objects carry the shared `NativeError`, since a Task can only reject with a plain
//! status. The core's own values (namespaces, the safe list, probe results, applied sysctls,
//! allowlist and policy entries) cross as they are, through its `napi` feature; `types` are
//! the shapes only the boundary has, `convert` maps them, `allowlist` is the class, `tasks`
//! run off the JS thread, `staged` is the per-pod admit without arguments; `policy` (compiled
//! SysctlPolicy/SysctlNamePolicy), `annotations` (the alpha annotations) and `baseline` (Pod
//! Security's check) are the policy entry points; the free functions below are the rest.

use kubenode_sysctl::{
    baseline_allowed_sysctls, default_pod_sysctls_enabled, default_probe_names, get_namespace_at,
    host_flags, is_valid_sysctl_name, is_valid_sysctl_pattern, normalize_name,
    parse_policy_version, safe_list, sandbox_sysctls, validate_default_pod_sysctls,
    validate_sysctls, validation_actions_errors, KernelVersion, NsTarget, SAFE_SYSCTLS,
};
// Imported under their JS names, which the generated typings then use.
use kubenode_sysctl::{
    NamespaceInfo as SysctlNamespaceInfo, SafeList as SysctlSafeList, Sysctl as SysctlPair,
};
use napi::bindgen_prelude::AsyncTask;
use napi::Env;
use napi_derive::napi;

use crate::convert::k8s_version;
use crate::errors::{err, throwing, ErrorCode, NativeError};
use convert::{field_errors, flag_byte};
use tasks::{ApplyTask, ProbeTask};
use types::*;

mod allowlist;
mod annotations;
mod baseline;
mod convert;
mod policy;
mod staged;
mod tasks;
mod types;

const HOST_NETWORK: u32 = kubenode_sysctl::HOST_NETWORK as u32;

/// `sysctlValidate` flag: AllowNamespacedSysctlsForHostNetAndHostIPC.
#[napi]
pub const SYSCTL_ALLOW_HOST_NAMESPACED: u32 = 8;

const HOST_IPC: u32 = kubenode_sysctl::HOST_IPC as u32;

/// Go's `%q` (strconv.Quote), for the messages the TypeScript side builds.
#[napi]
pub fn go_quote(s: String) -> String {
    kubenode_sysctl::go_quote(&s)
}

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

/// `GetNamespace` with the namespace tables of a Kubernetes release (default: the newest).
#[napi]
pub fn sysctl_get_namespace(
    env: Env,
    name: String,
    kubernetes_version: Option<String>,
) -> napi::Result<SysctlNamespaceInfo> {
    throwing(&env, || {
        Ok(get_namespace_at(&name, k8s_version(kubernetes_version)?))
    })
}

/// The kubelet's configuration errors for `defaultPodSysctls` with these names (in order),
/// the `DefaultPodSysctls` gate as set (`null`: unset) and a Kubernetes release.
#[napi]
pub fn sysctl_validate_default_pod_sysctls(
    env: Env,
    names: Vec<String>,
    gate: Option<bool>,
    kubernetes_version: Option<String>,
) -> napi::Result<Vec<String>> {
    throwing(&env, || {
        let k8s = k8s_version(kubernetes_version)?;
        Ok(validate_default_pod_sysctls(
            names.iter().map(String::as_str),
            gate,
            k8s,
        ))
    })
}

/// A pod's sandbox sysctls: the node's defaults that apply (when the release and gate enable
/// them), then the pod's own. `flags`: 1 hostNetwork, 2 hostIPC, 4 own user namespace.
#[napi]
pub fn sysctl_sandbox_sysctls(
    env: Env,
    defaults: Vec<SysctlPair>,
    pod: Vec<SysctlPair>,
    flags: u32,
    gate: Option<bool>,
    kubernetes_version: Option<String>,
) -> napi::Result<Vec<SysctlPair>> {
    throwing(&env, || {
        let enabled = default_pod_sysctls_enabled(gate, k8s_version(kubernetes_version)?);
        let (host_net, host_ipc, host_users) = host_flags(flag_byte(flags));
        Ok(sandbox_sysctls(
            &defaults, &pod, host_net, host_ipc, host_users, enabled,
        ))
    })
}

/// `ParseGeneric` components of a kernel version string.
#[napi]
pub fn sysctl_parse_kernel_version(env: Env, version: String) -> napi::Result<Vec<f64>> {
    throwing(&env, || {
        let v = KernelVersion::parse(&version).map_err(|e| err(ErrorCode::Parse, e))?;
        Ok(v.components().iter().map(|&c| c as f64).collect())
    })
}

/// The safe list of a Kubernetes release (default: the newest kubenode knows) for `kernel`, or
/// for the running kernel (`/proc/sys/kernel/osrelease`).
#[napi]
pub fn sysctl_safe_allowlist(
    env: Env,
    kernel: Option<String>,
    kubernetes_version: Option<String>,
) -> napi::Result<SysctlSafeList> {
    throwing(&env, || {
        let k8s = k8s_version(kubernetes_version)?;
        safe_list(kernel.as_deref(), k8s).map_err(|e| err(ErrorCode::Parse, e))
    })
}

/// Sysctls Pod Security's baseline level allows at `policyVersion` (`latest` or `v1.<minor>`).
#[napi]
pub fn sysctl_baseline_allowlist(env: Env, policy_version: String) -> napi::Result<Vec<String>> {
    throwing(&env, || {
        let minor =
            parse_policy_version(&policy_version).map_err(|e| err(ErrorCode::InvalidArg, e))?;
        Ok(baseline_allowed_sysctls(minor)
            .into_iter()
            .map(String::from)
            .collect())
    })
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
            since: format!("1.{}", s.since),
        })
        .collect()
}

/// `validateSysctls` over the names in spec order. `flags`: 1 hostNetwork, 2 hostIPC,
/// 8 AllowNamespacedSysctlsForHostNetAndHostIPC.
#[napi]
pub fn sysctl_validate(names: Vec<String>, path: String, flags: u32) -> Vec<SysctlFieldError> {
    field_errors(validate_sysctls(
        names.iter().map(String::as_str),
        &path,
        flags & HOST_NETWORK != 0,
        flags & HOST_IPC != 0,
        flags & SYSCTL_ALLOW_HOST_NAMESPACED != 0,
    ))
}

/// The API server's errors for a binding's `validationActions` at `field`; empty when valid.
#[napi]
pub fn sysctl_validation_actions_errors(actions: Vec<String>, field: String) -> Vec<String> {
    validation_actions_errors(&actions, &field)
}

/// Writes sysctls inside the target's namespaces off the JS thread.
#[napi(ts_return_type = "Promise<Outcome<Array<SysctlApplied>>>")]
pub fn sysctl_apply(
    env: Env,
    target: SysctlTarget,
    sysctls: Vec<SysctlPair>,
) -> napi::Result<AsyncTask<ApplyTask>> {
    throwing(&env, || {
        let target = NsTarget::try_from(target.checked()?).map_err(|e| NativeError::from(&e))?;
        Ok(AsyncTask::new(ApplyTask {
            target,
            sysctls: sysctls.into_iter().map(Into::into).collect(),
        }))
    })
}

/// Probes `names` (default: safe list, namespace tables, fs.mqueue.*) in throwaway namespaces.
#[napi(ts_return_type = "Promise<Outcome<Array<SysctlProbeResult>>>")]
pub fn sysctl_probe(names: Option<Vec<String>>) -> AsyncTask<ProbeTask> {
    AsyncTask::new(ProbeTask {
        names: names.unwrap_or_else(default_probe_names),
    })
}

#[napi]
pub fn sysctl_probe_default_names() -> Vec<String> {
    default_probe_names()
}
