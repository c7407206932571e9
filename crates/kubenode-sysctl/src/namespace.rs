//! Kernel namespace of a sysctl (component-helpers `namespace.go`): an exact-name table, then a
//! prefix table where a key matches names starting with `<key>.`. The tables grew in v1.37
//! (`kernel.domainname`, `user.*`); a release's view drops the keys it does not know yet.

use crate::k8s_version::KubernetesVersion;
use crate::normalize::normalize_name;
use crate::string_enum::string_enum;
#[cfg(feature = "napi")]
use napi_derive::napi;

string_enum! {
    #[doc = "The kernel namespace a sysctl belongs to, as upstream names it (the string appears"]
    #[doc = "verbatim in kubelet messages); `\"\"` when not namespaced."]
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Namespace as "SysctlNamespace" {
        Ipc = "IPC",
        Net = "Net",
        Uts = "UTS",
        User = "User",
        Unknown = "",
    }
}

/// `namespaces` (exact names). `kernel.shm` and `kernel.msg` exist so that `kernel.shm*` and
/// `kernel.msg*` resolve.
pub const EXACT: &[(&str, Namespace)] = &[
    ("kernel.domainname", Namespace::Uts),
    ("kernel.sem", Namespace::Ipc),
    ("kernel.shmall", Namespace::Ipc),
    ("kernel.shmmax", Namespace::Ipc),
    ("kernel.shmmni", Namespace::Ipc),
    ("kernel.shm_rmid_forced", Namespace::Ipc),
    ("kernel.shm", Namespace::Ipc),
    ("kernel.msgmax", Namespace::Ipc),
    ("kernel.msgmnb", Namespace::Ipc),
    ("kernel.msgmni", Namespace::Ipc),
    ("kernel.msg", Namespace::Ipc),
];

/// `prefixNamespaces`: a name matches when it starts with the key plus a dot.
pub const PREFIXES: &[(&str, Namespace)] = &[
    ("net", Namespace::Net),
    ("fs.mqueue", Namespace::Ipc),
    ("user", Namespace::User),
];

/// Keys of [`EXACT`] and [`PREFIXES`] added after the oldest supported release, with the minor
/// of the release that added them (component-helpers v0.37: the UTS and User namespaces).
pub const ADDED: &[(&str, u32)] = &[("kernel.domainname", 37), ("user", 37)];

/// The table key `name` falls under and its namespace, in the newest tables.
fn lookup(name: &str) -> Option<(&'static str, Namespace)> {
    if let Some((key, ns)) = EXACT.iter().find(|(k, _)| *k == name) {
        return Some((key, *ns));
    }
    PREFIXES
        .iter()
        .find(|(key, _)| {
            name.len() > key.len() && name.starts_with(key) && name.as_bytes()[key.len()] == b'.'
        })
        .map(|(key, ns)| (*key, *ns))
}

/// Whether release `k8s` knows table key `key`.
fn known_in(key: &str, k8s: KubernetesVersion) -> bool {
    ADDED
        .iter()
        .find(|(k, _)| *k == key)
        .is_none_or(|(_, since)| *since <= k8s.minor())
}

/// `namespaceOf` of the newest release: no normalisation, no `*` handling.
pub fn namespace_of(name: &str) -> Namespace {
    namespace_of_at(name, KubernetesVersion::NEWEST)
}

/// `namespaceOf` of release `k8s`: a key that release lacks leaves the name unknown (an exact
/// key of a later release does not fall back to a prefix: none overlap).
pub fn namespace_of_at(name: &str, k8s: KubernetesVersion) -> Namespace {
    match lookup(name) {
        Some((key, ns)) if known_in(key, k8s) => ns,
        _ => Namespace::Unknown,
    }
}

/// What `GetNamespace` returns for a name or pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlNamespaceInfo"))]
pub struct NamespaceInfo {
    pub namespace: Namespace,
    /// Normalised, cut before the first `*`.
    pub name: String,
    /// The name had a `*` (it is a prefix).
    pub prefixed: bool,
}

/// `GetNamespace` of the newest release: normalise, cut at the first `*` (marking the result as a
/// prefix), classify. The cut keeps a trailing dot: `net.ipv6.neigh.*` gives `net.ipv6.neigh.`.
pub fn get_namespace(name: &str) -> NamespaceInfo {
    get_namespace_at(name, KubernetesVersion::NEWEST)
}

