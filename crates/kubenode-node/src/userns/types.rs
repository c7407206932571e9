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
