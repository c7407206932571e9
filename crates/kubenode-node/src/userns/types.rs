//! The objects that cross the boundary (`#[napi(object)]`). Task outcomes carry the error kind
//! and code, since a task can only reject with a plain status.

use napi_derive::napi;

#[napi(object)]
pub struct UsernsConfig {
    pub pods_dir: String,
    pub ids_per_pod: u32,
    pub first_id: u32,
    pub length: u32,
    pub max_pods: u32,
    /// Seed of the bitmap's random scan (tests).
    pub seed: Option<f64>,
    /// Take the pods-directory lock (default true).
    pub lock: Option<bool>,
}

#[napi(object)]
pub struct UsernsTaskError {
    /// `ERR_KUBENODE_*`.
    pub code: String,
    /// `config`, `parse`, `conflict`, `exhausted`, `locked`, `invalid-pod-uid`, `io`,
    /// `permission` or `unsupported`.
    pub kind: String,
    pub message: String,
}

/// One per-pod call: `getOrCreate`, or `release` when `release` is true.
#[napi(object)]
pub struct UsernsPodCall {
    pub pod_uid: String,
    pub release: bool,
}

#[napi(object)]
pub struct UsernsIdMapping {
    pub host_id: u32,
    pub container_id: u32,
    pub length: u32,
}

#[napi(object)]
pub struct UsernsOutcome {
    pub uids: Vec<UsernsIdMapping>,
    pub gids: Vec<UsernsIdMapping>,
    pub restored: u32,
    pub stale_temp_files_removed: u32,
    pub error: Option<UsernsTaskError>,
}

#[napi(object)]
pub struct UsernsAllocation {
    pub pod: String,
    pub host_id: u32,
    pub length: u32,
}

#[napi(object)]
pub struct UsernsLayout {
    pub ids_per_pod: u32,
    pub off: u32,
    pub slots: u32,
}

#[napi(object)]
pub struct UsernsListedPod {
    pub pod: String,
    pub host_id: Option<u32>,
    pub length: Option<u32>,
    pub error: Option<String>,
}

#[napi(object)]
pub struct UsernsListOutcome {
    pub pods: Vec<UsernsListedPod>,
    pub error: Option<UsernsTaskError>,
}

/// What a mapping check saw: a process in a new user namespace with the range, uid 0 inside.
#[napi(object)]
pub struct UsernsVerifyReport {
    /// Pod UID, when the range came from a pod's `userns` file.
    pub pod: Option<String>,
    /// First host ID of the range (what uid/gid 0 inside maps to).
    pub host_id: u32,
    /// Number of IDs in the range.
    pub length: u32,
    /// Host PID of the checking process.
    pub pid: u32,
    /// `getuid()` inside the namespace after `setresuid(0)`.
    pub inside_uid: u32,
    /// `getgid()` inside the namespace after `setresgid(0)`.
    pub inside_gid: u32,
    /// Real uid of the same process, seen from the initial namespace.
    pub outside_uid: u32,
    /// Real gid of the same process, seen from the initial namespace.
    pub outside_gid: u32,
    /// Host owner uid of a file the process created inside the namespace.
    pub file_uid: u32,
    /// Host owner gid of that file.
    pub file_gid: u32,
    /// `/proc/<pid>/uid_map` as read from the host.
    pub uid_map: String,
    /// `/proc/<pid>/gid_map` as read from the host.
    pub gid_map: String,
    /// Every observation agrees: 0 inside is `hostId` outside.
    pub ok: bool,
}

#[napi(object)]
pub struct UsernsVerifyOutcome {
    pub report: Option<UsernsVerifyReport>,
    pub error: Option<UsernsTaskError>,
}
