//! A per-thread staging area shared with JS, and a per-thread registry of native objects by
//! slot number: together they let a zero-argument napi function (which skips
//! `napi_get_cb_info` and all argument conversion) find its object and its arguments.
//!
//! Soundness:
//! - The staging memory is allocated once per JS thread and deliberately never freed.
//!   Whatever JS does with the `ArrayBuffer` (detach it, transfer it, drop it), the pointer kept
//!   here stays valid.
//! - It is accessed only through `AtomicU32` (relaxed: a plain load or store on x86-64 and
//!   arm64), and JS reads and writes plain words of the same memory; even another JS thread
//!   touching it (the buffer transferred to a worker) is then a value race, not undefined
//!   behaviour. Values read are untrusted and bounds-checked by the callers.
//! - V8 refuses two `ArrayBuffer`s over the same memory, so the buffer is created once per
//!   thread and a strong reference keeps it alive; later calls return the same buffer.
//! - State is thread-local: Node runs each environment (the main thread, each worker) on its
//!   own thread, so each gets its own staging area and registry.

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Env, Unknown};
use std::cell::{Cell, RefCell};
use std::sync::atomic::AtomicU32;

use crate::errors::{err, ErrorCode, Result};

/// `LEN` words of staging memory, 8-byte aligned so JS can also view it as a `Float64Array`.
#[repr(C, align(8))]
pub struct Words<const LEN: usize>(pub [AtomicU32; LEN]);

/// One thread's staging area (use in a `thread_local!`).
pub struct Staging<const LEN: usize> {
    words: Cell<Option<&'static Words<LEN>>>,
    /// The strong reference keeping the staging `ArrayBuffer` alive.
    buffer: Cell<sys::napi_ref>,
}

impl<const LEN: usize> Staging<LEN> {
    pub const fn new() -> Self {
        Self {
            words: Cell::new(None),
            buffer: Cell::new(std::ptr::null_mut()),
        }
    }

    /// The words, once `buffer` has created them.
    #[inline]
    pub fn words(&self) -> Option<&'static [AtomicU32; LEN]> {
        self.words.get().map(|w| &w.0)
    }

    /// The staging `ArrayBuffer` (created on first use), or an error where the runtime does not
    /// allow external buffers. `what` names it in errors.
    pub fn buffer(&self, env: &Env, what: &str) -> Result<Unknown<'static>> {
        let mut value = std::ptr::null_mut();
        let r = self.buffer.get();
        if !r.is_null() {
            // SAFETY: `r` is a live reference created below in this same environment.
            let status = unsafe { sys::napi_get_reference_value(env.raw(), r, &mut value) };
            if status == sys::Status::napi_ok && !value.is_null() {
                // SAFETY: `value` is a valid handle in the current scope.
                return unsafe { Unknown::from_napi_value(env.raw(), value) }
                    .map_err(|e| err(ErrorCode::Unsupported, e));
            }
            return Err(err(ErrorCode::Unsupported, format!("the {what} is gone")));
        }
        let words: &'static Words<LEN> =
            Box::leak(Box::new(Words([const { AtomicU32::new(0) }; LEN])));
        // SAFETY: `words` is valid for `LEN * 4` bytes forever (leaked); no finalizer, since it
        // must outlive any detach or transfer. Only created once per thread.
        let status = unsafe {
            sys::napi_create_external_arraybuffer(
                env.raw(),
                words.0.as_ptr().cast_mut().cast(),
                std::mem::size_of::<Words<LEN>>(),
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
                format!("could not keep the {what}"),
            ));
        }
        self.buffer.set(r);
        self.words.set(Some(words));
        // SAFETY: as above.
        unsafe { Unknown::from_napi_value(env.raw(), value) }
            .map_err(|e| err(ErrorCode::Unsupported, e))
    }
}

/// One thread's native objects by slot number (use in a `thread_local!`); freed slots are
/// reused, so the numbers stay small.
pub struct Registry<T> {
    slots: RefCell<Vec<Option<T>>>,
    free: RefCell<Vec<u32>>,
}

impl<T> Registry<T> {
    pub const fn new() -> Self {
        Self {
            slots: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
        }
    }

    /// Registers `value` and returns its slot. `what` names the objects in the error.
    pub fn register(&self, value: T, what: &str) -> Result<u32> {
        // Nothing registers or frees while `with` lends an object (no JS runs then), so the
        // borrows below cannot fail; were one ever to, it is an error, not a panic.
        let busy = || {
            err(
                ErrorCode::Conflict,
                format!("the registry of {what} is in use"),
            )
        };
        let mut slots = self.slots.try_borrow_mut().map_err(|_| busy())?;
        let mut free = self.free.try_borrow_mut().map_err(|_| busy())?;
        if let Some(i) = free.pop() {
            if let Some(slot) = slots.get_mut(i as usize) {
                *slot = Some(value);
                return Ok(i);
            }
        }
        let i = u32::try_from(slots.len())
            .map_err(|_| err(ErrorCode::OutOfRange, format!("too many {what}")))?;
        slots.push(Some(value));
        Ok(i)
    }

    /// Frees `slot` (its object was finalized). A busy registry, never expected, keeps the
    /// slot: a leak rather than a panic.
    pub fn unregister(&self, slot: u32) {
        let (Ok(mut slots), Ok(mut free)) =
            (self.slots.try_borrow_mut(), self.free.try_borrow_mut())
        else {
            return;
        };
        if let Some(entry) = slots.get_mut(slot as usize) {
            if entry.take().is_some() {
                free.push(slot);
            }
        }
    }

    /// Runs `f` on the object in `slot`, or returns `fail` when there is none (or the registry
    /// is being changed, which `f` itself could only do by a bug).
    #[inline]
    pub fn with<R>(&self, slot: u32, fail: R, f: impl FnOnce(&T) -> R) -> R {
        let Ok(slots) = self.slots.try_borrow() else {
            return fail;
        };
        match slots.get(slot as usize) {
            Some(Some(value)) => f(value),
            _ => fail,
        }
    }
}
