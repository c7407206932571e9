use kubenode_bitmap::{AllocationBitmap as Core, BitmapError, SplitMix64, Strategy};
use napi::bindgen_prelude::{Buffer, Uint32ArraySlice};
use napi::Env;
use napi_derive::napi;

use crate::convert;
use crate::errors::{err, throwing, ErrorCode, NativeError};

fn to_js(e: BitmapError) -> NativeError {
    let code = match e {
        // Like Node's own failed buffer allocations, a map too big for memory is a range error.
        BitmapError::OutOfRange { .. }
        | BitmapError::AllocationFailed { .. }
        | BitmapError::InvalidOffset { .. } => ErrorCode::OutOfRange,
        BitmapError::RangeMismatch => ErrorCode::Conflict,
        _ => ErrorCode::InvalidArg,
    };
    err(code, e)
}

#[napi(object)]
pub struct BitmapOptions {
    /// `"random-scan"` (default) or `"contiguous-scan"`.
    pub strategy: Option<String>,
    /// Random scan only: slots below `offset` are used only when the rest is full.
    pub offset: Option<f64>,
    /// Seed for the random scan, for reproducible sequences.
    pub seed: Option<f64>,
}

#[napi(object)]
pub struct BitmapSnapshot {
    pub range: String,
    pub data: Buffer,
}

#[napi(js_name = "AllocationBitmap")]
pub struct JsAllocationBitmap {
    inner: Core,
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
            let opts = options.unwrap_or(BitmapOptions {
                strategy: None,
                offset: None,
                seed: None,
            });
            let strategy = match opts.strategy.as_deref().unwrap_or("random-scan") {
                "random-scan" => {
                    let offset = match opts.offset {
                        Some(o) => {
                            convert::index("offset", o, kubenode_bitmap::MAX_SLOTS)? as usize
                        }
                        None => 0,
                    };
                    Strategy::RandomScan { offset }
                }
                "contiguous-scan" => Strategy::ContiguousScan,
                other => {
                    return Err(err(
                        ErrorCode::InvalidArg,
                        format!(
                            "strategy must be \"random-scan\" or \"contiguous-scan\", got {other:?}"
                        ),
                    ))
                }
            };
            let rng = match opts.seed {
                Some(s) => SplitMix64::new(convert::index("seed", s, u64::MAX >> 11)?),
                None => SplitMix64::from_entropy(),
            };
            let inner = Core::with_rng(max, range_spec, strategy, rng).map_err(to_js)?;
            Ok(Self { inner })
        })
    }

    #[napi(getter)]
    pub fn max(&self) -> f64 {
        self.inner.max() as f64
    }

    #[napi(getter)]
    pub fn range_spec(&self) -> String {
        self.inner.range_spec().to_string()
    }

    #[napi]
    pub fn allocate(&mut self, env: Env, i: f64) -> napi::Result<bool> {
        throwing(&env, || {
            let i = convert::integer("offset", i)?;
            self.inner.allocate(i).map_err(to_js)
        })
    }

    #[napi]
    pub fn allocate_next(&mut self, env: Env) -> napi::Result<Option<f64>> {
        throwing(&env, || {
            Ok(self.inner.allocate_next().map_err(to_js)?.map(|i| i as f64))
        })
    }

    #[napi]
    pub fn release(&mut self, env: Env, i: f64) -> napi::Result<()> {
        throwing(&env, || {
            let i = convert::index("offset", i, u64::MAX >> 11)?;
            self.inner.release(i as usize);
            Ok(())
        })
    }

    #[napi]
    pub fn has(&self, env: Env, i: f64) -> napi::Result<bool> {
        throwing(&env, || {
            let i = convert::index("offset", i, u64::MAX >> 11)?;
            Ok(self.inner.has(i as usize))
        })
    }

    #[napi]
    pub fn free(&self) -> f64 {
        self.inner.free() as f64
    }

    #[napi]
    pub fn count(&self) -> f64 {
        self.inner.count() as f64
    }

    /// All set slots, ascending, in one crossing. There is deliberately no native `forEach`: a
    /// callback into JS while an iterator borrows the map could mutate (or `restore`) it under
    /// the iterator; `ts/bitmap.ts` builds `forEach` on this array instead.
    #[napi]
    pub fn to_array(&self) -> Vec<f64> {
        self.inner.iter().map(|i| i as f64).collect()
    }

    #[napi]
    pub fn snapshot(&self) -> BitmapSnapshot {
        let (range, data) = self.inner.snapshot();
        BitmapSnapshot {
            range,
            data: data.into(),
        }
    }

    #[napi]
    pub fn restore(&mut self, env: Env, range: String, data: &[u8]) -> napi::Result<()> {
        throwing(&env, || self.inner.restore(&range, data).map_err(to_js))
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
            Ok(self.inner.allocate_next_into(out).map_err(to_js)? as u32)
        })
    }

    /// Releases every slot; returns how many were taken before.
    #[napi]
    pub fn release_many(&mut self, slots: &[u32]) -> u32 {
        self.inner.release_many(slots.iter().map(|&i| i as usize)) as u32
    }

    /// `release_many` for JS numbers: every value is checked before any slot is released, so a
    /// bad value leaves the map unchanged.
    #[napi]
    pub fn release_many_numbers(&mut self, env: Env, slots: &[f64]) -> napi::Result<u32> {
        throwing(&env, || {
            for &i in slots {
                convert::index("offset", i, u64::MAX >> 11)?;
            }
            Ok(self.inner.release_many(slots.iter().map(|&i| i as usize)) as u32)
        })
    }
}
