//! Staged bitmap calls. A class-method call costs `napi_get_cb_info`, an unwrap of `this` and
//! argument conversion, several times the work of an AllocateNext on an empty map; a napi
//! function with no arguments skips all of that. So JS writes the map's slot number and the
//! arguments into a staging area shared with Rust (see `crate::staging`) and calls a
//! zero-argument function, which writes batch results back into the same area.
//!
//! Layout (u32 words, `BitmapStageLayout`): `[slot, count, generation, 0, data…]`; the data
//! starts at byte 16, so JS can view it as `Float64Array` too (offsets as JS numbers, which may
//! exceed 2^32).
//! Every staged call bumps `generation`: JS checks it after filling the data from a caller's
//! array (whose element reads could run code that makes staged calls of its own).
//!
//! The staged calls take no arguments, which is what makes them cheap: the map is the one in
//! the staged slot. Each returns `STAGED_ERROR` (`ERROR` for `bitmapStagedAllocateNext`) when
//! the staged words are unusable or the map errs; the caller then repeats the operation
//! through the class method, which throws the typed error.

use kubenode_bitmap::AllocationBitmap as Core;
use napi::Env;
use napi_derive::napi;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::convert;
use crate::errors::throwing;
use crate::staging::{Registry, Staging};

const SLOT: usize = 0;
const COUNT: usize = 1;
const GENERATION: usize = 2;
/// Words before the data: slot, count, generation, padding.
const HEADER: usize = 4;
/// Data words: 1024 slots or 512 offsets per staged batch; larger batches take the array calls.
const DATA: usize = 1024;
const LEN: usize = HEADER + DATA;
/// Returned by the u32 calls when the staged words are unusable (no staging area, unknown
/// slot, count over capacity, an offset that is not a valid index) or the map errs: JS then
/// repeats the operation through the class method, which throws the typed error. Never a
/// valid count (counts are at most `DATA`).
const STAGED_ERROR: u32 = u32::MAX;
/// `allocate_next_staged`: the map is full.
const FULL: f64 = -1.0;
/// `allocate_next_staged`: as `STAGED_ERROR`.
const ERROR: f64 = -2.0;

/// A map as the class wrapper and the staged calls share it.
pub type Shared = Rc<RefCell<Core>>;

thread_local! {
    static STAGE: Staging<LEN> = const { Staging::new() };
    static MAPS: Registry<Shared> = const { Registry::new() };
}

pub fn register(map: Shared) -> crate::errors::Result<u32> {
    MAPS.with(|m| m.register(map, "allocation bitmaps"))
}

/// Frees `slot` (its map was finalized). A no-op during thread teardown.
pub fn unregister(slot: u32) {
    let _ = MAPS.try_with(|m| m.unregister(slot));
}

/// This thread's staging area for the `bitmapStaged*` calls (one per JS environment; the same
/// buffer on every call): u32 words `[slot, count, generation, 0, data…]`, the data also
/// readable as `Float64Array` from index 2. Throws `ERR_KUBENODE_UNSUPPORTED` where external
/// buffers are not allowed.
#[napi(js_name = "bitmapStagingBuffer", ts_return_type = "ArrayBuffer")]
pub fn staging_buffer(env: Env) -> napi::Result<napi::Unknown<'static>> {
    throwing(&env, || {
        STAGE.with(|s| s.buffer(&env, "bitmap staging buffer"))
    })
}

/// Where JS writes a staged call in the staging area (u32 word indexes) and what the staged
/// calls return when they could not use it; the one definition JS reads.
#[napi(object)]
pub struct BitmapStageLayout {
    pub slot: u32,
    pub count: u32,
    pub generation: u32,
    /// Index of the first data word (even: the data is also a `Float64Array` from `data / 2`).
    pub data: u32,
    /// Data words: the largest staged batch of slots; half as many offsets as numbers.
    pub capacity: u32,
    /// The count calls could not use the staged words.
    pub staged_error: u32,
    /// `bitmapStagedAllocateNext`: the map is full (any other negative: not staged).
    pub full: f64,
}

#[napi(js_name = "bitmapStageLayout")]
pub fn layout() -> BitmapStageLayout {
    BitmapStageLayout {
        slot: SLOT as u32,
        count: COUNT as u32,
        generation: GENERATION as u32,
        data: HEADER as u32,
        capacity: DATA as u32,
        staged_error: STAGED_ERROR,
        full: FULL,
    }
}

