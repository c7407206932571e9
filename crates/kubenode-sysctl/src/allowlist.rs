//! The kubelet's sysctl admission handler (`pkg/kubelet/sysctl/allowlist.go`): an allowlist of
//! exact names and `*` prefixes built from the safe list plus `--allowed-unsafe-sysctls`.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::collections::HashMap;

use thiserror::Error;

use crate::k8s_version::KubernetesVersion;
use crate::lookup::{ExactTable, PrefixTable};
use crate::name::{is_valid_sysctl_pattern, SYSCTL_CONTAIN_SLASH_PATTERN_FMT};
use crate::namespace::{get_namespace_at, Namespace, NamespaceInfo};
use crate::normalize::normalize_name;
use crate::quote::go_quote;

/// `ForbiddenReason`: the pod status reason of a rejected pod.
pub const FORBIDDEN_REASON: &str = "SysctlForbidden";

/// Why an allowlist entry was refused; a kubelet fails to start on either.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AllowlistError {
    #[error("sysctl {} must have at most 253 characters and match regex {}", go_quote(.0), SYSCTL_CONTAIN_SLASH_PATTERN_FMT)]
    InvalidPattern(String),
    /// Holds the normalised, star-stripped key, as upstream prints it.
    #[error("the sysctls {} are not known to be namespaced", go_quote(.0))]
    NotNamespaced(String),
}

/// Why one sysctl of a pod is forbidden; `Display` is upstream's error text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AdmitError {
    #[error("{} not allowed with host {} enabled", go_quote(.name), .namespace.as_str())]
    HostNamespace { name: String, namespace: Namespace },
    #[error("{} not allowlisted", go_quote(.0))]
    NotAllowlisted(String),
}

impl AdmitError {
    /// The pod status message: `forbidden sysctl: <error>`.
    pub fn message(&self) -> String {
        format!("forbidden sysctl: {self}")
    }
}

fn swap_separators(name: &[u8]) -> Vec<u8> {
    name.iter()
        .map(|&c| match c {
            b'.' => b'/',
            b'/' => b'.',
            c => c,
        })
        .collect()
}

/// Longest name normalised on the stack; longer ones (never valid names) are normalised on the heap.
const STACK_NAME: usize = 256;

/// Whether `NormalizeName` (§3) changes the name: its first separator is a slash.
#[inline]
fn slash_first(name: &[u8]) -> bool {
    name.iter().find(|&&c| c == b'.' || c == b'/') == Some(&b'/')
}

/// One allowlist entry as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "SysctlAllowlistEntry"))]
pub struct AllowlistEntry {
    /// Normalised; a prefix without its `*`.
    pub key: String,
    // Named for the typings: `Namespace` is declared after this module is read.
    #[cfg_attr(feature = "napi", napi(ts_type = "SysctlNamespace"))]
    pub namespace: Namespace,
    pub prefix: bool,
}

#[derive(Debug, Clone)]
pub struct Allowlist {
    sysctls: ExactTable,
    prefixes: PrefixTable,
}

