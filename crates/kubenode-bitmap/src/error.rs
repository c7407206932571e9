use thiserror::Error;

use crate::JsNumber;

/// Errors returned by [`crate::AllocationBitmap`]. The texts of `OutOfRange` and `RangeMismatch`
/// are upstream's, so callers can match them.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BitmapError {
    #[error("offset {offset} out of range [0,{max}]")]
    OutOfRange { offset: i64, max: u64 },
    #[error("the provided range does not match the current range")]
    RangeMismatch,
    #[error(
        "snapshot holds {got} significant bytes, but a bitmap of {max} slots holds at most {limit}"
    )]
    SnapshotTooLong { got: usize, max: u64, limit: usize },
    #[error("offset {offset} must be smaller than the bitmap size {max}")]
    InvalidOffset { offset: u64, max: u64 },
    #[error("bitmap size {max} is too large (at most {limit} slots)")]
    TooLarge { max: u64, limit: u64 },
    /// A strategy name other than the two `Strategy::named` knows.
    #[error("strategy must be \"random-scan\" or \"contiguous-scan\", got {name:?}")]
    UnknownStrategy { name: String },
    /// The memory for the map could not be allocated (reported instead of aborting).
    #[error("cannot allocate {bytes} bytes for a bitmap of {max} slots")]
    AllocationFailed { max: u64, bytes: usize },
    /// An option given as a number (a double, as JavaScript has them) that is not whole.
    #[error("{what} must be an integer, got {}", JsNumber(*.value))]
    NotInteger { what: &'static str, value: f64 },
    /// An option given as a number outside `[0, limit]`.
    #[error("{what} must be in [0, {limit}], got {}", JsNumber(*.value))]
    NumberOutOfRange {
        what: &'static str,
        value: f64,
        limit: u64,
    },
}
