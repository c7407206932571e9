//! The kubelet's safe sysctls with their minimum kernel versions (`pkg/kubelet/sysctl/
//! safe_sysctls.go`, gates from `pkg/util/kernel/constants.go`), in upstream order, each with
//! the release that added it, so the list of any supported release can be derived.

use crate::k8s_version::KubernetesVersion;
use crate::kernel::{read_kernel_version, KernelVersion, VersionError};
#[cfg(feature = "napi")]
use napi_derive::napi;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafeSysctl {
    pub name: &'static str,
    /// Minimum kernel where the sysctl is namespaced; `None` means always safe.
    pub min_kernel: Option<&'static [u64]>,
    /// Minor of the v1 Kubernetes release that made it safe (kubelet list and Pod Security
    /// baseline alike).
    pub since: u32,
}

const fn row(name: &'static str, min_kernel: Option<&'static [u64]>, since: u32) -> SafeSysctl {
    SafeSysctl {
        name,
        min_kernel,
        since,
    }
}

pub const SAFE_SYSCTLS: &[SafeSysctl] = &[
    row("kernel.shm_rmid_forced", None, 4),
    row("net.ipv4.ip_local_port_range", None, 4),
    row("net.ipv4.tcp_syncookies", None, 4),
    row("net.ipv4.ping_group_range", None, 18),
    row("net.ipv4.ip_unprivileged_port_start", None, 22),
    row("net.ipv4.ip_local_reserved_ports", Some(&[3, 16]), 27),
    row("net.ipv4.tcp_keepalive_time", Some(&[4, 5]), 29),
    row("net.ipv4.tcp_fin_timeout", Some(&[4, 6]), 29),
    row("net.ipv4.tcp_keepalive_intvl", Some(&[4, 5]), 29),
    row("net.ipv4.tcp_keepalive_probes", Some(&[4, 5]), 29),
    row("net.ipv4.tcp_rmem", Some(&[4, 15]), 32),
    row("net.ipv4.tcp_wmem", Some(&[4, 15]), 32),
    row("net.ipv4.tcp_slow_start_after_idle", Some(&[4, 15]), 37),
    row("net.ipv4.tcp_notsent_lowat", Some(&[4, 6]), 37),
];

/// `getSafeSysctlAllowlist` of release `k8s`: its rows; ungated ones always, gated ones only
/// when the kernel is known and at least the minimum. An unknown kernel (`None`) keeps just the
/// ungated rows.
pub fn safe_sysctl_allowlist(
    kernel: Option<&KernelVersion>,
    k8s: KubernetesVersion,
) -> Vec<&'static str> {
    SAFE_SYSCTLS
        .iter()
        .filter(|s| s.since <= k8s.minor())
        .filter(|s| match (s.min_kernel, kernel) {
            (None, _) => true,
            (Some(min), Some(k)) => k.at_least(min),
            (Some(_), None) => false,
        })
        .map(|s| s.name)
        .collect()
}

/// A node's safe list and what it was derived from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlSafeList"))]
pub struct SafeList {
    pub names: Vec<String>,
    /// The version used, dotted; absent when unknown.
    pub kernel: Option<String>,
    /// Why the running kernel's version could not be determined (upstream then keeps only the
    /// ungated rows).
    pub kernel_error: Option<String>,
    /// The Kubernetes release whose list this is (`v1.<minor>`).
    pub kubernetes_version: String,
}

/// The safe list of release `k8s` for `kernel`, or for the running kernel when `None`. A given
/// version that does not parse is an error; a running kernel whose version cannot be read
/// leaves only the ungated rows, as upstream does, and says why.
pub fn safe_list(kernel: Option<&str>, k8s: KubernetesVersion) -> Result<SafeList, VersionError> {
    let (version, kernel_error) = match kernel {
        Some(k) => (Some(KernelVersion::parse(k)?), None),
        None => match read_kernel_version() {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e.to_string())),
        },
    };
    Ok(SafeList {
        names: safe_sysctl_allowlist(version.as_ref(), k8s)
            .into_iter()
            .map(String::from)
            .collect(),
        kernel: version.map(|v| v.to_string()),
        kernel_error,
        kubernetes_version: k8s.to_string(),
    })
}

