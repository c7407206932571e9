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
