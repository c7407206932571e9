/// A bitset over `len` slots with summary levels: bit `j` of level `k + 1` is set when word `j`
/// of level `k` is full. Padding bits past the end of each level are kept set, so a full word
/// always reads `!0` and the first zero bit found is always a real slot.
#[derive(Debug, Clone)]
pub struct LevelBitset {
    len: usize,
    levels: Vec<Vec<u64>>,
    ones: usize,
}

use crate::error::BitmapError;

const W: usize = 64;

fn words_for(bits: usize) -> usize {
    bits.div_ceil(W)
}

/// A word with the bits at and above `bits % 64` set (the padding of a last, partial word).
fn padding(bits: usize) -> u64 {
    match bits % W {
        0 => 0,
        r => !0u64 << r,
    }
}

/// A zeroed level of `n` words, or `AllocationFailed` when the memory is not there: a map of
/// 2^32 slots needs 512 MiB, and an infallible allocation would abort the whole process.
fn zeroed(n: usize, len: usize) -> Result<Vec<u64>, BitmapError> {
    let mut level = Vec::new();
    level
        .try_reserve_exact(n)
        .map_err(|_| BitmapError::AllocationFailed {
            max: len as u64,
            bytes: n.saturating_mul(8),
        })?;
    level.resize(n, 0);
    Ok(level)
}

impl LevelBitset {
    pub fn new(len: usize) -> Result<Self, BitmapError> {
        let mut levels = Vec::new();
        let mut bits = len.max(1);
        loop {
            let n = words_for(bits);
            levels.push(zeroed(n, len)?);
            if n == 1 {
                break;
            }
            bits = n;
        }
        let mut set = Self {
            len,
            levels,
            ones: 0,
        };
        set.init();
        Ok(set)
    }

    /// Puts zeroed levels into the empty state: padding bits set, no slot taken.
    fn init(&mut self) {
        let mut bits = self.len.max(1);
        for level in &mut self.levels {
            if let Some(last) = level.last_mut() {
                *last = padding(bits);
            }
            bits = level.len();
        }
        self.ones = 0;
        if self.len == 0 {
            // No real slot: mark the single padding slot used so searches find nothing.
            if let Some(w) = self.levels.first_mut().and_then(|l| l.first_mut()) {
                *w |= 1;
            }
            self.propagate_full(0);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set real slots.
    pub fn ones(&self) -> usize {
        self.ones
    }

    pub fn get(&self, i: usize) -> bool {
        i < self.len && self.levels[0][i / W] & (1 << (i % W)) != 0
    }

    /// Sets slot `i`; returns false when it was already set or out of range.
    pub fn set(&mut self, i: usize) -> bool {
        if i >= self.len {
            return false;
        }
        let w = i / W;
        let bit = 1u64 << (i % W);
        let word = &mut self.levels[0][w];
        if *word & bit != 0 {
            return false;
        }
        *word |= bit;
        self.ones += 1;
        if *word == !0 {
            self.propagate_full(w);
        }
        true
    }

    /// Clears slot `i`; returns false when it was already clear or out of range.
    pub fn clear(&mut self, i: usize) -> bool {
        if i >= self.len {
            return false;
        }
        let w = i / W;
        let bit = 1u64 << (i % W);
        let was_full = self.levels[0][w] == !0;
        let word = &mut self.levels[0][w];
        if *word & bit == 0 {
            return false;
        }
        *word &= !bit;
        self.ones -= 1;
        if was_full {
            self.propagate_not_full(w);
        }
        true
    }

    fn propagate_full(&mut self, mut idx: usize) {
        for k in 1..self.levels.len() {
            let w = idx / W;
            let word = &mut self.levels[k][w];
            *word |= 1 << (idx % W);
            if *word != !0 {
                return;
            }
            idx = w;
        }
    }

    fn propagate_not_full(&mut self, mut idx: usize) {
        for k in 1..self.levels.len() {
            let w = idx / W;
            let word = &mut self.levels[k][w];
            let was_full = *word == !0;
            *word &= !(1 << (idx % W));
            if !was_full {
                return;
            }
            idx = w;
        }
    }

    /// First clear slot in `[lo, hi)`, in O(levels) word operations.
    pub fn first_clear_in(&self, lo: usize, hi: usize) -> Option<usize> {
        self.find_clear(0, lo, hi.min(self.len))
    }

    fn find_clear(&self, k: usize, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let words = &self.levels[k];
        let w = lo / W;
        let z = !words[w] & (!0u64 << (lo % W));
        let i = if z != 0 {
            w * W + z.trailing_zeros() as usize
        } else {
            let next_hi = words_for(hi);
            let nw = if k + 1 < self.levels.len() {
                self.find_clear(k + 1, w + 1, next_hi)?
            } else {
                (w + 1..next_hi).find(|&j| words[j] != !0)?
            };
            nw * W + (!words[nw]).trailing_zeros() as usize
        };
        (i < hi).then_some(i)
    }

    /// Iterates the set slots in ascending order.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        let len = self.len;
        self.levels[0]
            .iter()
            .enumerate()
            .flat_map(move |(w, &word)| {
                let mut bits = word;
                std::iter::from_fn(move || {
                    if bits == 0 {
                        return None;
                    }
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    Some(w * W + b)
                })
            })
            .take_while(move |&i| i < len)
    }

    /// The real bits of level 0 as little-endian words (padding removed).
    pub fn words(&self) -> impl Iterator<Item = u64> + '_ {
        let n = self.levels[0].len();
        let pad = padding(self.len.max(1));
        self.levels[0].iter().enumerate().map(move |(w, &word)| {
            if w + 1 == n {
                if self.len == 0 {
                    0
                } else {
                    word & !pad
                }
            } else {
                word
            }
        })
    }

    /// Replaces the content with the given slots; out-of-range slots are ignored.
    /// Clears in place rather than building a new set, so a restore never needs a second copy
    /// of a large map.
    pub fn reset_from(&mut self, ones: impl Iterator<Item = usize>) {
        for level in &mut self.levels {
            level.fill(0);
        }
        self.init();
        for i in ones {
            self.set(i);
        }
    }

    /// Approximate heap size in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.levels.iter().map(|l| l.len() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_across_levels() {
        let mut b = LevelBitset::new(64 * 64 * 3 + 5).unwrap();
        for i in 0..b.len() {
            assert!(b.set(i));
        }
        assert_eq!(b.first_clear_in(0, b.len()), None);
        let target = 64 * 64 * 2 + 17;
        assert!(b.clear(target));
        assert_eq!(b.first_clear_in(0, b.len()), Some(target));
        assert_eq!(b.first_clear_in(target + 1, b.len()), None);
        assert_eq!(b.first_clear_in(0, target), None);
        assert!(b.set(target));
        assert_eq!(b.first_clear_in(0, b.len()), None);
        assert_eq!(b.ones(), b.len());
    }

    #[test]
    fn zero_len_has_no_slot() {
        let mut b = LevelBitset::new(0).unwrap();
        assert!(!b.set(0));
        assert_eq!(b.first_clear_in(0, 10), None);
        assert_eq!(b.iter_ones().count(), 0);
        assert_eq!(b.words().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn iter_and_words_skip_padding() {
        let mut b = LevelBitset::new(70).unwrap();
        b.set(0);
        b.set(69);
        assert_eq!(b.iter_ones().collect::<Vec<_>>(), vec![0, 69]);
        assert_eq!(b.words().collect::<Vec<_>>(), vec![1, 1 << 5]);
    }
}
