//! The core's synchronous rules: the stale-flow protocols, read once by the reconciler's
//! cleanup-required gate, the release checks and sysctl rule `applyConntrackSysctls` reads, and
//! the nearly-full table warning.

use napi::Env;
use napi_derive::napi;

use kubenode_conntrack::FullAlarm as ConntrackFullAlarm;

use super::convert::{to_js, u32_of};
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

/// The nearly-full table rule for one reading: `raised` is whether the warning stood before it;
/// the result says whether it stands now and, on a new crossing, the warning's message. Throws
/// the typed error for a threshold outside 0 (off) to 1.
#[napi]
pub fn conntrack_full_alarm(
    env: Env,
    raised: bool,
    count: f64,
    max: f64,
    threshold: f64,
) -> napi::Result<ConntrackFullAlarm> {
    throwing(&env, || {
        let (count, max) = (u32_of("count", count)?, u32_of("max", max)?);
        kubenode_conntrack::full_alarm(raised, count, max, threshold).map_err(to_js)
    })
}
