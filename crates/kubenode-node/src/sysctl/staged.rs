//! Staged per-pod admission. A napi function with no arguments skips `napi_get_cb_info` and
//! argument conversion entirely (a quarter of the cost of `admitIds` with its typed array), so a
//! pod is written into a staging area shared with JS (see `crate::staging`) and admitted by a
//! zero-argument call that finds the allowlist by its slot number and returns the verdict
//! itself: null, or the message of a rejected pod (one crossing either way).
//!
//! Layout (u32 words, `SysctlStageLayout`): `[slot, count, flags, id_0 … id_{count-1}]`.
//! Values read are untrusted: slot, count and every id are bounds-checked. An allowlist is
//! registered, used and finalized on the thread of the environment that created it.

use kubenode_sysctl::{Allowlist, NameTable};
use napi::bindgen_prelude::Either;
use napi_derive::napi;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;

use crate::errors::Result;
use crate::staging::{Registry, Staging};

const SLOT: usize = 0;
const COUNT: usize = 1;
const FLAGS: usize = 2;
/// Words before the ids.
const HEADER: usize = 3;
/// Total words (1 KiB); a pod with more than `LEN - HEADER` sysctls takes `admitIds`.
const LEN: usize = 256;
/// Returned when the staged pod cannot be read: unknown slot or id, or count out of range.
const UNREADABLE: u32 = u32::MAX;

/// Where JS writes a pod in the staging area (u32 word indexes), the pod's host-flag bits and
/// what `sysctlAdmitStaged` returns for a pod it could not read; the one definition JS reads.
#[napi(object)]
pub struct SysctlStageLayout {
    pub slot: u32,
    pub count: u32,
    pub flags: u32,
    /// Index of the first id.
    pub ids: u32,
    /// Most ids a staged pod can have; larger pods take `admitIds`.
    pub capacity: u32,
    pub unreadable: u32,
    /// Flag bits: the pod shares the host's network, IPC namespace; has its own user namespace.
    pub host_network: u32,
    pub host_ipc: u32,
    pub pod_userns: u32,
}

#[napi]
pub fn sysctl_stage_layout() -> SysctlStageLayout {
    SysctlStageLayout {
        slot: SLOT as u32,
        count: COUNT as u32,
        flags: FLAGS as u32,
        ids: HEADER as u32,
        capacity: (LEN - HEADER) as u32,
        unreadable: UNREADABLE,
        host_network: kubenode_sysctl::HOST_NETWORK.into(),
        host_ipc: kubenode_sysctl::HOST_IPC.into(),
        pod_userns: kubenode_sysctl::POD_USERNS.into(),
    }
}

/// What the class wrapper and the staged call share.
pub struct Shared {
    pub inner: Allowlist,
    pub names: RefCell<NameTable>,
}

thread_local! {
    static STAGE: Staging<LEN> = const { Staging::new() };
    static ALLOWLISTS: Registry<Rc<Shared>> = const { Registry::new() };
}

/// Registers an allowlist on this thread and returns its slot.
pub fn register(shared: Rc<Shared>) -> Result<u32> {
    ALLOWLISTS.with(|r| r.register(shared, "sysctl allowlists"))
}

/// Frees `slot` (the allowlist was finalized). A no-op during thread teardown.
pub fn unregister(slot: u32) {
    let _ = ALLOWLISTS.try_with(|r| r.unregister(slot));
}

/// This thread's staging buffer (created on first use), or an error where the runtime does
/// not allow external buffers (the caller then keeps using `admitIds`).
pub fn staging_buffer(env: &napi::Env) -> Result<napi::Unknown<'static>> {
    STAGE.with(|s| s.buffer(env, "sysctl staging buffer"))
}

/// Admits the staged pod: null when admitted, upstream's message for the first forbidden
/// sysctl, or `UNREADABLE` when the staged words are not a valid pod.
#[inline]
pub fn admit_staged() -> Either<u32, Option<String>> {
    let unreadable = Either::A(UNREADABLE);
    let Some(stage) = STAGE.with(|s| s.words()) else {
        return unreadable;
    };
    let load = |i: usize| stage.get(i).map_or(UNREADABLE, |w| w.load(Relaxed));
    let (slot, count, flags) = (load(SLOT), load(COUNT), load(FLAGS));
    let Some(ids) = stage
        .get(HEADER..)
        .and_then(|ids| ids.get(..count as usize))
    else {
        return unreadable;
    };
    ALLOWLISTS.with(|r| {
        r.with(slot, Either::A(UNREADABLE), |shared| {
            let Ok(names) = shared.names.try_borrow() else {
                return Either::A(UNREADABLE);
            };
            let ids = ids.iter().map(|a| a.load(Relaxed));
            match names.first_rejection(ids.clone(), super::convert::flag_byte(flags)) {
                Ok(None) => Either::B(None),
                Ok(Some((i, v))) => match ids.clone().nth(i).and_then(|id| names.name(id)) {
                    Some(name) => Either::B(v.into_result(name).err().map(|e| e.message())),
                    None => Either::A(UNREADABLE),
                },
                Err(_) => Either::A(UNREADABLE),
            }
        })
    })
}