/// Runs `f` on the staged words and the map in the staged slot; `fail` when there is none.
#[inline]
fn with_map<R>(fail: R, f: impl FnOnce(&[AtomicU32; LEN], &mut Core) -> R) -> R {
    let Some(words) = STAGE.with(|s| s.words()) else {
        return fail;
    };
    let generation = &words[GENERATION];
    generation.store(generation.load(Relaxed).wrapping_add(1), Relaxed);
    MAPS.with(|maps| {
        maps.with(words[SLOT].load(Relaxed), None, |map| {
            let mut core = map.try_borrow_mut().ok()?;
            Some(f(words, &mut core))
        })
    })
    .unwrap_or(fail)
}

/// The staged batch size, when it fits `limit` data items.
#[inline]
fn count(words: &[AtomicU32; LEN], limit: usize) -> Option<usize> {
    let n = words[COUNT].load(Relaxed) as usize;
    (n <= limit).then_some(n)
}

/// Data item `k` read as a JS number that must be a valid offset (the rule of `release`).
#[inline]
fn offset(words: &[AtomicU32; LEN], k: usize) -> Option<usize> {
    let lo = words.get(HEADER + 2 * k)?.load(Relaxed).to_ne_bytes();
    let hi = words.get(HEADER + 2 * k + 1)?.load(Relaxed).to_ne_bytes();
    let v = f64::from_ne_bytes([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]);
    convert::index("offset", v, u64::MAX >> 11)
        .ok()
        .map(|i| i as usize)
}

/// `allocateNext()`: the slot taken, -1 when the map is full.
#[napi(js_name = "bitmapStagedAllocateNext")]
pub fn allocate_next() -> f64 {
    with_map(ERROR, |_, core| match core.allocate_next() {
        Ok(Some(i)) => i as f64,
        Ok(None) => FULL,
        Err(_) => ERROR,
    })
}

/// `release(offset)`, the offset (a JS number) staged as `Float64Array` item 2: 1 when it was
/// taken, else 0.
#[napi(js_name = "bitmapStagedRelease")]
pub fn release() -> u32 {
    with_map(STAGED_ERROR, |words, core| match offset(words, 0) {
        Some(i) => core.release(i) as u32,
        None => STAGED_ERROR,
    })
}

/// Fills `count` data words by consecutive allocateNext calls; returns how many were taken.
#[napi(js_name = "bitmapStagedAllocateNextMany")]
pub fn allocate_next_many() -> u32 {
    with_map(STAGED_ERROR, |words, core| {
        let Some(n) = count(words, DATA) else {
            return STAGED_ERROR;
        };
        for (k, out) in words[HEADER..HEADER + n].iter().enumerate() {
            match core.allocate_next() {
                Ok(Some(i)) => out.store(i as u32, Relaxed),
                Ok(None) => return k as u32,
                // The map's only error comes from its first call; were it ever later, the
                // slots already taken are reported, so none is lost.
                Err(_) if k == 0 => return STAGED_ERROR,
                Err(_) => return k as u32,
            }
        }
        n as u32
    })
}

/// Releases the `count` slots staged as u32 data words; returns how many were taken.
#[napi(js_name = "bitmapStagedReleaseMany")]
pub fn release_many() -> u32 {
    with_map(STAGED_ERROR, |words, core| {
        let Some(n) = count(words, DATA) else {
            return STAGED_ERROR;
        };
        let slots = words[HEADER..HEADER + n].iter();
        core.release_many(slots.map(|w| w.load(Relaxed) as usize)) as u32
    })
}

/// Releases the `count` offsets staged as JS numbers (`Float64Array` from item 2), all checked
/// before any is released; returns how many were taken.
#[napi(js_name = "bitmapStagedReleaseManyNumbers")]
pub fn release_many_numbers() -> u32 {
    with_map(STAGED_ERROR, |words, core| {
        let Some(n) = count(words, DATA / 2) else {
            return STAGED_ERROR;
        };
        if (0..n).any(|k| offset(words, k).is_none()) {
            return STAGED_ERROR;
        }
        core.release_many((0..n).filter_map(|k| offset(words, k))) as u32
    })
}
