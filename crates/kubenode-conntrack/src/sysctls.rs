//! The release rule of kube-proxy's conntrack sysctls (`pkg/proxy/conntrack/sysctls.go`) that
//! changed between releases: when `nf_conntrack_max` is written.

use kubenode_sysctl::KubernetesVersion;

/// Whether kube-proxy of release `k8s` writes `wanted` to `nf_conntrack_max`, given the value
/// read (`None` when it could not be read, which leads to a write under both releases). From
/// v1.37 it only raises the limit, leaving a higher value an operator set; v1.36 wrote any
/// other value, lowering it too.
pub fn writes_conntrack_max(k8s: KubernetesVersion, current: Option<i64>, wanted: i64) -> bool {
    match current {
        None => true,
        Some(c) if k8s.minor() >= 37 => c < wanted,
        Some(c) => c != wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nf_conntrack_max rows of v1.37's `TestSetSysctls` (96 wanted: 12 per core, 8 CPUs),
    /// with what v1.36 did on each.
    #[test]
    fn nf_conntrack_max_rows() {
        let v136 = KubernetesVersion::OLDEST;
        let v137 = KubernetesVersion::parse("v1.37").unwrap();
        // (read, written under v1.37, written under v1.36)
        let rows = [
            (None, true, true),       // unset (unreadable)
            (Some(96), false, false), // already correct
            (Some(192), false, true), // higher than wanted: v1.36 lowered it
            (Some(48), true, true),   // too low
        ];
        for (current, w137, w136) in rows {
            assert_eq!(writes_conntrack_max(v137, current, 96), w137, "{current:?}");
            assert_eq!(writes_conntrack_max(v136, current, 96), w136, "{current:?}");
        }
    }
}
