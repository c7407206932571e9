//! Binding for `kubenode-userns`: the boundary's objects (`types`), the conversions to and
//! from the core (`convert`), the `UsernsCore` class (`manager`) and the async tasks
//! (`tasks`). The free functions below are the module's other entry points.

mod convert;
mod manager;
mod tasks;
mod types;

use std::path::Path;

use kubenode_userns::{
    Layout as UsernsLayout, PodsConfig as UsernsConfig, PoolCheck as UsernsPoolCheck,
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
