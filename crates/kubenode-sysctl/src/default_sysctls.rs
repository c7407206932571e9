//! The kubelet's `defaultPodSysctls` (KEP-5996, alpha in v1.37 behind the `DefaultPodSysctls`
//! feature gate): validating the configuration field (`pkg/kubelet/apis/config/validation`)
//! and merging the defaults into a pod's sandbox sysctls (`kuberuntime_sandbox.go`
//! `applyPodSysctls`). Admission never sees the defaults: they are added after it, when the
//! sandbox is created, and only where the pod does not share the namespace with the host.

use std::collections::HashSet;

use crate::apply::Sysctl;
use crate::k8s_version::KubernetesVersion;
use crate::name::is_valid_sysctl_name;
use crate::namespace::{get_namespace_at, Namespace};
use crate::normalize::normalize_name;
use crate::quote::go_quote;

/// The feature gate's name, as in `featureGates`.
pub const DEFAULT_POD_SYSCTLS_GATE: &str = "DefaultPodSysctls";

/// First release with the setting and its gate.
const SINCE: u32 = 37;

/// Whether a kubelet of release `k8s` with the gate set to `gate` (`None`: unset; alpha, so
/// off) applies `defaultPodSysctls`.
pub fn default_pod_sysctls_enabled(gate: Option<bool>, k8s: KubernetesVersion) -> bool {
    k8s.minor() >= SINCE && gate == Some(true)
}

/// The configuration errors a kubelet of release `k8s` reports for `defaultPodSysctls` with
/// these names (in the order given) and the gate set to `gate`, with upstream's texts. A
/// release before the setting does not know the gate either (`unrecognized feature gate`) and
/// ignores the field, as it ignores any field it does not know.
pub fn validate_default_pod_sysctls<'a, I>(
    names: I,
    gate: Option<bool>,
    k8s: KubernetesVersion,
) -> Vec<String>
where
    I: IntoIterator<Item = &'a str>,
{
    if k8s.minor() < SINCE {
        return match gate {
            Some(_) => vec![format!(
                "unrecognized feature gate: {DEFAULT_POD_SYSCTLS_GATE}"
            )],
            None => Vec::new(),
        };
    }
    let mut names = names.into_iter().peekable();
    if names.peek().is_none() {
        return Vec::new();
    }
    if gate != Some(true) {
        return vec![format!(
            "invalid configuration: {DEFAULT_POD_SYSCTLS_GATE} feature gate is required for Kubelet configuration option defaultPodSysctls"
        )];
    }
    let mut errs = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for k in names {
        if !is_valid_sysctl_name(k) {
            errs.push(format!(
                "invalid configuration: {} is not a valid sysctl name for defaultPodSysctls",
                go_quote(k)
            ));
            continue;
        }
        if get_namespace_at(k, k8s).namespace == Namespace::Unknown {
            errs.push(format!(
                "invalid configuration: {} is not known to be namespaced for defaultPodSysctls",
                go_quote(k)
            ));
        }
        let normalized = normalize_name(k).into_owned();
        if seen.contains(&normalized) {
            errs.push(format!(
                "invalid configuration: duplicate sysctl {} found in defaultPodSysctls",
                go_quote(&normalized)
            ));
        }
        seen.insert(normalized);
    }
    errs
}

/// IPC sysctls the runtime sets by exact name (runc's validator, as the kubelet copies it);
/// with `fs.mqueue.*` they are the IPC defaults.
const IPC_EXACT: &[&str] = &[
    "kernel.msgmax",
    "kernel.msgmnb",
    "kernel.msgmni",
    "kernel.sem",
    "kernel.shmall",
    "kernel.shmmax",
    "kernel.shmmni",
    "kernel.shm_rmid_forced",
];

/// Whether `applyPodSysctls` keeps the normalised default `name` for a pod with these host
/// namespaces: IPC ones unless hostIPC, `net.*` unless hostNetwork, `user.*` only with its own
/// user namespace, `kernel.domainname` unless hostNetwork; anything else is dropped.
fn keeps(name: &str, host_net: bool, host_ipc: bool, host_users: bool) -> bool {
    if IPC_EXACT.contains(&name) || name.starts_with("fs.mqueue.") {
        !host_ipc
    } else if name.starts_with("net.") {
        !host_net
    } else if name.starts_with("user.") {
        !host_users
    } else {
        // Upstream ties the UTS default to the network namespace (there is no hostUTS).
        !host_net && name == "kernel.domainname"
    }
}

