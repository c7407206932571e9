//! The single Node-API binding crate. Each module wraps one pure-Rust crate: argument
//! conversion, class wrappers, errors and async tasks; no logic of its own.
// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
// Under `cfg(test)` napi-derive does not register exports, so every `#[napi] fn` looks unused.
#![cfg_attr(test, allow(dead_code))]

mod bitmap;
mod conntrack;
mod convert;
mod errors;
mod servicecidr;
mod servicecidr_guard;
mod staging;
mod sysctl;
mod userns;
