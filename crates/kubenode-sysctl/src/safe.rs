//! The kubelet's safe sysctls with their minimum kernel versions (`pkg/kubelet/sysctl/
//! safe_sysctls.go`, gates from `pkg/util/kernel/constants.go`), in upstream order.

use crate::kernel::KernelVersion;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SafeSysctl {
    pub name: &'static str,
    /// Minimum kernel where the sysctl is namespaced; `None` means always safe.
    pub min_kernel: Option<&'static [u64]>,
    /// Kubernetes release that made it safe.
    pub since: &'static str,
}

const fn row(
    name: &'static str,
    min_kernel: Option<&'static [u64]>,
    since: &'static str,
) -> SafeSysctl {
    SafeSysctl {
        name,
        min_kernel,
        since,
    }
}

pub const SAFE_SYSCTLS: &[SafeSysctl] = &[
    row("kernel.shm_rmid_forced", None, "1.4"),
    row("net.ipv4.ip_local_port_range", None, "1.4"),
    row("net.ipv4.tcp_syncookies", None, "1.4"),
    row("net.ipv4.ping_group_range", None, "1.18"),
    row("net.ipv4.ip_unprivileged_port_start", None, "1.22"),
    row("net.ipv4.ip_local_reserved_ports", Some(&[3, 16]), "1.27"),
    row("net.ipv4.tcp_keepalive_time", Some(&[4, 5]), "1.29"),
    row("net.ipv4.tcp_fin_timeout", Some(&[4, 6]), "1.29"),
    row("net.ipv4.tcp_keepalive_intvl", Some(&[4, 5]), "1.29"),
    row("net.ipv4.tcp_keepalive_probes", Some(&[4, 5]), "1.29"),
    row("net.ipv4.tcp_rmem", Some(&[4, 15]), "1.32"),
    row("net.ipv4.tcp_wmem", Some(&[4, 15]), "1.32"),
    row("net.ipv4.tcp_slow_start_after_idle", Some(&[4, 15]), "1.37"),
    row("net.ipv4.tcp_notsent_lowat", Some(&[4, 6]), "1.37"),
];

/// `getSafeSysctlAllowlist`: ungated rows always; gated rows only when the kernel is known and
/// at least the minimum. An unknown kernel (`None`) keeps just the ungated rows.
pub fn safe_sysctl_allowlist(kernel: Option<&KernelVersion>) -> Vec<&'static str> {
    SAFE_SYSCTLS
        .iter()
        .filter(|s| match (s.min_kernel, kernel) {
            (None, _) => true,
            (Some(min), Some(k)) => k.at_least(min),
            (Some(_), None) => false,
        })
        .map(|s| s.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(k: &str) -> usize {
        safe_sysctl_allowlist(Some(&KernelVersion::parse(k).unwrap())).len()
    }

    #[test]
    fn by_kernel() {
        assert_eq!(safe_sysctl_allowlist(None).len(), 5);
        assert_eq!(count("3.10"), 5);
        assert_eq!(count("3.18.0-957.27.2.el7.x86_64"), 6);
        assert_eq!(count("4.4"), 6);
        let v45 = safe_sysctl_allowlist(Some(&KernelVersion::parse("4.5").unwrap()));
        assert_eq!(v45.len(), 9);
        assert!(!v45.contains(&"net.ipv4.tcp_fin_timeout"));
        let v46 = safe_sysctl_allowlist(Some(&KernelVersion::parse("4.14").unwrap()));
        assert_eq!(v46.len(), 11);
        assert_eq!(v46.last(), Some(&"net.ipv4.tcp_notsent_lowat"));
        assert_eq!(count("5.15.0-75-generic"), 14);
        assert_eq!(count("6.1"), 14);
    }
}