/// Pod Security's baseline `sysctls` check (`policy/check_sysctls.go`): the names allowed at
/// policy version `v1.<minor>`, or at `latest` (`None`). No kernel gates there. Pod Security's
/// first table (policy v1.0) already holds every row safe by v1.22, its first release.
pub fn baseline_allowed_sysctls(policy_minor: Option<u32>) -> Vec<&'static str> {
    const FIRST_TABLE: u32 = 22;
    SAFE_SYSCTLS
        .iter()
        .filter(|s| {
            let since = if s.since <= FIRST_TABLE { 0 } else { s.since };
            policy_minor.is_none_or(|m| since <= m)
        })
        .map(|s| s.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEWEST: KubernetesVersion = KubernetesVersion::NEWEST;

    fn count(k: &str) -> usize {
        safe_sysctl_allowlist(Some(&KernelVersion::parse(k).unwrap()), NEWEST).len()
    }

    #[test]
    fn by_kernel() {
        assert_eq!(safe_sysctl_allowlist(None, NEWEST).len(), 5);
        assert_eq!(count("3.10"), 5);
        assert_eq!(count("3.18.0-957.27.2.el7.x86_64"), 6);
        assert_eq!(count("4.4"), 6);
        let v45 = safe_sysctl_allowlist(Some(&KernelVersion::parse("4.5").unwrap()), NEWEST);
        assert_eq!(v45.len(), 9);
        assert!(!v45.contains(&"net.ipv4.tcp_fin_timeout"));
        let v46 = safe_sysctl_allowlist(Some(&KernelVersion::parse("4.14").unwrap()), NEWEST);
        assert_eq!(v46.len(), 11);
        assert_eq!(v46.last(), Some(&"net.ipv4.tcp_notsent_lowat"));
        assert_eq!(count("5.15.0-75-generic"), 14);
        assert_eq!(count("6.1"), 14);
    }

    #[test]
    fn by_kubernetes_version() {
        let k = KernelVersion::parse("6.1").unwrap();
        let v136 = safe_sysctl_allowlist(Some(&k), KubernetesVersion::parse("v1.36").unwrap());
        let v137 = safe_sysctl_allowlist(Some(&k), KubernetesVersion::parse("v1.37").unwrap());
        assert_eq!(v136.len(), 12);
        assert!(!v136.contains(&"net.ipv4.tcp_slow_start_after_idle"));
        assert!(!v136.contains(&"net.ipv4.tcp_notsent_lowat"));
        assert_eq!(v137.len(), 14);
        assert_eq!(&v137[..12], &v136[..]);
        assert_eq!(
            safe_sysctl_allowlist(None, KubernetesVersion::OLDEST).len(),
            5
        );
    }

    #[test]
    fn safe_list_says_what_it_was_derived_from() {
        let l = safe_list(Some("4.14.0-1-generic"), KubernetesVersion::OLDEST).unwrap();
        assert_eq!(l.kernel.as_deref(), Some("4.14.0"));
        assert_eq!(l.kernel_error, None);
        assert_eq!(l.kubernetes_version, "v1.36");
        assert_eq!(
            l.names,
            safe_sysctl_allowlist(
                Some(&KernelVersion::parse("4.14").unwrap()),
                KubernetesVersion::OLDEST
            )
        );
        assert_eq!(
            safe_list(Some("four"), NEWEST).unwrap_err(),
            KernelVersion::parse("four").unwrap_err()
        );
        // The running kernel: its version, or (where /proc cannot be read) the reason and the
        // ungated rows only.
        let running = safe_list(None, NEWEST).unwrap();
        match (&running.kernel, &running.kernel_error) {
            (Some(_), None) => assert!(running.names.len() >= 5),
            (None, Some(_)) => assert_eq!(running.names.len(), 5),
            other => panic!("kernel and error: {other:?}"),
        }
    }

    #[test]
    fn baseline_by_policy_version() {
        assert_eq!(baseline_allowed_sysctls(Some(0)).len(), 5);
        assert_eq!(baseline_allowed_sysctls(Some(26)).len(), 5);
        assert_eq!(baseline_allowed_sysctls(Some(27)).len(), 6);
        assert_eq!(baseline_allowed_sysctls(Some(32)).len(), 12);
        assert_eq!(baseline_allowed_sysctls(Some(36)).len(), 12);
        assert_eq!(baseline_allowed_sysctls(Some(37)).len(), 14);
        assert_eq!(baseline_allowed_sysctls(None).len(), 14);
    }
}
