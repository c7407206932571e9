//! Binding for `kubenode-sysctl`. Admission takes the pod's sysctl names as indexes into a
//! `NameTable` (each distinct name crosses once, via `intern`), or joined by NUL in one string;
//! either way one crossing per pod, or per batch; namespace work runs as AsyncTasks whose
//! outcome objects carry the error code, since a Task can only reject with a plain status.

use kubenode_sysctl::{
    apply_sysctls, baseline_allowed_sysctls, default_probe_names, get_namespace,
    is_valid_sysctl_name, is_valid_sysctl_pattern, normalize_name, parse_policy_version, probe,
    read_kernel_version, safe_sysctl_allowlist, validate_sysctls, Allowlist, ApplyError,
    BatchError, KernelVersion, KubernetesVersion, KubernetesVersionError, NsTarget, Rejection,
    SAFE_SYSCTLS,
};
use napi::bindgen_prelude::{AsyncTask, Uint32Array, Uint8Array};
use napi::{Env, JsString, JsValue, Task};
use napi_derive::napi;
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use crate::errors::{err, throwing, ErrorCode, ErrorKind, ErrorScope, NativeError, Result};

mod staged;

const HOST_NETWORK: u32 = kubenode_sysctl::HOST_NETWORK as u32;
const HOST_IPC: u32 = kubenode_sysctl::HOST_IPC as u32;

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
pub fn sysctl_parse_kernel_version(env: Env, version: String) -> napi::Result<Vec<f64>> {
    throwing(&env, || {
        let v = KernelVersion::parse(&version).map_err(|e| err(ErrorCode::Parse, e))?;
        Ok(v.components().iter().map(|&c| c as f64).collect())
    })
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

fn k8s_version(v: Option<String>) -> Result<KubernetesVersion> {
    match v {
        None => Ok(KubernetesVersion::default()),
        Some(v) => KubernetesVersion::parse(&v).map_err(|e| {
            let code = match e {
                KubernetesVersionError::Unsupported { .. } => ErrorCode::Unsupported,
                _ => ErrorCode::Parse,
            };
            NativeError::new(code, ErrorKind::KubernetesVersion, e)
        }),
    }
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
        let (v, kernel_error) = match kernel {
            Some(k) => (
                Some(KernelVersion::parse(&k).map_err(|e| err(ErrorCode::Parse, e))?),
                None,
            ),
            None => match read_kernel_version() {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e.to_string())),
            },
        };
        Ok(SysctlSafeList {
            names: safe_sysctl_allowlist(v.as_ref(), k8s)
                .into_iter()
                .map(String::from)
                .collect(),
            kernel: v.map(|v| v.to_string()),
            kernel_error,
            kubernetes_version: k8s.to_string(),
        })
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
            since: format!("1.{}", s.since),
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
    /// Shared with this thread's slot registry, which the staged call reads.
    shared: Rc<staged::Shared>,
    slot: u32,
    scratch: RefCell<Scratch>,
}

impl Drop for JsSysctlAllowlist {
    fn drop(&mut self) {
        staged::unregister(self.slot);
    }
}

/// This thread's staging area for `sysctlAdmitStaged` (one per JS environment; the same
/// buffer on every call): `[slot, count, flags, ids…]` as u32, `sysctlStagedCapacity()`
/// ids at most. Throws `ERR_KUBENODE_UNSUPPORTED` where external buffers are not allowed.
#[napi(ts_return_type = "ArrayBuffer")]
pub fn sysctl_staging_buffer(env: Env) -> napi::Result<napi::Unknown<'static>> {
    throwing(&env, || staged::staging_buffer(&env))
}

/// How many sysctl ids fit in the staging area.
#[napi]
pub fn sysctl_staged_capacity() -> u32 {
    (staged::LEN - staged::HEADER) as u32
}

/// Admits the pod staged in this thread's staging area against the allowlist in its slot.
/// Returns 0 when admitted, `index << 2 | verdict` for the first forbidden sysctl (verdict
/// 1 not allowlisted, 2 host network, 3 host IPC), or 0xFFFFFFFF when the staged words are not
/// a valid pod (unknown slot or name index, count over capacity, no staging area). Takes no
/// arguments: that is what makes it cheap to call.
#[napi]
pub fn sysctl_admit_staged() -> u32 {
    staged::admit_staged()
}

