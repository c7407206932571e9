//! Binding for `kubenode-userns`: the boundary's objects (`types`), the conversions to and
//! from the core (`convert`), the `UsernsCore` class (`manager`) and the async tasks
//! (`tasks`). The free functions below are the module's other entry points.

mod convert;
mod manager;
mod tasks;
mod types;

use std::path::Path;

use kubenode_userns::{
    IdmapProbe, Layout as UsernsLayout, PodsConfig as UsernsConfig, PoolCheck as UsernsPoolCheck,
    UserNamespace, VerifyReport,
};
use napi::bindgen_prelude::AsyncTask;
use napi::Env;
use napi_derive::napi;

use crate::convert as numbers;
use crate::errors::{err, throwing, ErrorCode, Outcome};
use tasks::CoreTask;
use types::{UsernsListedPod, UsernsPoolConfig};

/// Upstream's configuration checks alone (no files): the slot layout or the error.
#[napi]
pub fn userns_layout(env: Env, config: UsernsPoolConfig) -> napi::Result<UsernsLayout> {
    throwing(&env, || {
        config
            .checked()?
            .layout()
            .map_err(|e| err(ErrorCode::InvalidArg, e))
    })
}

/// Kubelet config validation of `userNamespaces.idsPerPod`.
#[napi]
pub fn userns_validate_ids_per_pod(env: Env, v: f64) -> napi::Result<u32> {
    throwing(&env, || {
        let v = numbers::integer("idsPerPod", v)?;
        kubenode_userns::config::validate_ids_per_pod(v).map_err(|e| err(ErrorCode::InvalidArg, e))
    })
}

/// The exact bytes the kubelet writes for a range.
/// The kubelet's default ID pool for `idsPerPod` (checked as the kubelet's configuration is):
/// `[firstId, length]`.
#[napi]
pub fn userns_default_pool(env: Env, ids_per_pod: f64) -> napi::Result<Vec<u32>> {
    throwing(&env, || {
        let v = numbers::integer("idsPerPod", ids_per_pod)?;
        let ids = kubenode_userns::config::validate_ids_per_pod(v)
            .map_err(|e| err(ErrorCode::InvalidArg, e))?;
        let (first_id, length) = kubenode_userns::config::default_pool(ids);
        Ok(vec![first_id, length])
    })
}

#[napi]
pub fn userns_encode_file(env: Env, host_id: f64, length: f64) -> napi::Result<String> {
    throwing(&env, || {
        let host_id = numbers::uint32("hostId", host_id, 0)?;
        let length = numbers::uint32("length", length, 0)?;
        Ok(kubenode_userns::json::encode(&UserNamespace::single(
            host_id, length,
        )))
    })
}

/// Upstream's parse checks on a file's content: `[hostId, length]`, or throws upstream's text.
#[napi]
pub fn userns_parse_file(env: Env, content: &[u8]) -> napi::Result<Vec<u32>> {
    throwing(&env, || {
        let (_, h, l) =
            kubenode_userns::parse_file(content).map_err(|e| err(ErrorCode::Parse, e))?;
        Ok(vec![h, l])
    })
}

/// Reads every pod's `userns` file without locking or changing anything.
#[napi(ts_return_type = "Promise<Outcome<Array<UsernsListedPod>>>")]
pub fn userns_list(pods_dir: String) -> AsyncTask<CoreTask<Outcome<Vec<UsernsListedPod>>>> {
    CoreTask::run(move || {
        let pods = kubenode_userns::list_mappings(Path::new(&pods_dir));
        pods.map(|p| p.into_iter().map(Into::into).collect()).into()
    })
}

/// Pre-flight check of a pool and `idsPerPod` against the pods on disk: every pod a manager
/// with this configuration would refuse, without locking or changing anything.
#[napi(ts_return_type = "Promise<Outcome<UsernsPoolCheck>>")]
pub fn userns_check_pool(config: UsernsConfig) -> AsyncTask<CoreTask<Outcome<UsernsPoolCheck>>> {
    CoreTask::run(move || kubenode_userns::check_pool(&config.pods_dir(), config.config()).into())
}

/// Whether a kernel release is new enough for pods with user namespaces.
#[napi(object)]
pub struct UsernsKernelCheck {
    /// The minimum, e.g. `6.3`.
    pub min: String,
    /// The release is at least `min`.
    pub ok: bool,
}

/// Compares kernel `release` (`ParseGeneric` syntax) with the minimum for pods with user
/// namespaces; throws `ERR_KUBENODE_PARSE` for a release it cannot read.
#[napi]
pub fn userns_kernel_check(env: Env, release: String) -> napi::Result<UsernsKernelCheck> {
    throwing(&env, || {
        let v = kubenode_sysctl::KernelVersion::parse(&release)
            .map_err(|e| err(ErrorCode::Parse, e))?;
        let min = kubenode_userns::MIN_KERNEL_FOR_PODS;
        Ok(UsernsKernelCheck {
            min: min.map(|c| c.to_string()).join("."),
            ok: v.at_least(&min),
        })
    })
}

/// Whether idmapped mounts work on a scratch tmpfs (when `tmpfs`) and on each directory's
/// filesystem, probed on detached mounts with a throwaway user namespace. Needs root.
#[napi(ts_return_type = "Promise<Array<IdmapProbe>>")]
pub fn userns_probe_idmap(tmpfs: bool, paths: Vec<String>) -> AsyncTask<CoreTask<Vec<IdmapProbe>>> {
    CoreTask::run(move || {
        let paths: Vec<_> = paths.iter().map(std::path::PathBuf::from).collect();
        kubenode_userns::probe_idmap_mounts(tmpfs, &paths)
    })
}

/// Starts a process in a new user namespace with the mapping `0 → hostId` (`length` IDs).
#[napi(ts_return_type = "Promise<Outcome<UsernsVerifyReport>>")]
pub fn userns_verify_mapping(
    env: Env,
    host_id: f64,
    length: f64,
) -> napi::Result<AsyncTask<CoreTask<Outcome<VerifyReport>>>> {
    throwing(&env, || {
        let host_id = numbers::uint32("hostId", host_id, 0)?;
        let length = numbers::uint32("length", length, 0)?;
        Ok(CoreTask::run(move || {
            kubenode_userns::verify_mapping(host_id, length).into()
        }))
    })
}

/// Reads `<podsDir>/<podUid>/userns` (upstream's checks) and verifies its mapping.
#[napi(ts_return_type = "Promise<Outcome<UsernsVerifyReport>>")]
pub fn userns_verify_pod(
    pods_dir: String,
    pod_uid: String,
) -> AsyncTask<CoreTask<Outcome<VerifyReport>>> {
    CoreTask::run(move || kubenode_userns::verify_pod(Path::new(&pods_dir), &pod_uid).into())
}
