//! ServiceCIDR helpers with the semantics of upstream Kubernetes `pkg/api/servicecidr` and
//! `net/netip`, plus [`CidrIndex`]: a binary trie per IP family so that "which ServiceCIDRs
//! contain this address" costs O(prefix bits) instead of a scan of every ServiceCIDR.
// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod addr;
mod delete;
mod error;
pub mod guard;
mod index;
mod prefix;
mod scan;
mod trie;
mod validate;

pub use addr::{ip_to_addr, Addr, Family};
pub use delete::{DeleteCheck, Holder, OrphanScan};
pub use error::CidrError;
pub use guard::{Guard, GuardRequest, Operation};
pub use index::CidrIndex;
pub use prefix::{broadcast_address, prefix_contains_ip, Prefix};
pub use scan::{scan_matches, Query};
pub use validate::{validate_cidr, validate_spec_cidrs};