/// Reusable buffers for reading the joined names, so an admission allocates nothing.
#[derive(Default)]
struct Scratch {
    units: Vec<u16>,
    bytes: Vec<u8>,
}

/// Reads the NUL-joined names. V8 copies a one-byte string to UTF-16 with a plain widening loop,
/// several times faster than its UTF-8 writer; ASCII (every real sysctl name) is narrowed here,
/// anything else decoded as the UTF-8 path would (lone surrogates become U+FFFD).
fn read_joined<'s>(s: &JsString, scratch: &'s mut Scratch) -> Result<Cow<'s, str>> {
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

fn batch_err(e: BatchError) -> NativeError {
    let code = match e {
        BatchError::Separator => ErrorCode::Conflict,
        BatchError::TooFewIds => ErrorCode::OutOfRange,
        BatchError::LengthMismatch | BatchError::UnknownName(_) => ErrorCode::InvalidArg,
    };
    err(code, e)
}

fn rejections(v: Vec<Rejection>) -> SysctlRejections {
    let (indexes, messages) = v.into_iter().map(|r| (r.index, r.error.message())).unzip();
    SysctlRejections { indexes, messages }
}

#[napi]
impl JsSysctlAllowlist {
    /// `NewAllowlist`; errors carry upstream's message.
    #[napi(constructor)]
    pub fn new(env: Env, patterns: Vec<String>) -> napi::Result<Self> {
        throwing(&env, || {
            let inner = Allowlist::new(&patterns).map_err(|e| err(ErrorCode::InvalidArg, e))?;
            let shared = Rc::new(staged::Shared {
                inner,
                names: RefCell::default(),
            });
            let slot = staged::register(Rc::clone(&shared))?;
            Ok(Self {
                shared,
                slot,
                scratch: RefCell::default(),
            })
        })
    }

    /// This allowlist's slot for `sysctlAdmitStaged` (valid on this thread while the object
    /// lives).
    #[napi(getter)]
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// Admits one pod: `joined` holds `count` (≥ 1) names separated by NUL. Returns null when
    /// admitted, else the message (built only then). Throws `ERR_KUBENODE_CONFLICT` if a name
    /// contains NUL (the caller then uses `admitList`).
    #[napi(ts_args_type = "joined: string, count: number, flags: number")]
    pub fn admit_joined(
        &self,
        env: Env,
        joined: JsString,
        count: u32,
        flags: u32,
    ) -> napi::Result<Option<String>> {
        throwing(&env, || {
            let mut scratch = self.scratch.borrow_mut();
            let joined = read_joined(&joined, &mut scratch)?;
            let r = self
                .shared
                .inner
                .admit_joined(
                    &joined,
                    u64::from(count),
                    flags & HOST_NETWORK != 0,
                    flags & HOST_IPC != 0,
                )
                .map_err(batch_err)?;
            Ok(r.err().map(|e| e.message()))
        })
    }

    /// Registers a name for `admitIds`/`admitManyIds` and returns its index (the caller keeps
    /// the name → index map; registering twice gives two indexes).
    #[napi]
    pub fn intern(&self, name: String) -> u32 {
        self.shared
            .names
            .borrow_mut()
            .intern(&self.shared.inner, &name)
    }

    /// Forgets every registered name.
    #[napi]
    pub fn reset_names(&self) {
        self.shared.names.borrow_mut().clear();
    }

    /// Admits one pod whose sysctls are the registered names `ids[0..count]`. Returns null when
    /// admitted, else the message (built only then).
    #[napi]
    pub fn admit_ids(
        &self,
        env: Env,
        ids: &[u32],
        count: u32,
        flags: u32,
    ) -> napi::Result<Option<String>> {
        throwing(&env, || {
            let ids = ids
                .get(..count as usize)
                .ok_or_else(|| err(ErrorCode::OutOfRange, "count exceeds the ids given"))?;
            let r = self
                .shared
                .names
                .borrow()
                .admit(ids, flags & HOST_NETWORK != 0, flags & HOST_IPC != 0)
                .map_err(|e| err(ErrorCode::InvalidArg, e))?;
            Ok(r.err().map(|e| e.message()))
        })
    }

