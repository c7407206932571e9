//! Empirical check that sysctls are namespaced on the running kernel: a dedicated thread
//! unshares fresh net, IPC and UTS namespaces, changes each value there, and the calling thread
//! (still in the original namespaces) confirms the host value did not move — restoring it at
//! once if it did. Only names in the net, IPC and UTS tables are written: anything else would
//! change the host's live value (the probe thread shares every other namespace with the host).

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::sync::mpsc;

use crate::apply::{proc_path, read_value, setns_err, writable_name, write_value, ApplyError};
use crate::name::is_valid_sysctl_name;
use crate::namespace::{namespace_of, Namespace, EXACT};
use crate::normalize::normalize_name;
use crate::safe::SAFE_SYSCTLS;

/// What probing one sysctl in throwaway namespaces showed; JavaScript reads each as its name in
/// kebab case (`not-namespaced`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "kebab-case", js_name = "SysctlProbeStatus"))]
pub enum ProbeOutcome {
    /// Changed in the new namespace, host unchanged.
    Isolated,
    /// Changing it in the new namespace changed the host value too (which was restored).
    Leaked,
    /// Not present in the new namespaces.
    Absent,
    /// Present, but no candidate value was accepted (or the value is not numeric).
    Unchangeable,
    /// Outside the net, IPC and UTS namespaces (or in the User namespace): writing it would
    /// change the host, so it is neither read nor written.
    NotNamespaced,
    /// Reading or writing failed.
    Error,
}

/// One sysctl's probe.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlProbeResult"))]
pub struct ProbeResult {
    pub name: String,
    pub namespace: Namespace,
    pub outcome: ProbeOutcome,
    pub host_value: Option<String>,
    /// The value written in the throwaway namespace, as read back there.
    pub probe_value: Option<String>,
    pub detail: Option<String>,
}

/// Safe list, the exact namespace table, and every file under `fs/mqueue`. Callers may add more.
pub fn default_probe_names() -> Vec<String> {
    let mut v: Vec<String> = SAFE_SYSCTLS.iter().map(|s| s.name.to_string()).collect();
    for (n, _) in EXACT {
        if !v.iter().any(|x| x == n) {
            v.push((*n).to_string());
        }
    }
    if let Ok(rd) = std::fs::read_dir("/proc/sys/fs/mqueue") {
        let mut mq: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| format!("fs.mqueue.{}", e.file_name().to_string_lossy()))
            .collect();
        mq.sort();
        v.extend(mq);
    }
    v
}

fn same(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// Values that differ from `current`: one numeric field ±1 (`""` → `"1"`); a text value gets
/// a marker string.
fn candidates(current: &str) -> Vec<String> {
    let Ok(fields) = current
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<Vec<i128>, _>>()
    else {
        return vec!["kubenode-probe".into()];
    };
    if fields.is_empty() {
        return vec!["1".into()];
    }
    let mut out = Vec::new();
    for i in 0..fields.len() {
        for d in [1i128, -1] {
            let mut f = fields.clone();
            if let Some(v) = f.get_mut(i) {
                *v += d;
            }
            out.push(f.iter().map(i128::to_string).collect::<Vec<_>>().join(" "));
        }
    }
    out
}

enum Ask {
    /// Read the host value.
    Read(String),
    /// The probe thread changed this sysctl; compare with the host value and restore it.
    Check(String, String),
}

fn host_side(ask: Ask) -> Result<String, String> {
    match ask {
        Ask::Read(path) => read_value("", &path).map_err(|e| e.to_string()),
        Ask::Check(path, before) => {
            let now = read_value("", &path).map_err(|e| e.to_string())?;
            if !same(&now, &before) {
                write_value("", &path, &before)
                    .map_err(|e| format!("restoring the host value failed: {e}"))?;
            }
            Ok(now)
        }
    }
}

/// Probes `names` (see [`default_probe_names`]). Needs CAP_SYS_ADMIN for `unshare`. Every name
/// is checked before anything is touched: one invalid name fails the whole call.
pub fn probe(names: &[String]) -> Result<Vec<ProbeResult>, ApplyError> {
    if let Some(bad) = names.iter().find(|n| !is_valid_sysctl_name(n)) {
        return Err(ApplyError::InvalidName(bad.clone()));
    }
    let (ask_tx, ask_rx) = mpsc::channel::<Ask>();
    let (ans_tx, ans_rx) = mpsc::channel::<Result<String, String>>();
    let names = names.to_vec();
    let worker = std::thread::Builder::new()
        .name("kubenode-sysctl-probe".into())
        .spawn(move || -> Result<Vec<ProbeResult>, ApplyError> {
            // SAFETY: plain syscall; these flags affect only the calling thread.
            if unsafe {
                libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS)
            } != 0
            {
                let e = std::io::Error::last_os_error();
                return Err(setns_err("net+ipc+uts", "unshare(2)".into(), &e));
            }
            let mut ask = |a: Ask| -> Result<String, String> {
                ask_tx.send(a).map_err(|e| e.to_string())?;
                ans_rx.recv().map_err(|e| e.to_string())?
            };
            Ok(names.iter().map(|n| probe_one(n, &mut ask)).collect())
        })
        .map_err(|e| ApplyError::Thread(format!("spawning the probe thread: {e}")))?;
    // Serve host-side reads until the probe thread hangs up.
    for a in ask_rx {
        if ans_tx.send(host_side(a)).is_err() {
            break;
        }
    }
    worker
        .join()
        .map_err(|_| ApplyError::Thread("the probe thread panicked".into()))?
}

