//! Staged per-pod admission. A napi function with no arguments skips `napi_get_cb_info` and
//! argument conversion entirely (about a third of the cost of a class-method call with typed
//! arrays), so a pod is written into a staging area shared with JS and admitted by a
//! zero-argument call that finds the allowlist by its slot number.
//!
//! Layout (u32 words): `[slot, count, flags, id_0 … id_{count-1}]`.
//!
//! Soundness:
//! - The staging memory is allocated here, once per JS thread, and deliberately never freed
//!   (1 KiB per thread that ever stages a pod). Whatever JS does with the `ArrayBuffer`
//!   (detach it, transfer it, drop it), the pointer kept here stays valid.
//! - It is read only through `AtomicU32` (relaxed: a plain load on x86-64 and arm64), and JS
//!   writes plain u32s into the same memory; even a JS thread writing while another reads
//!   (the buffer transferred to a worker) is then a value race, not undefined behaviour.
//!   Values read are untrusted: slot, count and every id are bounds-checked.
//! - V8 refuses two `ArrayBuffer`s over the same memory, so the buffer is created once per
//!   thread and a strong reference keeps it alive; later calls return the same buffer.
//! - State is thread-local. Node runs each environment (the main thread, each worker) on its
//!   own thread, so every environment gets its own staging area and slot registry; an
//!   allowlist is registered, used and finalized on the thread of the environment that
//!   created it.

use kubenode_sysctl::{Allowlist, NameTable};
use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Env, Unknown};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::errors::{err, ErrorCode, Result};

/// Words before the ids: slot, count, flags.
pub const HEADER: usize = 3;
/// Total words (1 KiB); a pod with more than `LEN - HEADER` sysctls takes `admitIds`.
pub const LEN: usize = 256;
/// Returned when the staged pod cannot be read: unknown slot or id, or count out of range.
/// Never a valid rejection code (those are below 2^10).
pub const STAGED_ERROR: u32 = u32::MAX;

type Stage = [AtomicU32; LEN];

/// What the class wrapper and the staged call share.
pub struct Shared {
    pub inner: Allowlist,
    pub names: RefCell<NameTable>,
}

struct State {
    stage: Cell<Option<&'static Stage>>,
    /// The strong reference keeping this thread's staging `ArrayBuffer` alive.
    buffer: Cell<sys::napi_ref>,
    slots: RefCell<Vec<Option<Rc<Shared>>>>,
    free: RefCell<Vec<u32>>,
}

thread_local! {
    static STATE: State = const {
        State {
            stage: Cell::new(None),
            buffer: Cell::new(std::ptr::null_mut()),
            slots: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
        }
    };
}

/// Registers an allowlist on this thread and returns its slot.
pub fn register(shared: Rc<Shared>) -> Result<u32> {
    STATE.with(|s| {
        let mut slots = s.slots.borrow_mut();
        if let Some(i) = s.free.borrow_mut().pop() {
            if let Some(slot) = slots.get_mut(i as usize) {
                *slot = Some(shared);
                return Ok(i);
            }
        }
        let i = u32::try_from(slots.len())
            .map_err(|_| err(ErrorCode::OutOfRange, "too many sysctl allowlists"))?;
        slots.push(Some(shared));
        Ok(i)
    })
}

/// Frees `slot` (the allowlist was finalized). A no-op during thread teardown.
pub fn unregister(slot: u32) {
    let _ = STATE.try_with(|s| {
        if let Some(entry) = s.slots.borrow_mut().get_mut(slot as usize) {
            if entry.take().is_some() {
                s.free.borrow_mut().push(slot);
            }
        }
    });
}

/// This thread's staging buffer (created on first use), or an error where the runtime does
/// not allow external buffers (the caller then keeps using `admitIds`).
pub fn staging_buffer(env: &Env) -> Result<Unknown<'static>> {
    STATE.with(|s| {
        let mut value = std::ptr::null_mut();
        let r = s.buffer.get();
        if !r.is_null() {
            // SAFETY: `r` is a live reference created below in this same environment.
            let status = unsafe { sys::napi_get_reference_value(env.raw(), r, &mut value) };
            if status == sys::Status::napi_ok && !value.is_null() {
                // SAFETY: `value` is a valid handle in the current scope.
                return unsafe { Unknown::from_napi_value(env.raw(), value) }
                    .map_err(|e| err(ErrorCode::Unsupported, e));
            }
            return Err(err(
                ErrorCode::Unsupported,
                "the sysctl staging buffer is gone",
            ));
        }
        let stage: &'static Stage = Box::leak(Box::new([const { AtomicU32::new(0) }; LEN]));
        // SAFETY: `stage` is valid for `LEN * 4` bytes forever (leaked); no finalizer, since
        // it must outlive any detach or transfer. Only created once per thread.
        let status = unsafe {
            sys::napi_create_external_arraybuffer(
                env.raw(),
                stage.as_ptr().cast_mut().cast(),
                std::mem::size_of::<Stage>(),
                None,
                std::ptr::null_mut(),
                &mut value,
            )
        };
        if status != sys::Status::napi_ok {
            return Err(err(
                ErrorCode::Unsupported,
                "external ArrayBuffers are not allowed in this runtime",
            ));
        }
        let mut r = std::ptr::null_mut();
        // SAFETY: `value` was just created in this scope.
        let status = unsafe { sys::napi_create_reference(env.raw(), value, 1, &mut r) };
        if status != sys::Status::napi_ok {
            return Err(err(
                ErrorCode::Unsupported,
                "could not keep the sysctl staging buffer",
            ));
        }
        s.buffer.set(r);
        s.stage.set(Some(stage));
        // SAFETY: as above.
        unsafe { Unknown::from_napi_value(env.raw(), value) }
            .map_err(|e| err(ErrorCode::Unsupported, e))
    })
}

/// Admits the staged pod: 0 admitted; `index << 2 | verdict` (verdict 1–3, see `Verdict`) for
/// the first forbidden sysctl; `STAGED_ERROR` if the staged words are not a valid pod.
#[inline]
pub fn admit_staged() -> u32 {
    STATE.with(|s| {
        let Some(stage) = s.stage.get() else {
            return STAGED_ERROR;
        };
        let [slot, count, flags, ids @ ..] = stage;
        let (slot, count, flags) = (slot.load(Relaxed), count.load(Relaxed), flags.load(Relaxed));
        let Some(ids) = ids.get(..count as usize) else {
            return STAGED_ERROR;
        };
        let slots = s.slots.borrow();
        let Some(Some(shared)) = slots.get(slot as usize) else {
            return STAGED_ERROR;
        };
        let Ok(names) = shared.names.try_borrow() else {
            return STAGED_ERROR;
        };
        match names.first_rejection(
            ids.iter().map(|a| a.load(Relaxed)),
            flags & super::HOST_NETWORK != 0,
            flags & super::HOST_IPC != 0,
        ) {
            Ok(None) => 0,
            Ok(Some((i, v))) => ((i as u32) << 2) | v as u32,
            Err(_) => STAGED_ERROR,
        }
    })
}