/// `GetNamespace` of release `k8s`.
pub fn get_namespace_at(name: &str, k8s: KubernetesVersion) -> NamespaceInfo {
    let normalized = normalize_name(name);
    let (key, prefixed) = match normalized.find('*') {
        Some(i) => (&normalized[..i], true),
        None => (&normalized[..], false),
    };
    NamespaceInfo {
        namespace: namespace_of_at(key, k8s),
        name: key.to_string(),
        prefixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_of_upstream() {
        assert_eq!(namespace_of("kernel.shm_rmid_forced"), Namespace::Ipc);
        assert_eq!(namespace_of("net.a.b.c"), Namespace::Net);
        assert_eq!(namespace_of("fs.mqueue.msg_max"), Namespace::Ipc);
        assert_eq!(namespace_of("user.max_user_namespaces"), Namespace::User);
        assert_eq!(namespace_of("kernel.domainname"), Namespace::Uts);
        assert_eq!(namespace_of("kernel.hostname"), Namespace::Unknown);
        assert_eq!(namespace_of("kernel.shmfoo"), Namespace::Unknown);
        assert_eq!(namespace_of("net"), Namespace::Unknown);
        assert_eq!(namespace_of("net."), Namespace::Net);
        assert_eq!(namespace_of("vm.max_map_count"), Namespace::Unknown);
    }

    /// component-helpers `TestNamespacedOf`, v0.37.2 and v0.36.3 tables.
    #[test]
    fn namespace_of_by_release() {
        let v136 = KubernetesVersion::parse("v1.36").unwrap();
        let v137 = KubernetesVersion::parse("v1.37").unwrap();
        for (name, at137, at136) in [
            ("kernel.shm_rmid_forced", Namespace::Ipc, Namespace::Ipc),
            ("net.a.b.c", Namespace::Net, Namespace::Net),
            ("fs.mqueue.a.b.c", Namespace::Ipc, Namespace::Ipc),
            ("kernel.domainname", Namespace::Uts, Namespace::Unknown),
            (
                "user.max_user_namespaces",
                Namespace::User,
                Namespace::Unknown,
            ),
            ("foo", Namespace::Unknown, Namespace::Unknown),
        ] {
            assert_eq!(namespace_of_at(name, v137), at137, "{name} v1.37");
            assert_eq!(namespace_of_at(name, v136), at136, "{name} v1.36");
            assert_eq!(namespace_of(name), at137, "{name} default");
        }
        assert_eq!(
            get_namespace_at("user.*", v136).namespace,
            Namespace::Unknown
        );
        assert_eq!(get_namespace_at("user.*", v137).namespace, Namespace::User);
        assert_eq!(
            get_namespace_at("kernel/domainname", v136).name,
            "kernel.domainname"
        );
    }

    #[test]
    fn get_namespace_consequences() {
        let g = |s: &str| {
            let i = get_namespace(s);
            (i.namespace, i.name, i.prefixed)
        };
        assert_eq!(g("net.*"), (Namespace::Net, "net.".into(), true));
        assert_eq!(g("net*"), (Namespace::Unknown, "net".into(), true));
        assert_eq!(g("*"), (Namespace::Unknown, "".into(), true));
        assert_eq!(g("fs.mqueue.*").0, Namespace::Ipc);
        assert_eq!(g("fs.mqueue*").0, Namespace::Unknown);
        assert_eq!(
            g("kernel.shm*"),
            (Namespace::Ipc, "kernel.shm".into(), true)
        );
        assert_eq!(g("kernel.msg*").0, Namespace::Ipc);
        assert_eq!(g("kernel.shm_rmid*").0, Namespace::Unknown);
        assert_eq!(g("kernel.*").0, Namespace::Unknown);
        assert_eq!(g("net.ipv6.neigh.*").1, "net.ipv6.neigh.");
        assert_eq!(
            g("net/ipv4/conf/eno2.100/*"),
            (Namespace::Net, "net.ipv4.conf.eno2/100.".into(), true)
        );
        assert_eq!(
            g("kernel/sem"),
            (Namespace::Ipc, "kernel.sem".into(), false)
        );
        assert_eq!(g("fs.inotify.*").1, "fs.inotify.");
    }
}
