//! The kubelet's sysctl admission handler (`pkg/kubelet/sysctl/allowlist.go`): an allowlist of
//! exact names and `*` prefixes built from the safe list plus `--allowed-unsafe-sysctls`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use thiserror::Error;

use crate::name::{is_valid_sysctl_pattern, SYSCTL_CONTAIN_SLASH_PATTERN_FMT};
use crate::namespace::{get_namespace, Namespace};
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

/// Fx-style word-at-a-time hash: keys come from node config (no DoS exposure), and hashing
/// 8 bytes per multiply keeps the lookup cheap next to SipHash or byte-wise FNV.
#[derive(Default)]
struct WordHash(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl WordHash {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
}

type FastMap<V> = HashMap<String, V, BuildHasherDefault<WordHash>>;

#[derive(Debug, Clone)]
pub struct Allowlist {
    sysctls: FastMap<Namespace>,
    /// Longest first, so the first hit is deterministic; overlapping prefixes share a
    /// namespace, so the choice never changes the outcome.
    prefixes: Vec<(String, Namespace)>,
}

impl Allowlist {
    /// `NewAllowlist`: every entry must be a valid pattern whose namespace is known.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, AllowlistError> {
        let mut sysctls = FastMap::default();
        let mut prefixes: Vec<(String, Namespace)> = Vec::new();
        for p in patterns {
            let p = p.as_ref();
            if !is_valid_sysctl_pattern(p) {
                return Err(AllowlistError::InvalidPattern(p.to_string()));
            }
            let (ns, key, prefixed) = get_namespace(p);
            if ns == Namespace::Unknown {
                return Err(AllowlistError::NotNamespaced(key));
            }
            if prefixed {
                match prefixes.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = ns,
                    None => prefixes.push((key, ns)),
                }
            } else {
                sysctls.insert(key, ns);
            }
        }
        prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Ok(Self { sysctls, prefixes })
    }

    /// Exact keys (normalised), in no particular order.
    pub fn exact(&self) -> impl Iterator<Item = (&str, Namespace)> {
        self.sysctls.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Prefix keys (normalised, without the `*`).
    pub fn prefixes(&self) -> impl Iterator<Item = (&str, Namespace)> {
        self.prefixes.iter().map(|(k, v)| (k.as_str(), *v))
    }

    fn host_check(
        name: &str,
        ns: Namespace,
        host_net: bool,
        host_ipc: bool,
    ) -> Result<(), AdmitError> {
        if (ns == Namespace::Ipc && host_ipc) || (ns == Namespace::Net && host_net) {
            return Err(AdmitError::HostNamespace {
                name: name.to_string(),
                namespace: ns,
            });
        }
        Ok(())
    }

    /// `validateSysctl` for one name: exact key first, then a plain string-prefix match.
    pub fn validate_sysctl(
        &self,
        name: &str,
        host_net: bool,
        host_ipc: bool,
    ) -> Result<(), AdmitError> {
        let name = normalize_name(name);
        if let Some(ns) = self.sysctls.get(name.as_ref()) {
            return Self::host_check(&name, *ns, host_net, host_ipc);
        }
        for (p, ns) in &self.prefixes {
            if name.starts_with(p.as_str()) {
                return Self::host_check(&name, *ns, host_net, host_ipc);
            }
        }
        Err(AdmitError::NotAllowlisted(name.into_owned()))
    }

    /// `Admit`: the first forbidden sysctl (in spec order) rejects the pod. No sysctls admit.
    pub fn admit<'a, I>(&self, names: I, host_net: bool, host_ipc: bool) -> Result<(), AdmitError>
    where
        I: IntoIterator<Item = &'a str>,
    {
        for n in names {
            self.validate_sysctl(n, host_net, host_ipc)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for ok in [
            "kernel.shm_rmid_forced",
            "kernel/shm_rmid_forced",
            "kernel.msgmax",
            "kernel.sem",
            "kernel.msgfoo",
        ] {
            assert!(w.validate_sysctl(ok, false, false).is_ok(), "{ok}");
        }
        assert_eq!(
            w.validate_sysctl("net.ipv4.ip_local_port_range", true, false)
                .unwrap_err()
                .message(),
            r#"forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled"#
        );
        assert!(w
            .validate_sysctl("net.ipv4.ip_local_port_range", false, true)
            .is_ok());
        assert_eq!(
            w.validate_sysctl("kernel/msgmax", false, true)
                .unwrap_err()
                .to_string(),
            r#""kernel.msgmax" not allowed with host IPC enabled"#
        );
        assert_eq!(
            w.validate_sysctl("net/core/somaxconn", false, false)
                .unwrap_err()
                .message(),
            r#"forbidden sysctl: "net.core.somaxconn" not allowlisted"#
        );
        assert!(w
            .validate_sysctl("kernel.shm_rmid_forced", true, false)
            .is_ok());
        let first = w
            .admit(["kernel.sem", "a.b", "c.d"], false, false)
            .unwrap_err();
        assert_eq!(first, AdmitError::NotAllowlisted("a.b".into()));
        assert!(w.admit(std::iter::empty(), true, true).is_ok());
    }

    #[test]
    fn exact_hides_prefixes_and_uts_user_never_host_checked() {
        let w = Allowlist::new(&["kernel.domainname", "user.*", "net.*"]).unwrap();
        assert!(w.validate_sysctl("kernel.domainname", true, true).is_ok());
        assert!(w
            .validate_sysctl("user.max_net_namespaces", true, true)
            .is_ok());
        assert!(w
            .validate_sysctl("net.core.somaxconn", true, false)
            .is_err());
    }
}
