//! Allocation bitmap with the semantics of upstream Kubernetes
//! `pkg/registry/core/service/allocator.AllocationBitmap`.
//!
//! Upstream keeps the bits in a `big.Int` and scans linearly for a free slot. This crate keeps
//! them in a hierarchical bitset (`levels`), so finding the next free slot from any start costs
//! O(log64 n) word operations, and memory stays at about n/8 bytes.
// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod allocation;
mod batch;
mod error;
mod js_number;
mod levels;
mod options;
mod rng;
mod snapshot;
mod strategy;

pub use allocation::{AllocationBitmap, MAX_SLOTS};
pub use error::BitmapError;
pub use js_number::JsNumber;
pub use levels::LevelBitset;
pub use options::{seed, BitmapOptions, MAX_SEED};
pub use rng::SplitMix64;
pub use strategy::Strategy;
