//! The objects that cross the boundary (`#[napi(object)]`). Task outcomes carry the shared
//! `NativeError`, since a task can only reject with a plain status.

use napi_derive::napi;

// The core's values are the JS shapes (its `napi` feature); imported under their JS names so
// the generated typings refer to them by those names.
use kubenode_userns::UserNamespace as UsernsNamespace;

use crate::errors::NativeError;

#[napi(object)]
#[derive(Default)]
pub struct UsernsOutcome {
    /// The pod's mappings, for a getOrCreate.
    pub namespace: Option<UsernsNamespace>,
    pub restored: u32,
    pub stale_temp_files_removed: u32,
    pub error: Option<NativeError>,
}

/// One pod's range, as `UserNsManager.allocations` lists it.
#[napi(object)]
pub struct UsernsAllocation {
    /// Pod UID.
    pub pod: String,
    /// First host ID of the pod's range.
    pub host_id: u32,
    /// Number of IDs in the range (`idsPerPod`).
    pub length: u32,
}

#[napi(object)]
pub struct UsernsListedPod {
    pub pod: String,
    pub host_id: Option<u32>,
    pub length: Option<u32>,
    pub error: Option<String>,
}

/// `usernsLayout`'s input: the pool's numbers as JS's doubles, so that a fraction or a value
/// past 32 bits is refused rather than truncated by napi.
#[napi(object)]
pub struct UsernsPoolConfig {
    pub ids_per_pod: f64,
    /// First host ID of the pool (`kubeletMappingID`).
    pub first_id: f64,
    /// Number of IDs in the pool (`kubeletMappingLen`).
    pub length: f64,
    pub max_pods: f64,
}

impl UsernsPoolConfig {
    /// The core's configuration, each number checked to be in `[0, 2^32 - 1]`.
    pub fn checked(&self) -> crate::errors::Result<kubenode_userns::Config> {
        use crate::convert::uint32;
        Ok(kubenode_userns::Config {
            ids_per_pod: uint32("idsPerPod", self.ids_per_pod, 0)?,
            first_id: uint32("firstId", self.first_id, 0)?,
            length: uint32("length", self.length, 0)?,
            max_pods: uint32("maxPods", self.max_pods, 0)?,
        })
    }
}
