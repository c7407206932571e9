//! Batch operations: many slots per call, so a caller across an FFI boundary (the Node binding)
//! pays the crossing once per batch instead of once per slot. Each is exactly the sequence of
//! single calls it replaces, so the random scan hands out the same slots either way.
use crate::allocation::AllocationBitmap;
use crate::error::BitmapError;

impl AllocationBitmap {
    /// Fills `out` with slots reserved by consecutive `allocate_next` calls and returns how many
    /// were reserved: fewer than `out.len()` only when the map filled up, and then
    /// `out[..returned]` is exactly what was taken (the rest of `out` is left untouched).
    /// Slots are below `MAX_SLOTS` (2^32), so they fit a `u32`. The only error, an offset not
    /// below the size on a random-scan map, is a property of the map: it comes from the first
    /// call, before anything is reserved.
    pub fn allocate_next_into(&mut self, out: &mut [u32]) -> Result<usize, BitmapError> {
        for (k, slot) in out.iter_mut().enumerate() {
            match self.allocate_next()? {
                Some(i) => *slot = i as u32,
                None => return Ok(k),
            }
        }
        Ok(out.len())
    }

    /// Reserves up to `n` slots; the vector holds exactly the slots taken.
    pub fn allocate_next_many(&mut self, n: usize) -> Result<Vec<u32>, BitmapError> {
        let mut out = vec![0; n.min(self.max())];
        let k = self.allocate_next_into(&mut out)?;
        out.truncate(k);
        Ok(out)
    }

    /// Releases every slot, as `release` would one by one (free or out-of-range slots are
    /// no-ops, repeated slots are released once). Returns how many bits were cleared.
    pub fn release_many(&mut self, slots: impl IntoIterator<Item = usize>) -> usize {
        slots.into_iter().filter(|&i| self.release(i)).count()
    }
}
