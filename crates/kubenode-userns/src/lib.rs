//! The kubelet's user-namespace manager (`pkg/kubelet/userns`) on the project's allocation
//! bitmap: per-pod ID ranges, the kubelet's `<pods>/<uid>/userns` file written atomically and
//! durably, restore on start, release, orphan cleanup, plus a kernel check of a mapping and a
//! pre-flight check of a pool against the pods on disk.
// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod call_queue;
pub mod config;
mod error;
pub mod fsio;
pub mod idmap;
pub mod json;
mod manager;
mod preflight;
mod shared;
pub mod verify;

pub use call_queue::CallQueue;
pub use config::{Config, Layout, PodsConfig};
pub use error::{Error, ErrorKind, Result};
pub use idmap::{probe_idmap_mounts, IdmapProbe, IdmapStatus, MIN_KERNEL_FOR_PODS};
pub use json::{IdMapping, UserNamespace};
pub use manager::{
    list_mappings, parse_file, read_pod_mapping, Allocation, ListedPod, Manager, Options,
    RestoreStats, RANGE_SPEC,
};
pub use preflight::{check_pool, Misfit, PoolCheck};
pub use shared::{not_open, CallResult, OpenTicket, PodCall, SharedManager};
pub use verify::{verify_mapping, verify_pod, VerifyReport};
