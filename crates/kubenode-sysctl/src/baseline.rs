//! Pod Security Admission's baseline `sysctls` check (`policy/check_sysctls.go`): exact-name
//! membership in the allowed set of the policy version; no normalisation, no host flags.

use std::collections::HashSet;

use crate::safe::baseline_allowed_sysctls;

/// `CheckResult.ForbiddenReason` of a refused pod.
pub const BASELINE_FORBIDDEN_REASON: &str = "forbidden sysctls";

/// The check's `ForbiddenDetail` for `names` at a policy version (`None` for `latest`): the
/// names outside the allowed set, in the pod's order, repeats kept, joined by `, `; `None`
/// when every name is allowed.
pub fn check_baseline<'a>(
    names: impl IntoIterator<Item = &'a str>,
    policy_minor: Option<u32>,
) -> Option<String> {
    let allowed: HashSet<&str> = baseline_allowed_sysctls(policy_minor).into_iter().collect();
    let forbidden: Vec<&str> = names.into_iter().filter(|n| !allowed.contains(n)).collect();
    (!forbidden.is_empty()).then(|| forbidden.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pod-security-admission v0.37.2 `check_sysctls_test.go`: `TestSysctls` (policy v1.0),
    /// `TestSysctls_1_27`, `_1_29`, `_1_32` and `_1_37`, each at its own policy version; a row
    /// is (policy minor, the pod's names, `ForbiddenDetail` or `None` when allowed).
    #[test]
    fn upstream_tables() {
        let rows: &[(u32, &[&str], Option<&str>)] = &[
            (0, &["a", "b"], Some("a, b")),
            (
                0,
                &["net.ipv4.ip_local_reserved_ports"],
                Some("net.ipv4.ip_local_reserved_ports"),
            ),
            (
                0,
                &["net.ipv4.tcp_keepalive_time"],
                Some("net.ipv4.tcp_keepalive_time"),
            ),
            (
                0,
                &["net.ipv4.tcp_fin_timeout"],
                Some("net.ipv4.tcp_fin_timeout"),
            ),
            (
                0,
                &["net.ipv4.tcp_keepalive_intvl"],
                Some("net.ipv4.tcp_keepalive_intvl"),
            ),
            (
                0,
                &["net.ipv4.tcp_keepalive_probes"],
                Some("net.ipv4.tcp_keepalive_probes"),
            ),
            (0, &["net.ipv4.tcp_rmem"], Some("net.ipv4.tcp_rmem")),
            (0, &["net.ipv4.tcp_wmem"], Some("net.ipv4.tcp_wmem")),
            (27, &["a", "b"], Some("a, b")),
            (27, &["net.ipv4.ip_local_reserved_ports"], None),
            (29, &["a", "b"], Some("a, b")),
            (29, &["net.ipv4.tcp_keepalive_time"], None),
            (29, &["net.ipv4.tcp_fin_timeout"], None),
            (29, &["net.ipv4.tcp_keepalive_intvl"], None),
            (29, &["net.ipv4.tcp_keepalive_probes"], None),
            (32, &["a", "b"], Some("a, b")),
            (32, &["net.ipv4.tcp_rmem"], None),
            (32, &["net.ipv4.tcp_wmem"], None),
            (37, &["a", "b"], Some("a, b")),
            (37, &["net.ipv4.tcp_slow_start_after_idle"], None),
            (37, &["net.ipv4.tcp_notsent_lowat"], None),
            // v1.36 (policy 1.32's table) does not have the v1.37 rows.
            (
                36,
                &["net.ipv4.tcp_slow_start_after_idle"],
                Some("net.ipv4.tcp_slow_start_after_idle"),
            ),
            (
                36,
                &["net.ipv4.tcp_notsent_lowat"],
                Some("net.ipv4.tcp_notsent_lowat"),
            ),
        ];
        for (minor, names, want) in rows {
            let got = check_baseline(names.iter().copied(), Some(*minor));
            assert_eq!(got.as_deref(), *want, "v1.{minor} {names:?}");
        }
    }

    #[test]
    fn exact_names_in_pod_order() {
        assert_eq!(
            check_baseline(["net.ipv4.tcp_rmem"], Some(31)).as_deref(),
            Some("net.ipv4.tcp_rmem")
        );
        assert_eq!(check_baseline(["net.ipv4.tcp_rmem"], Some(32)), None);
        assert_eq!(check_baseline(["net.ipv4.tcp_notsent_lowat"], None), None);
        assert_eq!(
            check_baseline(
                [
                    "net.core.somaxconn",
                    "kernel.shm_rmid_forced",
                    "kernel/shm_rmid_forced",
                    "net.core.somaxconn"
                ],
                Some(0)
            )
            .as_deref(),
            Some("net.core.somaxconn, kernel/shm_rmid_forced, net.core.somaxconn")
        );
        assert_eq!(check_baseline([], Some(0)), None);
    }
}