fn probe_one(raw: &str, ask: &mut dyn FnMut(Ask) -> Result<String, String>) -> ProbeResult {
    let mut r = ProbeResult {
        name: normalize_name(raw).into_owned(),
        namespace: namespace_of(&normalize_name(raw)),
        outcome: ProbeOutcome::Error,
        host_value: None,
        probe_value: None,
        detail: None,
    };
    let name = match writable_name(raw) {
        Ok((name, _)) => name,
        Err(e) => {
            r.outcome = ProbeOutcome::NotNamespaced;
            r.detail = Some(e.to_string());
            return r;
        }
    };
    let path = proc_path(&name);
    let original = match read_value(&name, &path) {
        Ok(v) => v,
        Err(ApplyError::Io { message, .. }) if !std::path::Path::new(&path).exists() => {
            r.outcome = ProbeOutcome::Absent;
            r.detail = Some(message);
            return r;
        }
        Err(e) => {
            r.detail = Some(e.to_string());
            return r;
        }
    };
    let host_before = match ask(Ask::Read(path.clone())) {
        Ok(v) => v,
        Err(e) => {
            r.detail = Some(format!("host value: {e}"));
            return r;
        }
    };
    r.host_value = Some(host_before.clone());
    let mut last_err = None;
    for c in candidates(&original) {
        if let Err(e) = write_value(&name, &path, &c) {
            last_err = Some(e.to_string());
            continue;
        }
        let now = match read_value(&name, &path) {
            Ok(v) => v,
            Err(e) => {
                r.detail = Some(e.to_string());
                return r;
            }
        };
        if same(&now, &original) {
            continue;
        }
        r.probe_value = Some(now);
        match ask(Ask::Check(path.clone(), host_before.clone())) {
            Ok(host_after) if same(&host_after, &host_before) => r.outcome = ProbeOutcome::Isolated,
            Ok(host_after) => {
                r.outcome = ProbeOutcome::Leaked;
                r.detail = Some(format!(
                    "host value changed to {host_after:?}; restored to {host_before:?}"
                ));
            }
            Err(e) => r.detail = Some(e),
        }
        return r;
    }
    r.outcome = ProbeOutcome::Unchangeable;
    r.detail = last_err.or_else(|| Some("no candidate value changed it".into()));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_values() {
        assert_eq!(candidates("0"), vec!["1", "-1"]);
        assert_eq!(candidates("1\t0"), vec!["2 0", "0 0", "1 1", "1 -1"]);
        assert_eq!(candidates(""), vec!["1"]);
        assert_eq!(
            candidates("18446744073692774399")[0],
            "18446744073692774400"
        );
        assert_eq!(candidates("(none)"), vec!["kubenode-probe"]);
    }

    #[test]
    fn defaults_cover_tables() {
        let d = default_probe_names();
        assert!(d.iter().any(|n| n == "net.ipv4.tcp_notsent_lowat"));
        assert!(d.iter().any(|n| n == "kernel.sem"));
        assert!(d.iter().any(|n| n == "kernel.domainname"));
    }
}