/// The sandbox sysctls of a pod: the node's `defaults` that apply to it (under their
/// normalised names), then the pod's own `sysctls`, which win. `host_users` is true unless the
/// pod sets `hostUsers: false`. With `enabled` false (see [`default_pod_sysctls_enabled`]) only
/// the pod's own.
///
/// A pod naming a default in the other separator form (`net/ipv4/ip_forward`) replaces it:
/// upstream keeps both map keys and the runtime then writes them in map order.
pub fn sandbox_sysctls(
    defaults: &[Sysctl],
    pod: &[Sysctl],
    host_net: bool,
    host_ipc: bool,
    host_users: bool,
    enabled: bool,
) -> Vec<Sysctl> {
    let own: HashSet<String> = pod
        .iter()
        .map(|s| normalize_name(&s.name).into_owned())
        .collect();
    let mut out: Vec<Sysctl> = Vec::with_capacity(defaults.len() + pod.len());
    if enabled {
        for d in defaults {
            let name = normalize_name(&d.name).into_owned();
            if own.contains(&name) || !keeps(&name, host_net, host_ipc, host_users) {
                continue;
            }
            // A repeated normalised name (refused by validation) keeps the last value, as a map.
            if let Some(prev) = out.iter_mut().find(|s| s.name == name) {
                prev.value.clone_from(&d.value);
            } else {
                out.push(Sysctl {
                    name,
                    value: d.value.clone(),
                });
            }
        }
    }
    for s in pod {
        match out.iter_mut().find(|o| o.name == s.name) {
            Some(prev) => prev.value.clone_from(&s.value),
            None => out.push(s.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const V137: KubernetesVersion = KubernetesVersion::NEWEST;

    fn v136() -> KubernetesVersion {
        KubernetesVersion::parse("v1.36").unwrap()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<Sysctl> {
        v.iter()
            .map(|(n, v)| Sysctl {
                name: (*n).into(),
                value: (*v).into(),
            })
            .collect()
    }

    fn sorted(mut v: Vec<Sysctl>) -> Vec<(String, String)> {
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v.into_iter().map(|s| (s.name, s.value)).collect()
    }

    /// v1.37.2 `TestValidateKubeletConfiguration`, the defaultPodSysctls rows (Linux).
    #[test]
    fn validation_upstream_cases() {
        let v =
            |names: &[&str], gate| validate_default_pod_sysctls(names.iter().copied(), gate, V137);
        assert_eq!(
            v(&["net.ipv4.ip_forward"], None),
            ["invalid configuration: DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls"]
        );
        assert_eq!(
            v(&["net.ipv4.ip_forward"], Some(false)),
            v(&["net.ipv4.ip_forward"], None)
        );
        assert!(v(&["net.ipv4.ip_forward"], Some(true)).is_empty());
        assert!(v(&["net/ipv4/ip_forward"], Some(true)).is_empty());
        assert_eq!(
            v(&["Invalid.Sysctl"], Some(true)),
            [
                r#"invalid configuration: "Invalid.Sysctl" is not a valid sysctl name for defaultPodSysctls"#
            ]
        );
        assert_eq!(
            v(&["net.ipv4.ip@forward"], Some(true)),
            [
                r#"invalid configuration: "net.ipv4.ip@forward" is not a valid sysctl name for defaultPodSysctls"#
            ]
        );
        let long = "a".repeat(254);
        let e = v(&[&long], Some(true));
        assert_eq!(e.len(), 1);
        assert!(e[0].ends_with("is not a valid sysctl name for defaultPodSysctls"));
        assert_eq!(
            v(&["kernel.printk"], Some(true)),
            [
                r#"invalid configuration: "kernel.printk" is not known to be namespaced for defaultPodSysctls"#
            ]
        );
        assert_eq!(
            v(&["net.ipv4.ip_forward", "net/ipv4/ip_forward"], Some(true)),
            [
                r#"invalid configuration: duplicate sysctl "net.ipv4.ip_forward" found in defaultPodSysctls"#
            ]
        );
        assert!(v(&[], None).is_empty());
        // Every error is reported, in the order given.
        assert_eq!(
            v(
                &["vm.x", "A", "user.max_user_namespaces", "kernel.domainname"],
                Some(true)
            )
            .len(),
            2
        );
    }

    #[test]
    fn validation_by_release() {
        let names = ["user.max_user_namespaces"];
        assert!(validate_default_pod_sysctls(names, Some(true), V137).is_empty());
        assert_eq!(
            validate_default_pod_sysctls(names, Some(true), v136()),
            ["unrecognized feature gate: DefaultPodSysctls"]
        );
        assert!(validate_default_pod_sysctls(names, None, v136()).is_empty());
        assert!(default_pod_sysctls_enabled(Some(true), V137));
        assert!(!default_pod_sysctls_enabled(None, V137));
        assert!(!default_pod_sysctls_enabled(Some(true), v136()));
    }

    /// v1.37.2 `TestSysctlFiltering` (`kuberuntime_manager_test.go`).
    #[test]
    fn filtering_upstream_table() {
        let defaults = pairs(&[
            ("net.somaxconn", "1024"),
            ("kernel.msgmax", "true"),
            ("fs.mqueue.msg_max", "1024"),
            ("kernel.domainname", "my-name"),
            ("non.whitelisted", "true"),
            ("net/ipv4/ip_forward", "1"),
            ("kernel/sem", "250 32000 32 128"),
            ("user.max_user_namespaces", "1000"),
        ]);
        let net = [("net.somaxconn", "1024"), ("net.ipv4.ip_forward", "1")];
        let ipc = [
            ("kernel.msgmax", "true"),
            ("fs.mqueue.msg_max", "1024"),
            ("kernel.sem", "250 32000 32 128"),
        ];
        let uts = [("kernel.domainname", "my-name")];
        let user = [("user.max_user_namespaces", "1000")];
        let all = |parts: &[&[(&str, &str)]]| sorted(pairs(&parts.concat()));
        // (hostNetwork, hostIPC, host users, expected)
        for (hn, hi, hu, want) in [
            (false, false, true, all(&[&net, &ipc, &uts])),
            (true, false, true, all(&[&ipc])),
            (false, true, true, all(&[&net, &uts])),
            (true, true, true, vec![]),
            (false, false, false, all(&[&net, &ipc, &uts, &user])),
        ] {
            let got = sandbox_sysctls(&defaults, &[], hn, hi, hu, true);
            assert_eq!(sorted(got), want, "{hn} {hi} {hu}");
        }
        assert!(sandbox_sysctls(&defaults, &[], false, false, false, false).is_empty());
    }

    #[test]
    fn the_pods_own_values_win() {
        let defaults = pairs(&[
            ("net.ipv4.ip_forward", "1"),
            ("kernel.shmmni", "4096"),
            ("net.core.somaxconn", "1024"),
        ]);
        let pod = pairs(&[
            ("net/ipv4/ip_forward", "0"),
            ("kernel.shmmni", "8192"),
            ("kernel.shm_rmid_forced", "1"),
        ]);
        assert_eq!(
            sandbox_sysctls(&defaults, &pod, false, false, true, true),
            pairs(&[
                ("net.core.somaxconn", "1024"),
                ("net/ipv4/ip_forward", "0"),
                ("kernel.shmmni", "8192"),
                ("kernel.shm_rmid_forced", "1"),
            ])
        );
        // Disabled: the pod's own, unchanged; a repeated pod name keeps the last value.
        let pod = pairs(&[("kernel.sem", "1"), ("kernel.sem", "2")]);
        assert_eq!(
            sandbox_sysctls(&defaults, &pod, false, false, true, false),
            pairs(&[("kernel.sem", "2")])
        );
        // `kernel.shm` (a namespace-table key) is not a runtime IPC name and is dropped.
        let d = pairs(&[("kernel.shm", "1"), ("net.a", "1"), ("net.a", "2")]);
        assert_eq!(
            sandbox_sysctls(&d, &[], false, false, true, true),
            pairs(&[("net.a", "2")])
        );
    }
}
