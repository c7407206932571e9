//! The constructor's options as a caller outside Rust hands them over: a strategy name and
//! numbers as doubles (JavaScript's only numbers). Their checks and messages live here, next to
//! the limits they enforce.

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::allocation::{AllocationBitmap, MAX_SLOTS};
use crate::error::BitmapError;
use crate::rng::SplitMix64;
use crate::strategy::Strategy;

/// Largest seed: the largest integer a double holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SEED: u64 = u64::MAX >> 11;

#[cfg_attr(feature = "napi", napi(object))]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BitmapOptions {
    /// `"random-scan"` (default) or `"contiguous-scan"`.
    pub strategy: Option<String>,
    /// Random scan only: slots below `offset` are used only when the rest is full.
    pub offset: Option<f64>,
    /// Seed for the random scan, for reproducible sequences.
    pub seed: Option<f64>,
}

/// `v` as a whole number in `[0, limit]`; `what` names it in the error.
fn whole(what: &'static str, v: f64, limit: u64) -> Result<u64, BitmapError> {
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(BitmapError::NotInteger { what, value: v });
    }
    if v < 0.0 || v > limit as f64 {
        return Err(BitmapError::NumberOutOfRange {
            what,
            value: v,
            limit,
        });
    }
    Ok(v as u64)
}

/// A seed given as a double: a whole number in `[0, MAX_SEED]`.
pub fn seed(v: f64) -> Result<u64, BitmapError> {
    whole("seed", v, MAX_SEED)
}

impl BitmapOptions {
    /// The strategy named (the default when none is), with the offset on a random scan; a
    /// contiguous scan has no offset and ignores it.
    pub fn strategy(&self) -> Result<Strategy, BitmapError> {
        let mut strategy = match self.strategy.as_deref() {
            Some(name) => Strategy::named(name)?,
            None => Strategy::default(),
        };
        if let (Strategy::RandomScan { offset }, Some(o)) = (&mut strategy, self.offset) {
            *offset = whole("offset", o, MAX_SLOTS)? as usize;
        }
        Ok(strategy)
    }

    /// The random source: seeded when a seed is given, else from the clock.
    pub fn rng(&self) -> Result<SplitMix64, BitmapError> {
        Ok(match self.seed {
            Some(s) => SplitMix64::new(seed(s)?),
            None => SplitMix64::from_entropy(),
        })
    }
}

impl AllocationBitmap {
    /// A map of `max` slots with the options checked in order: strategy, offset, seed.
    pub fn with_options(
        max: u64,
        range_spec: impl Into<String>,
        options: &BitmapOptions,
    ) -> Result<Self, BitmapError> {
        let strategy = options.strategy()?;
        Self::with_rng(max, range_spec, strategy, options.rng()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(strategy: Option<&str>, offset: Option<f64>, seed: Option<f64>) -> BitmapOptions {
        BitmapOptions {
            strategy: strategy.map(str::to_string),
            offset,
            seed,
        }
    }

    #[test]
    fn defaults_to_a_random_scan_from_zero() {
        let m = AllocationBitmap::with_options(8, "r", &BitmapOptions::default()).unwrap();
        assert_eq!(m.strategy(), Strategy::RandomScan { offset: 0 });
    }

    #[test]
    fn offset_applies_to_the_random_scan_only() {
        let random = opts(None, Some(MAX_SLOTS as f64), None);
        assert_eq!(
            random.strategy(),
            Ok(Strategy::RandomScan {
                offset: MAX_SLOTS as usize
            })
        );
        // Not checked either: the contiguous scan has no offset.
        let contiguous = opts(Some("contiguous-scan"), Some(-1.5), None);
        assert_eq!(contiguous.strategy(), Ok(Strategy::ContiguousScan));
    }

    #[test]
    fn numbers_must_be_whole_and_in_range() {
        let e = opts(None, Some(1.5), None).strategy().unwrap_err();
        assert_eq!(e.to_string(), "offset must be an integer, got 1.5");
        let e = opts(None, Some(f64::NAN), None).strategy().unwrap_err();
        assert_eq!(e.to_string(), "offset must be an integer, got NaN");
        let e = opts(None, Some(MAX_SLOTS as f64 + 1.0), None)
            .strategy()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "offset must be in [0, 4294967296], got 4294967297"
        );
        let e = opts(None, None, Some(-1.0)).rng().unwrap_err();
        assert_eq!(
            e.to_string(),
            "seed must be in [0, 9007199254740991], got -1"
        );
        let e = opts(None, None, Some(2f64.powi(53))).rng().unwrap_err();
        assert_eq!(
            e.to_string(),
            "seed must be in [0, 9007199254740991], got 9007199254740992"
        );
        assert!(opts(None, None, Some(MAX_SEED as f64)).rng().is_ok());
    }

    #[test]
    fn numbers_in_messages_read_as_javascript_prints_them() {
        let e = opts(None, Some(f64::INFINITY), None)
            .strategy()
            .unwrap_err();
        assert_eq!(e.to_string(), "offset must be an integer, got Infinity");
        let e = opts(None, None, Some(1e21)).rng().unwrap_err();
        assert_eq!(
            e.to_string(),
            "seed must be in [0, 9007199254740991], got 1e+21"
        );
        let e = opts(None, None, Some(-1e-7)).rng().unwrap_err();
        assert_eq!(e.to_string(), "seed must be an integer, got -1e-7");
    }

    #[test]
    fn checks_run_in_order_before_the_size() {
        // An unknown strategy is reported before a bad offset, a bad seed before the size.
        let e = AllocationBitmap::with_options(8, "r", &opts(Some("x"), Some(0.5), None));
        assert!(matches!(e, Err(BitmapError::UnknownStrategy { .. })));
        let e = AllocationBitmap::with_options(MAX_SLOTS + 1, "r", &opts(None, None, Some(0.5)));
        assert!(matches!(
            e,
            Err(BitmapError::NotInteger { what: "seed", .. })
        ));
    }

    #[test]
    fn a_seed_makes_the_sequence_reproducible() {
        let o = opts(None, None, Some(42.0));
        let mut a = AllocationBitmap::with_options(1000, "r", &o).unwrap();
        let mut b = AllocationBitmap::with_options(1000, "r", &o).unwrap();
        for _ in 0..50 {
            assert_eq!(a.allocate_next(), b.allocate_next());
        }
    }
}