impl Allowlist {
    /// `NewAllowlist` of the newest release: every entry must be a valid pattern whose namespace
    /// is known.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, AllowlistError> {
        Self::for_release(patterns, KubernetesVersion::NEWEST)
    }

    /// `NewAllowlist` of release `k8s`, whose namespace tables decide what is known to be
    /// namespaced (a v1.36 kubelet refuses `user.*` and `kernel.domainname`).
    pub fn for_release<S: AsRef<str>>(
        patterns: &[S],
        k8s: KubernetesVersion,
    ) -> Result<Self, AllowlistError> {
        let mut exact: Vec<(String, Namespace)> = Vec::new();
        let mut prefixes: Vec<(String, Namespace)> = Vec::new();
        // Position of each prefix key in `prefixes`: a repeated key overwrites (Go map), found
        // without a scan, so long lists stay linear.
        let mut prefix_at: HashMap<String, usize> = HashMap::new();
        for p in patterns {
            let p = p.as_ref();
            if !is_valid_sysctl_pattern(p) {
                return Err(AllowlistError::InvalidPattern(p.to_string()));
            }
            let NamespaceInfo {
                namespace: ns,
                name: key,
                prefixed,
            } = get_namespace_at(p, k8s);
            if ns == Namespace::Unknown {
                return Err(AllowlistError::NotNamespaced(key));
            }
            if prefixed {
                match prefix_at.get(&key).and_then(|&i| prefixes.get_mut(i)) {
                    Some(slot) => slot.1 = ns,
                    None => {
                        prefix_at.insert(key.clone(), prefixes.len());
                        prefixes.push((key, ns));
                    }
                }
            } else {
                exact.push((key, ns));
            }
        }
        Ok(Self {
            sysctls: ExactTable::build(&exact),
            prefixes: PrefixTable::build(&prefixes),
        })
    }

    /// Exact keys (normalised), in no particular order.
    pub fn exact(&self) -> impl Iterator<Item = (&str, Namespace)> {
        self.sysctls.iter()
    }

    /// Prefix keys (normalised, without the `*`).
    pub fn prefixes(&self) -> impl Iterator<Item = (&str, Namespace)> {
        self.prefixes.iter()
    }

    /// Every entry, sorted by key, an exact key before the prefix with the same text.
    pub fn entries(&self) -> Vec<AllowlistEntry> {
        let entry = |prefix| {
            move |(key, namespace): (&str, Namespace)| AllowlistEntry {
                key: key.to_string(),
                namespace,
                prefix,
            }
        };
        let mut v: Vec<AllowlistEntry> = self
            .exact()
            .map(entry(false))
            .chain(self.prefixes().map(entry(true)))
            .collect();
        v.sort_by(|a, b| a.key.cmp(&b.key).then(a.prefix.cmp(&b.prefix)));
        v
    }

    /// Steps 2–4 of `validateSysctl` on a normalised name: exact key first, then a plain
    /// string-prefix match; `None` when neither matches.
    #[inline]
    fn lookup(&self, name: &[u8]) -> Option<Namespace> {
        self.sysctls.get(name).or_else(|| self.prefixes.find(name))
    }

    /// `validateSysctl` for one name as a verdict code; see [`Verdict`]. Allocates nothing.
    /// `host_users` is true unless the pod sets `hostUsers: false`.
    #[inline]
    pub fn check(&self, name: &str, host_net: bool, host_ipc: bool, host_users: bool) -> Verdict {
        let b = name.as_bytes();
        let ns = if slash_first(b) {
            self.lookup_swapped(b)
        } else {
            self.lookup(b)
        };
        Verdict::of(ns, host_net, host_ipc, host_users)
    }

    /// The namespace of the allowlist entry `name` falls under (exact key first, then prefix),
    /// or `None` when it is not allowlisted; the host check is left to [`Verdict::of`].
    pub fn classify(&self, name: &str) -> Option<Namespace> {
        let b = name.as_bytes();
        if slash_first(b) {
            self.lookup_swapped(b)
        } else {
            self.lookup(b)
        }
    }

    /// [`Self::lookup`] of a slash-first name after swapping `.` and `/`, on the stack.
    #[cold]
    fn lookup_swapped(&self, name: &[u8]) -> Option<Namespace> {
        let mut buf = [0u8; STACK_NAME];
        match buf.get_mut(..name.len()) {
            Some(out) => {
                for (o, &c) in out.iter_mut().zip(name) {
                    *o = match c {
                        b'.' => b'/',
                        b'/' => b'.',
                        c => c,
                    };
                }
                self.lookup(out)
            }
            None => self.lookup(&swap_separators(name)),
        }
    }

    /// `validateSysctl` for one name: exact key first, then a plain string-prefix match.
    pub fn validate_sysctl(
        &self,
        name: &str,
        host_net: bool,
        host_ipc: bool,
        host_users: bool,
    ) -> Result<(), AdmitError> {
        self.check(name, host_net, host_ipc, host_users)
            .into_result(name)
    }

    /// `Admit`: the first forbidden sysctl (in spec order) rejects the pod. No sysctls admit.
    pub fn admit<'a, I>(
        &self,
        names: I,
        host_net: bool,
        host_ipc: bool,
        host_users: bool,
    ) -> Result<(), AdmitError>
    where
        I: IntoIterator<Item = &'a str>,
    {
        self.admit_first(names, host_net, host_ipc, host_users)
            .map_or(Ok(()), |(name, v)| v.into_result(name))
    }

    /// `Admit` without building the error: the first forbidden name and its verdict.
    #[inline]
    pub fn admit_first<'a, I>(
        &self,
        names: I,
        host_net: bool,
        host_ipc: bool,
        host_users: bool,
    ) -> Option<(&'a str, Verdict)>
    where
        I: IntoIterator<Item = &'a str>,
    {
        for n in names {
            let v = self.check(n, host_net, host_ipc, host_users);
            if v != Verdict::Allowed {
                return Some((n, v));
            }
        }
        None
    }
}

