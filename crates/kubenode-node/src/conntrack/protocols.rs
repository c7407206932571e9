//! The core's synchronous rules: the stale-flow protocols, read once by the reconciler's
//! cleanup-required gate, and the release checks and sysctl rule `applyConntrackSysctls` reads.

use napi::Env;
use napi_derive::napi;

use crate::convert::{integer, k8s_version};
use crate::errors::throwing;

/// The service-port protocols (API names, e.g. `"UDP"`) whose flows the stale-flow pass can
/// select: the core's rule, so the gate and the pass cannot disagree.
#[napi]
pub fn conntrack_stale_flow_protocols() -> Vec<String> {
    kubenode_conntrack::Protocol::with_stale_flows()
        .map(String::from)
        .collect()
}

/// The Kubernetes release whose conntrack rules apply, as `v1.<minor>` (default: the newest
/// kubenode knows). Throws the typed error for one that is malformed or unsupported, so
/// callers check it before any work.
#[napi]
pub fn conntrack_kubernetes_version(
    env: Env,
    kubernetes_version: Option<String>,
) -> napi::Result<String> {
    throwing(&env, || Ok(k8s_version(kubernetes_version)?.to_string()))
}

/// Whether kube-proxy of `kubernetesVersion` writes `wanted` to `nf_conntrack_max`, given the
/// value read (`null` when unreadable).
#[napi]
pub fn conntrack_max_writes(
    env: Env,
    kubernetes_version: Option<String>,
    current: Option<f64>,
    wanted: f64,
) -> napi::Result<bool> {
    throwing(&env, || {
        let k8s = k8s_version(kubernetes_version)?;
        let current = current.map(|c| integer("current", c)).transpose()?;
        let wanted = integer("wanted", wanted)?;
        Ok(kubenode_conntrack::writes_conntrack_max(
            k8s, current, wanted,
        ))
    })
}
