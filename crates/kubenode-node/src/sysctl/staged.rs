//! Staged per-pod admission. A napi function with no arguments skips `napi_get_cb_info` and
//! argument conversion entirely (about a third of the cost of a class-method call with typed
//! arrays), so a pod is written into a staging area shared with JS (see `crate::staging`) and
//! admitted by a zero-argument call that finds the allowlist by its slot number.
//!
//! Layout (u32 words): `[slot, count, flags, id_0 … id_{count-1}]`. Values read are untrusted:
//! slot, count and every id are bounds-checked. An allowlist is registered, used and finalized
//! on the thread of the environment that created it.

use kubenode_sysctl::{Allowlist, NameTable};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering::Relaxed;

use crate::errors::Result;
use crate::staging::{Registry, Staging};

/// Words before the ids: slot, count, flags.
pub const HEADER: usize = 3;
/// Total words (1 KiB); a pod with more than `LEN - HEADER` sysctls takes `admitIds`.
pub const LEN: usize = 256;
/// Returned when the staged pod cannot be read: unknown slot or id, or count out of range.
/// Never a valid rejection code (those are below 2^11).
pub const STAGED_ERROR: u32 = u32::MAX;

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

/// Admits the staged pod: 0 admitted; `index << 3 | verdict` (verdict 1–4, see `Verdict`) for
/// the first forbidden sysctl; `STAGED_ERROR` if the staged words are not a valid pod.
#[inline]
pub fn admit_staged() -> u32 {
    let Some(stage) = STAGE.with(|s| s.words()) else {
        return STAGED_ERROR;
    };
    let [slot, count, flags, ids @ ..] = stage;
    let (slot, count, flags) = (slot.load(Relaxed), count.load(Relaxed), flags.load(Relaxed));
    let Some(ids) = ids.get(..count as usize) else {
        return STAGED_ERROR;
    };
    ALLOWLISTS.with(|r| {
        r.with(slot, STAGED_ERROR, |shared| {
            let Ok(names) = shared.names.try_borrow() else {
                return STAGED_ERROR;
            };
            match names.first_rejection(
                ids.iter().map(|a| a.load(Relaxed)),
                super::convert::flag_byte(flags),
            ) {
                Ok(None) => 0,
                Ok(Some((i, v))) => ((i as u32) << 3) | v as u32,
                Err(_) => STAGED_ERROR,
            }
        })
    })
}
