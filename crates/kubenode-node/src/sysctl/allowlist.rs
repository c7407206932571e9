//! The `SysctlAllowlist` class and the staged (zero-argument) admission entry point.

use std::cell::RefCell;
use std::rc::Rc;

use kubenode_sysctl::Allowlist;
// Imported under their JS names, which the generated typings then use.
use kubenode_sysctl::{AllowlistEntry as SysctlAllowlistEntry, Rejections as SysctlRejections};
use napi::bindgen_prelude::Either;
use napi::Env;
use napi_derive::napi;

use super::convert::{batch_err, flag_byte};
use super::staged;
use crate::convert::k8s_version;
use crate::errors::{err, throwing, ErrorCode};

#[napi(js_name = "SysctlAllowlist")]
pub struct JsSysctlAllowlist {
    /// Shared with this thread's slot registry, which the staged call reads.
    shared: Rc<staged::Shared>,
    slot: u32,
}

impl Drop for JsSysctlAllowlist {
    fn drop(&mut self) {
        staged::unregister(self.slot);
    }
}

/// This thread's staging area for `sysctlAdmitStaged` (one per JS environment; the same
/// buffer on every call): u32 words laid out as `sysctlStageLayout()` says. Throws
/// `ERR_KUBENODE_UNSUPPORTED` where external buffers are not allowed.
#[napi(ts_return_type = "ArrayBuffer")]
pub fn sysctl_staging_buffer(env: Env) -> napi::Result<napi::Unknown<'static>> {
    throwing(&env, || staged::staging_buffer(&env))
}

/// Admits the pod staged in this thread's staging area against the allowlist in its slot:
/// null when admitted, else upstream's message for the first forbidden sysctl; the layout's
/// `unreadable` number when the staged words are not a valid pod (unknown slot or name index,
/// count over capacity, no staging area). Takes no arguments: that is what makes it cheap.
#[napi(ts_return_type = "string | null | number")]
pub fn sysctl_admit_staged() -> Either<u32, Option<String>> {
    staged::admit_staged()
}

#[napi]
impl JsSysctlAllowlist {
    /// `NewAllowlist` of a Kubernetes release (default: the newest kubenode knows); errors
    /// carry upstream's message.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        patterns: Vec<String>,
        kubernetes_version: Option<String>,
    ) -> napi::Result<Self> {
        throwing(&env, || {
            let k8s = k8s_version(kubernetes_version)?;
            let inner = Allowlist::for_release(&patterns, k8s)
                .map_err(|e| err(ErrorCode::InvalidArg, e))?;
            let shared = Rc::new(staged::Shared {
                inner,
                names: RefCell::default(),
            });
            let slot = staged::register(Rc::clone(&shared))?;
            Ok(Self { shared, slot })
        })
    }

    /// This allowlist's slot for `sysctlAdmitStaged` (valid on this thread while the object
    /// lives).
    #[napi(getter)]
    pub fn slot(&self) -> u32 {
        self.slot
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
                .admit(ids, flag_byte(flags))
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
                .map(SysctlRejections::from)
                .map_err(batch_err)
        })
    }

    /// The entries as stored: normalised keys, prefixes without the `*`.
    #[napi]
    pub fn entries(&self) -> Vec<SysctlAllowlistEntry> {
        self.shared.inner.entries()
    }
}
