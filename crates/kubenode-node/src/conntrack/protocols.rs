//! The core's stale-flow protocol rule, read once by the reconciler's cleanup-required gate.

use napi_derive::napi;

/// The service-port protocols (API names, e.g. `"UDP"`) whose flows the stale-flow pass can
/// select: the core's rule, so the gate and the pass cannot disagree.
#[napi]
pub fn conntrack_stale_flow_protocols() -> Vec<String> {
    kubenode_conntrack::Protocol::with_stale_flows()
        .map(String::from)
        .collect()
}