    /// Admits many pods in one crossing: pod i has the next `counts[i]` registered names of
    /// `ids` and host flags `flags[i]`. Messages are built only for rejected pods.
    #[napi]
    pub fn admit_many_ids(
        &self,
        env: Env,
        ids: &[u32],
        counts: &[u32],
        flags: &[u8],
    ) -> napi::Result<SysctlRejections> {
        throwing(&env, || {
            self.shared
                .names
                .borrow()
                .admit_batch(ids, counts, flags)
                .map(rejections)
                .map_err(batch_err)
        })
    }

    #[napi]
    pub fn admit_list(&self, names: Vec<String>, flags: u32) -> Option<String> {
        self.shared
            .inner
            .admit(
                names.iter().map(String::as_str),
                flags & HOST_NETWORK != 0,
                flags & HOST_IPC != 0,
            )
            .err()
            .map(|e| e.message())
    }

    /// Admits many pods in one crossing: all names NUL-joined, `counts[i]` names and
    /// `flags[i]` for pod i. Messages are built only for rejected pods.
    #[napi(ts_args_type = "joined: string, counts: Uint32Array, flags: Uint8Array")]
    pub fn admit_many(
        &self,
        env: Env,
        joined: JsString,
        counts: Uint32Array,
        flags: Uint8Array,
    ) -> napi::Result<SysctlRejections> {
        throwing(&env, || {
            let mut scratch = self.scratch.borrow_mut();
            let joined = read_joined(&joined, &mut scratch)?;
            self.shared
                .inner
                .admit_batch(&joined, &counts, &flags)
                .map(rejections)
                .map_err(batch_err)
        })
    }

    /// The entries as stored: normalised keys, prefixes without the `*`.
    #[napi]
    pub fn entries(&self) -> Vec<SysctlAllowlistEntry> {
        let mut v: Vec<SysctlAllowlistEntry> = self
            .shared
            .inner
            .exact()
            .map(|(k, ns)| SysctlAllowlistEntry {
                key: k.to_string(),
                namespace: ns.as_str().to_string(),
                prefix: false,
            })
            .chain(
                self.shared
                    .inner
                    .prefixes()
                    .map(|(k, ns)| SysctlAllowlistEntry {
                        key: k.to_string(),
                        namespace: ns.as_str().to_string(),
                        prefix: true,
                    }),
            )
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
pub struct SysctlApplyOutcome {
    pub applied: Vec<SysctlApplied>,
    pub error: Option<NativeError>,
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
                error: Some((&e).into()),
            },
        })
    }
}

/// Writes sysctls inside the target's namespaces off the JS thread.
#[napi(ts_return_type = "Promise<SysctlApplyOutcome>")]
pub fn sysctl_apply(
    env: Env,
    target: SysctlTarget,
    sysctls: Vec<SysctlPair>,
) -> napi::Result<AsyncTask<ApplyTask>> {
    throwing(&env, || {
        let target = NsTarget::new(
            target.pid,
            target.netns_path.map(Into::into),
            target.ipcns_path.map(Into::into),
            target.utsns_path.map(Into::into),
        )
        .map_err(|e| NativeError::from(&e))?;
        Ok(AsyncTask::new(ApplyTask {
            target,
            sysctls: sysctls.into_iter().map(|p| (p.name, p.value)).collect(),
        }))
    })
}

#[napi(object)]
pub struct SysctlProbeResult {
    pub name: String,
    pub namespace: String,
    /// `isolated`, `leaked`, `absent`, `unchangeable`, `not-namespaced` or `error`.
    pub outcome: String,
    pub host_value: Option<String>,
    pub probe_value: Option<String>,
    pub detail: Option<String>,
}

#[napi(object)]
pub struct SysctlProbeOutcome {
    pub results: Vec<SysctlProbeResult>,
    pub error: Option<NativeError>,
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
                error: Some((&e).into()),
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
