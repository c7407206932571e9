use crate::error::BitmapError;
use crate::levels::LevelBitset;
use crate::rng::SplitMix64;

/// How `allocate_next` picks a free slot. The default is upstream's: a random scan, no offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Upstream `randomScanStrategyWithOffset` (offset 0 is upstream's `NewAllocationMap`):
    /// a uniform start in `[offset, max)`, then the first free slot scanning forward with
    /// wrap-around; only when that block is full, the same over `[0, offset)`.
    RandomScan { offset: usize },
    /// Upstream's legacy `contiguousScanStrategy`: the lowest free slot.
    ContiguousScan,
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::RandomScan { offset: 0 }
    }
}

impl Strategy {
    /// The strategy callers name: `"random-scan"` (offset 0; set it on the variant) or
    /// `"contiguous-scan"`.
    pub fn named(name: &str) -> Result<Self, BitmapError> {
        match name {
            "random-scan" => Ok(Strategy::default()),
            "contiguous-scan" => Ok(Strategy::ContiguousScan),
            _ => Err(BitmapError::UnknownStrategy {
                name: name.to_string(),
            }),
        }
    }

    /// Picks a free slot, or `None`. `count` includes restored bits at or past `max`, which
    /// upstream counts too, so a map can report full while in-range slots are free.
    pub(crate) fn pick(
        self,
        bits: &LevelBitset,
        max: usize,
        count: usize,
        rng: &mut SplitMix64,
    ) -> Option<usize> {
        if count >= max {
            return None;
        }
        match self {
            Strategy::ContiguousScan => bits.first_clear_in(0, max),
            Strategy::RandomScan { offset } => {
                let upper = max - offset;
                let start = offset + rng.below(upper as u64) as usize;
                if let Some(i) = wrap_scan(bits, offset, start, max) {
                    return Some(i);
                }
                if offset == 0 {
                    return None;
                }
                let start = rng.below(offset as u64) as usize;
                wrap_scan(bits, 0, start, offset)
            }
        }
    }
}

/// First free slot in `[start, hi)`, then in `[lo, start)`: the order of upstream's
/// `(start + i) % size` probe loop.
fn wrap_scan(bits: &LevelBitset, lo: usize, start: usize, hi: usize) -> Option<usize> {
    bits.first_clear_in(start, hi)
        .or_else(|| bits.first_clear_in(lo, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_two_strategies_and_refuses_others() {
        assert_eq!(
            Strategy::named("random-scan"),
            Ok(Strategy::RandomScan { offset: 0 })
        );
        assert_eq!(Strategy::default(), Strategy::RandomScan { offset: 0 });
        assert_eq!(
            Strategy::named("contiguous-scan"),
            Ok(Strategy::ContiguousScan)
        );
        assert_eq!(
            Strategy::named("best-fit").unwrap_err().to_string(),
            r#"strategy must be "random-scan" or "contiguous-scan", got "best-fit""#
        );
        for bad in ["", "Random-Scan", "random-scan "] {
            assert_eq!(
                Strategy::named(bad),
                Err(BitmapError::UnknownStrategy {
                    name: bad.to_string()
                })
            );
        }
    }
}
