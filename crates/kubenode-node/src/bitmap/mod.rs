// The core's options are the JS shape (its `napi` feature).
use kubenode_bitmap::{AllocationBitmap as Core, BitmapError, BitmapOptions};
use napi::bindgen_prelude::{Buffer, Uint32ArraySlice};
use napi::Env;
use napi_derive::napi;
use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

use crate::convert;
use crate::errors::{err, throwing, ErrorCode, NativeError, Result};

mod staged;

pub(crate) fn to_js(e: BitmapError) -> NativeError {
    let code = match e {
        // Like Node's own failed buffer allocations, a map too big for memory is a range error.
        BitmapError::OutOfRange { .. }
        | BitmapError::AllocationFailed { .. }
        | BitmapError::InvalidOffset { .. }
        | BitmapError::NumberOutOfRange { .. } => ErrorCode::OutOfRange,
        BitmapError::RangeMismatch => ErrorCode::Conflict,
        _ => ErrorCode::InvalidArg,
    };
    err(code, e)
}

/// A bitmap's persisted state, upstream's `RangeAllocation` format.
#[napi(object)]
pub struct BitmapSnapshot {
    /// The map's `rangeSpec`; `restore` refuses a snapshot of another range.
    pub range: String,
    /// Upstream's format: the bit set as a big-endian integer without leading zero bytes.
    pub data: Buffer,
}

#[napi(js_name = "AllocationBitmap")]
pub struct JsAllocationBitmap {
    /// Shared with this thread's slot registry, which the staged calls read.
    map: staged::Shared,
    slot: u32,
}

impl Drop for JsAllocationBitmap {
    fn drop(&mut self) {
        staged::unregister(self.slot);
    }
}

/// Only a staged call can hold the map, and none runs during a method call: a failed borrow
/// would be a binding bug, reported as an error rather than a panic.
fn busy() -> NativeError {
    err(ErrorCode::Conflict, "the allocation bitmap is in use")
}

impl JsAllocationBitmap {
    fn inner(&self) -> Result<Ref<'_, Core>> {
        self.map.try_borrow().map_err(|_| busy())
    }

    fn inner_mut(&self) -> Result<RefMut<'_, Core>> {
        self.map.try_borrow_mut().map_err(|_| busy())
    }
}

#[napi]
impl JsAllocationBitmap {
    #[napi(constructor)]
    pub fn new(
        env: Env,
        max: f64,
        range_spec: String,
        options: Option<BitmapOptions>,
    ) -> napi::Result<Self> {
        throwing(&env, || {
            let max = convert::index("max", max, kubenode_bitmap::MAX_SLOTS)?;
            let map = Core::with_options(max, range_spec, &options.unwrap_or_default());
            let map = Rc::new(RefCell::new(map.map_err(to_js)?));
            let slot = staged::register(Rc::clone(&map))?;
            Ok(Self { map, slot })
        })
    }

    /// This map's number in the thread's registry, which staged calls name it by.
    #[napi(getter)]
    pub fn slot(&self) -> u32 {
        self.slot
    }

    #[napi(getter)]
    pub fn max(&self, env: Env) -> napi::Result<f64> {
        throwing(&env, || Ok(self.inner()?.max() as f64))
    }

    #[napi(getter)]
    pub fn range_spec(&self, env: Env) -> napi::Result<String> {
        throwing(&env, || Ok(self.inner()?.range_spec().to_string()))
    }

    #[napi]
    pub fn allocate(&mut self, env: Env, i: f64) -> napi::Result<bool> {
        throwing(&env, || {
            let i = convert::integer("offset", i)?;
            self.inner_mut()?.allocate(i).map_err(to_js)
        })
    }

    #[napi]
    pub fn allocate_next(&mut self, env: Env) -> napi::Result<Option<f64>> {
        throwing(&env, || {
            Ok(self
                .inner_mut()?
                .allocate_next()
                .map_err(to_js)?
                .map(|i| i as f64))
        })
    }

    #[napi]
    pub fn release(&mut self, env: Env, i: f64) -> napi::Result<()> {
        throwing(&env, || {
            let i = convert::index("offset", i, u64::MAX >> 11)?;
            self.inner_mut()?.release(i as usize);
            Ok(())
        })
    }

    #[napi]
    pub fn has(&self, env: Env, i: f64) -> napi::Result<bool> {
        throwing(&env, || {
            let i = convert::index("offset", i, u64::MAX >> 11)?;
            Ok(self.inner()?.has(i as usize))
        })
    }

    #[napi]
    pub fn free(&self, env: Env) -> napi::Result<f64> {
        throwing(&env, || Ok(self.inner()?.free() as f64))
    }

    #[napi]
    pub fn count(&self, env: Env) -> napi::Result<f64> {
        throwing(&env, || Ok(self.inner()?.count() as f64))
    }

    /// All set slots, ascending, in one crossing. There is deliberately no native `forEach`: a
    /// callback into JS while an iterator borrows the map could mutate (or `restore`) it under
    /// the iterator; `ts/bitmap.ts` builds `forEach` on this array instead.
    #[napi]
    pub fn to_array(&self, env: Env) -> napi::Result<Vec<f64>> {
        throwing(&env, || {
            Ok(self.inner()?.iter().map(|i| i as f64).collect())
        })
    }

    #[napi]
    pub fn snapshot(&self, env: Env) -> napi::Result<BitmapSnapshot> {
        throwing(&env, || {
            let (range, data) = self.inner()?.snapshot();
            Ok(BitmapSnapshot {
                range,
                data: data.into(),
            })
        })
    }

    #[napi]
    pub fn restore(&mut self, env: Env, range: String, data: &[u8]) -> napi::Result<()> {
        throwing(&env, || {
            self.inner_mut()?.restore(&range, data).map_err(to_js)
        })
    }
}

/// Batch calls: one crossing per batch (`ts/bitmap.ts` builds `allocateNext(n)` and
/// `releaseMany` on them). Slots travel as `Uint32Array`s the caller owns, so no JS array is
/// built on this side.
#[napi]
impl JsAllocationBitmap {
    /// Fills `out` by consecutive allocateNext calls; returns how many slots were taken (fewer
    /// than `out.length` only when the map filled up).
    #[napi]
    pub fn allocate_next_into(
        &mut self,
        env: Env,
        mut out: Uint32ArraySlice<'_>,
    ) -> napi::Result<u32> {
        throwing(&env, || {
            // SAFETY: JS is blocked for the whole call, so nothing else touches the array's memory.
            let out = unsafe { out.as_mut() };
            Ok(self.inner_mut()?.allocate_next_into(out).map_err(to_js)? as u32)
        })
    }

    /// Releases every slot; returns how many were taken before.
    #[napi]
    pub fn release_many(&mut self, env: Env, slots: &[u32]) -> napi::Result<u32> {
        throwing(&env, || {
            Ok(self
                .inner_mut()?
                .release_many(slots.iter().map(|&i| i as usize)) as u32)
        })
    }

    /// `release_many` for JS numbers: every value is checked before any slot is released, so a
    /// bad value leaves the map unchanged.
    #[napi]
    pub fn release_many_numbers(&mut self, env: Env, slots: &[f64]) -> napi::Result<u32> {
        throwing(&env, || {
            for &i in slots {
                convert::index("offset", i, u64::MAX >> 11)?;
            }
            Ok(self
                .inner_mut()?
                .release_many(slots.iter().map(|&i| i as usize)) as u32)
        })
    }
}