/// Outcome of `validateSysctl` for one name, without the message; [`Verdict::into_result`]
/// builds upstream's error only for a rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Verdict {
    Allowed = 0,
    NotAllowlisted = 1,
    HostNet = 2,
    HostIpc = 3,
    /// A User-namespace sysctl for a pod in the host user namespace (v1.37).
    HostUser = 4,
}

impl Verdict {
    /// The host check of `validateSysctl` on a looked-up namespace (`None`: not allowlisted).
    /// UTS sysctls are never host-checked, as upstream.
    #[inline]
    pub fn of(ns: Option<Namespace>, host_net: bool, host_ipc: bool, host_users: bool) -> Self {
        match ns {
            None => Verdict::NotAllowlisted,
            Some(Namespace::Ipc) if host_ipc => Verdict::HostIpc,
            Some(Namespace::Net) if host_net => Verdict::HostNet,
            Some(Namespace::User) if host_users => Verdict::HostUser,
            Some(_) => Verdict::Allowed,
        }
    }

    /// The error for `name` (the raw name; it is normalised for the message, as upstream).
    pub fn into_result(self, name: &str) -> Result<(), AdmitError> {
        let owned = || normalize_name(name).into_owned();
        match self {
            Verdict::Allowed => Ok(()),
            Verdict::NotAllowlisted => Err(AdmitError::NotAllowlisted(owned())),
            Verdict::HostNet => Err(AdmitError::HostNamespace {
                name: owned(),
                namespace: Namespace::Net,
            }),
            Verdict::HostIpc => Err(AdmitError::HostNamespace {
                name: owned(),
                namespace: Namespace::Ipc,
            }),
            Verdict::HostUser => Err(AdmitError::HostNamespace {
                name: owned(),
                namespace: Namespace::User,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_sorted_exact_before_prefix_repeats_overwritten() {
        let a = Allowlist::new(&["net.b", "net/b/*", "kernel.shm*", "net.a", "net.b.*"]).unwrap();
        let e = |key: &str, namespace, prefix| AllowlistEntry {
            key: key.into(),
            namespace,
            prefix,
        };
        assert_eq!(
            a.entries(),
            [
                e("kernel.shm", Namespace::Ipc, true),
                e("net.a", Namespace::Net, false),
                e("net.b", Namespace::Net, false),
                e("net.b.", Namespace::Net, true),
            ]
        );
    }

    #[test]
    fn more_than_65535_prefixes_with_one_first_byte() {
        let mut patterns: Vec<String> = (0..70_000).map(|i| format!("net.a{i}.*")).collect();
        patterns.push("kernel.sem".into());
        patterns.push("net.a5.*".into());
        let a = Allowlist::new(&patterns).unwrap();
        assert_eq!(a.prefixes().count(), 70_000);
        for n in ["net.a0.x", "net.a69999.rp_filter", "kernel.sem"] {
            assert_eq!(a.check(n, false, false, true), Verdict::Allowed, "{n}");
        }
        assert_eq!(
            a.check("net.b.x", false, false, true),
            Verdict::NotAllowlisted
        );
        assert_eq!(a.check("net.a7.x", true, false, true), Verdict::HostNet);
    }

    #[test]
    fn new_allowlist_upstream_cases() {
        assert!(Allowlist::new(&["kernel.msg*", "kernel.sem"]).is_ok());
        assert!(Allowlist::new(&["kernel/msg*", "kernel/sem"]).is_ok());
        for bad in [
            " kernel.msg*",
            "kernel.msg* ",
            "net.-",
            "net.*.foo",
            "net.*/foo",
        ] {
            assert!(
                matches!(
                    Allowlist::new(&[bad]),
                    Err(AllowlistError::InvalidPattern(_))
                ),
                "{bad:?}"
            );
        }
        assert_eq!(
            Allowlist::new(&["foo"]).unwrap_err().to_string(),
            r#"the sysctls "foo" are not known to be namespaced"#
        );
        assert_eq!(
            Allowlist::new(&["foo*"]).unwrap_err().to_string(),
            r#"the sysctls "foo" are not known to be namespaced"#
        );
        assert_eq!(
            Allowlist::new(&["*"]).unwrap_err().to_string(),
            r#"the sysctls "" are not known to be namespaced"#
        );
        assert_eq!(
            Allowlist::new(&["fs.inotify.*"]).unwrap_err().to_string(),
            r#"the sysctls "fs.inotify." are not known to be namespaced"#
        );
        assert_eq!(
            Allowlist::new(&["vm.max_map_count"])
                .unwrap_err()
                .to_string(),
            r#"the sysctls "vm.max_map_count" are not known to be namespaced"#
        );
        assert_eq!(
            Allowlist::new(&["net.-"]).unwrap_err().to_string(),
            r#"sysctl "net.-" must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"#
        );
        assert!(Allowlist::new(&["kernel.domainname", "user.*"]).is_ok());
    }

    #[test]
    fn admit_upstream_cases() {
        let w = Allowlist::new(&[
            "kernel.shm_rmid_forced",
            "net.ipv4.ip_local_port_range",
            "kernel.msg*",
            "kernel.sem",
        ])
        .unwrap();
        // (name, hostNetwork, hostIPC)
        for (ok, host_net, host_ipc) in [
            ("kernel.shm_rmid_forced", false, false),
            ("kernel/shm_rmid_forced", false, false),
            ("kernel.msgmax", false, false),
            ("kernel.sem", false, false),
            ("kernel.msgfoo", false, false),
            ("net.ipv4.ip_local_port_range", false, true),
            ("kernel.shm_rmid_forced", true, false),
        ] {
            assert!(
                w.validate_sysctl(ok, host_net, host_ipc, true).is_ok(),
                "{ok}"
            );
        }
        for (name, host_net, host_ipc, want) in [
            (
                "net.ipv4.ip_local_port_range",
                true,
                false,
                r#"forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled"#,
            ),
            (
                "kernel/msgmax",
                false,
                true,
                r#"forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled"#,
            ),
            (
                "net/core/somaxconn",
                false,
                false,
                r#"forbidden sysctl: "net.core.somaxconn" not allowlisted"#,
            ),
        ] {
            let e = w
                .validate_sysctl(name, host_net, host_ipc, true)
                .unwrap_err();
            assert_eq!(e.message(), want, "{name}");
            // Display is the message without the "forbidden sysctl: " prefix.
            assert_eq!(format!("forbidden sysctl: {e}"), want, "{name}");
        }
        let first = w
            .admit(["kernel.sem", "a.b", "c.d"], false, false, true)
            .unwrap_err();
        assert_eq!(first, AdmitError::NotAllowlisted("a.b".into()));
        assert!(w.admit(std::iter::empty(), true, true, true).is_ok());
    }

    /// `TestAllowlist` of v1.37.2 (`pkg/kubelet/sysctl/allowlist_test.go`): the safe list plus
    /// `kernel.msg*`, `kernel.sem`, `net.b.*` and `user.*`; a row is (name, hostNetwork,
    /// hostIPC, hostUsers).
    #[test]
    fn allowlist_upstream_table() {
        let mut patterns = crate::safe::safe_sysctl_allowlist(None, KubernetesVersion::NEWEST);
        patterns.extend(["kernel.msg*", "kernel.sem", "net.b.*", "user.*"]);
        let w = Allowlist::new(&patterns).unwrap();
        for (name, net, ipc, users) in [
            ("kernel.shm_rmid_forced", false, false, false),
            ("kernel/shm_rmid_forced", false, false, false),
            ("net.ipv4.ip_local_port_range", false, false, false),
            ("kernel.msgmax", false, false, false),
            ("kernel.sem", false, false, false),
            ("kernel/sem", false, false, false),
            ("user.max_user_namespaces", false, false, false),
        ] {
            let r = w.validate_sysctl(name, net, ipc, users);
            assert_eq!(r, Ok(()), "{name}");
            assert_eq!(w.admit([name], net, ipc, users), Ok(()), "{name}");
        }
        for (name, net, ipc, users) in [
            ("kernel.shm_rmid_forced", false, true, false),
            ("net.ipv4.ip_local_port_range", true, false, false),
            ("user.max_user_namespaces", false, false, true),
            ("foo", false, false, false),
            ("net.a.b.c", false, false, false),
            ("net.ipv4.ip_local_port_range.a.b.c", false, false, false),
            ("kernel.msgmax", false, true, false),
            ("kernel.sem", false, true, false),
            ("net.b.c", true, false, false),
        ] {
            assert!(w.validate_sysctl(name, net, ipc, users).is_err(), "{name}");
            assert!(w.admit([name], net, ipc, users).is_err(), "{name}");
        }
        assert_eq!(w.admit(std::iter::empty(), false, false, true), Ok(()));
        assert_eq!(
            w.validate_sysctl("user/max_user_namespaces", false, false, true)
                .unwrap_err()
                .message(),
            r#"forbidden sysctl: "user.max_user_namespaces" not allowed with host User enabled"#
        );
    }

    /// Only the User namespace follows `hostUsers`; UTS is never host-checked (no hostUTS).
    #[test]
    fn host_users_checks_user_sysctls_only() {
        let w =
            Allowlist::new(&["kernel.domainname", "user.max_user_namespaces", "net.*"]).unwrap();
        for (name, net, ipc, users, want) in [
            ("kernel.domainname", true, true, true, Verdict::Allowed),
            (
                "user.max_user_namespaces",
                true,
                true,
                false,
                Verdict::Allowed,
            ),
            (
                "user.max_user_namespaces",
                false,
                false,
                true,
                Verdict::HostUser,
            ),
            ("net.core.somaxconn", false, false, true, Verdict::Allowed),
            ("net.core.somaxconn", true, false, false, Verdict::HostNet),
        ] {
            assert_eq!(w.check(name, net, ipc, users), want, "{name}");
        }
    }

    /// A v1.36 kubelet knows neither the UTS nor the User namespace (component-helpers v0.36.3),
    /// so it refuses them in `--allowed-unsafe-sysctls`; v1.37 accepts them.
    #[test]
    fn new_allowlist_by_release() {
        let v136 = KubernetesVersion::parse("v1.36").unwrap();
        for (pattern, key) in [
            ("user.*", "user."),
            ("user.max_user_namespaces", "user.max_user_namespaces"),
            ("kernel.domainname", "kernel.domainname"),
            ("kernel/domainname", "kernel.domainname"),
        ] {
            assert_eq!(
                Allowlist::for_release(&[pattern], v136).unwrap_err(),
                AllowlistError::NotNamespaced(key.into()),
                "{pattern}"
            );
            assert!(Allowlist::new(&[pattern]).is_ok(), "{pattern}");
        }
        assert!(Allowlist::for_release(&["net.*", "kernel.shm*", "fs.mqueue.*"], v136).is_ok());
    }

    #[test]
    fn slash_names_of_any_length_are_normalised() {
        let w = Allowlist::new(&["net.*", "kernel.sem"]).unwrap();
        for len in [1, 200, 251, 252, 253, 300, 1000] {
            let long = format!("net/{}", "a.".repeat(len / 2));
            assert!(
                w.validate_sysctl(&long, false, false, true).is_ok(),
                "{len}"
            );
            let other = format!("vm/{}", "b.".repeat(len / 2));
            assert_eq!(
                w.validate_sysctl(&other, false, false, true),
                Err(AdmitError::NotAllowlisted(
                    normalize_name(&other).into_owned()
                ))
            );
        }
        assert!(w.validate_sysctl("kernel/sem", false, false, true).is_ok());
        assert_eq!(w.classify("kernel/sem"), Some(Namespace::Ipc));
        assert_eq!(w.classify("net"), None);
        assert_eq!(
            w.check("net.core.somaxconn", true, false, true),
            Verdict::HostNet
        );
    }
}
