use crate::error::BitmapError;
use crate::levels::LevelBitset;
use crate::rng::SplitMix64;
use crate::snapshot;
use crate::strategy::Strategy;

/// Largest supported size: one slot per 32-bit ID (a 512 MiB bitmap).
pub const MAX_SLOTS: u64 = 1 << 32;

/// A fixed-size set of slots `[0, max)` handed out one at a time. Same observable behaviour as
/// upstream `AllocationBitmap`, including its quirks around restored bits past `max`.
#[derive(Debug, Clone)]
pub struct AllocationBitmap {
    max: usize,
    range_spec: String,
    strategy: Strategy,
    rng: SplitMix64,
    bits: LevelBitset,
    /// Slots at or past `max` set by `restore` (at most 7: the rest of the last byte).
    /// Upstream's `big.Int` keeps and counts them, so we do too.
    beyond: Vec<usize>,
}

impl AllocationBitmap {
    pub fn new(
        max: u64,
        range_spec: impl Into<String>,
        strategy: Strategy,
    ) -> Result<Self, BitmapError> {
        Self::with_rng(max, range_spec, strategy, SplitMix64::from_entropy())
    }

    pub fn with_rng(
        max: u64,
        range_spec: impl Into<String>,
        strategy: Strategy,
        rng: SplitMix64,
    ) -> Result<Self, BitmapError> {
        if max > MAX_SLOTS {
            return Err(BitmapError::TooLarge {
                max,
                limit: MAX_SLOTS,
            });
        }
        // An offset at or past `max` is accepted, as upstream's NewAllocationMapWithOffset does
        // (its own TestSnapshotAndRestore builds such a map): restore, has and count work;
        // only allocate_next refuses, where upstream would panic in rand.Intn.
        let max = max as usize;
        Ok(Self {
            max,
            range_spec: range_spec.into(),
            strategy,
            rng,
            bits: LevelBitset::new(max)?,
            beyond: Vec::new(),
        })
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn range_spec(&self) -> &str {
        &self.range_spec
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Number of set bits, including restored bits past `max`.
    pub fn count(&self) -> usize {
        self.bits.ones() + self.beyond.len()
    }

    /// `max - count`; negative only after restoring bits past `max`, as upstream.
    pub fn free(&self) -> i64 {
        self.max as i64 - self.count() as i64
    }

    /// Reserves slot `i`: `Ok(true)` when newly taken, `Ok(false)` when already taken.
    pub fn allocate(&mut self, i: i64) -> Result<bool, BitmapError> {
        if i < 0 || i as u64 >= self.max as u64 {
            return Err(BitmapError::OutOfRange {
                offset: i,
                max: self.max as u64,
            });
        }
        Ok(self.bits.set(i as usize))
    }

    /// Reserves a free slot chosen by the strategy; `Ok(None)` when the map is full. A random
    /// scan whose offset is not below `max` has no block to start in: upstream panics there
    /// (rand.Intn of a non-positive bound) once the map is not full; this is `InvalidOffset`.
    pub fn allocate_next(&mut self) -> Result<Option<usize>, BitmapError> {
        if self.count() >= self.max {
            return Ok(None);
        }
        if let Strategy::RandomScan { offset } = self.strategy {
            if offset > 0 && offset >= self.max {
                return Err(BitmapError::InvalidOffset {
                    offset: offset as u64,
                    max: self.max as u64,
                });
            }
        }
        let Some(i) = self
            .strategy
            .pick(&self.bits, self.max, self.count(), &mut self.rng)
        else {
            return Ok(None);
        };
        self.bits.set(i);
        Ok(Some(i))
    }

    /// Frees slot `i`; a clear or out-of-range slot is a no-op. Returns whether a bit was cleared.
    pub fn release(&mut self, i: usize) -> bool {
        if i < self.max {
            return self.bits.clear(i);
        }
        match self.beyond.iter().position(|&b| b == i) {
            Some(p) => {
                self.beyond.remove(p);
                true
            }
            None => false,
        }
    }

    pub fn has(&self, i: usize) -> bool {
        if i < self.max {
            self.bits.get(i)
        } else {
            self.beyond.contains(&i)
        }
    }

    /// Every set slot in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits.iter_ones().chain(self.beyond.iter().copied())
    }

    pub fn snapshot(&self) -> (String, Vec<u8>) {
        let mut words: Vec<u64> = self.bits.words().collect();
        for &b in &self.beyond {
            let w = b / 64;
            if w >= words.len() {
                words.resize(w + 1, 0);
            }
            words[w] |= 1 << (b % 64);
        }
        (self.range_spec.clone(), snapshot::encode(words.into_iter()))
    }

    /// Replaces the state with a snapshot. Goes further than upstream in one way: data with more
    /// significant bytes than the map can hold is refused instead of silently kept.
    pub fn restore(&mut self, range_spec: &str, data: &[u8]) -> Result<(), BitmapError> {
        if range_spec != self.range_spec {
            return Err(BitmapError::RangeMismatch);
        }
        let data = snapshot::significant(data);
        let limit = self.max.div_ceil(8);
        if data.len() > limit {
            return Err(BitmapError::SnapshotTooLong {
                got: data.len(),
                max: self.max as u64,
                limit,
            });
        }
        let max = self.max;
        self.bits
            .reset_from(snapshot::ones(data).filter(|&i| i < max));
        self.beyond = snapshot::ones(data).filter(|&i| i >= max).collect();
        Ok(())
    }

    /// Approximate heap size in bytes (about max/8).
    pub fn heap_bytes(&self) -> usize {
        self.bits.heap_bytes() + self.range_spec.len()
    }
}
