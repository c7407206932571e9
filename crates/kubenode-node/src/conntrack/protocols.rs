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

/// The family (`"IPv4"`/`"IPv6"`) of an IP address by the core's parsing rule, or `null` for
/// text that is not one: the table builders keep only addresses the cleanup pass accepts.
#[napi]
pub fn conntrack_ip_family(ip: String) -> Option<&'static str> {
    kubenode_conntrack::parse_ip("ip", &ip)
        .ok()
        .map(|ip| kubenode_conntrack::Family::of(&ip).label())
}

/// Whether a `spec.clusterIP` marks a headless service (the proxier never sees one).
#[napi]
pub fn conntrack_is_headless(cluster_ip: String) -> bool {
    kubenode_conntrack::is_headless(&cluster_ip)
}

/// The pod-IP purge rule: the addresses of `family` in `previous` that are in no endpoint of
/// `current` (canonical text, sorted). Throws the typed error for a bad family.
#[napi]
pub fn conntrack_gone_ips(
    env: Env,
    family: String,
    previous: Vec<String>,
    current: Vec<String>,
) -> napi::Result<Vec<String>> {
    throwing(&env, || {
        let family = kubenode_conntrack::parse_family(&family).map_err(super::convert::to_js)?;
        Ok(kubenode_conntrack::gone_ips(family, &previous, &current)
            .iter()
            .map(|ip| ip.to_string())
            .collect())
    })
}
