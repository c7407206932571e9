//! API-server validation of `spec.securityContext.sysctls` (`validateSysctls` and
//! `ValidateHostSysctl` in `pkg/apis/core/validation`), with `field.Error` texts.

use std::collections::HashSet;

use crate::name::{is_valid_sysctl_name, SYSCTL_CONTAIN_SLASH_FMT, SYSCTL_MAX_LENGTH};
use crate::namespace::{get_namespace, Namespace};
use crate::quote::go_quote;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    Required,
    Invalid,
    Duplicate,
    Forbidden,
}

impl FieldErrorType {
    /// `field.ErrorType` constant name (`FieldValueRequired`, …), as in the Status causes.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::Forbidden => "FieldValueForbidden",
        }
    }

    fn text(self) -> &'static str {
        match self {
            FieldErrorType::Required => "Required value",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Forbidden => "Forbidden",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorType,
    pub field: String,
    /// The offending name; `None` for Required.
    pub bad_value: Option<String>,
    pub detail: String,
}

impl FieldError {
    /// `field.Error.Error()`: `<field>: <type>[: "<value>"][: <detail>]`.
    pub fn message(&self) -> String {
        let mut s = format!("{}: {}", self.field, self.kind.text());
        if let Some(v) = &self.bad_value {
            s.push_str(": ");
            s.push_str(&go_quote(v));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

fn invalid_name_detail() -> String {
    format!("must have at most {SYSCTL_MAX_LENGTH} characters and match regex ^{SYSCTL_CONTAIN_SLASH_FMT}$")
}

/// `validateSysctls`. `path` is the list's field path (`spec.securityContext.sysctls`);
/// `allow_host_namespaced` is `AllowNamespacedSysctlsForHostNetAndHostIPC` (the update ratchet).
pub fn validate_sysctls<'a, I>(
    names: I,
    path: &str,
    host_net: bool,
    host_ipc: bool,
    allow_host_namespaced: bool,
) -> Vec<FieldError>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut errs = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, name) in names.into_iter().enumerate() {
        let field = format!("{path}[{i}].name");
        if name.is_empty() {
            errs.push(FieldError {
                kind: FieldErrorType::Required,
                field: field.clone(),
                bad_value: None,
                detail: String::new(),
            });
        } else if !is_valid_sysctl_name(name) {
            errs.push(FieldError {
                kind: FieldErrorType::Invalid,
                field: field.clone(),
                bad_value: Some(name.to_string()),
                detail: invalid_name_detail(),
            });
        } else if seen.contains(name) {
            errs.push(FieldError {
                kind: FieldErrorType::Duplicate,
                field: field.clone(),
                bad_value: Some(name.to_string()),
                detail: String::new(),
            });
        }
        if !allow_host_namespaced {
            if let Some(e) = validate_host_sysctl(name, &field, host_net, host_ipc) {
                errs.push(e);
            }
        }
        seen.insert(name);
    }
    errs
}

/// `ValidateHostSysctl`: Net sysctls with hostNetwork, IPC sysctls with hostIPC. UTS and User
/// are not checked.
pub fn validate_host_sysctl(
    name: &str,
    field: &str,
    host_net: bool,
    host_ipc: bool,
) -> Option<FieldError> {
    let ns = get_namespace(name).namespace;
    let detail = match ns {
        Namespace::Net if host_net => "may not be specified when 'hostNetwork' is true",
        Namespace::Ipc if host_ipc => "may not be specified when 'hostIPC' is true",
        _ => return None,
    };
    Some(FieldError {
        kind: FieldErrorType::Invalid,
        field: field.to_string(),
        bad_value: Some(name.to_string()),
        detail: detail.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "spec.securityContext.sysctls";

    #[test]
    fn upstream_test_validate_sysctls() {
        let ok = [
            "kernel.shm_rmid_forced",
            "net.ipv4.conf.enp3s0/200.forwarding",
            "net/ipv4/conf/enp3s0.200/forwarding",
            "kernel.msgmax",
        ];
        assert!(validate_sysctls(ok, P, false, false, false).is_empty());

        let e = validate_sysctls(["i..nvalid", "_invalid"], P, false, false, false);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0].message(),
            r#"spec.securityContext.sysctls[0].name: Invalid value: "i..nvalid": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"#
        );

        let e = validate_sysctls(["kernel.shmmax", "kernel.shmmax"], P, false, false, false);
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].message(),
            r#"spec.securityContext.sysctls[1].name: Duplicate value: "kernel.shmmax""#
        );
        assert!(
            validate_sysctls(["kernel.shmmax", "kernel/shmmax"], P, false, false, false).is_empty()
        );

        // Both names of each pair are in the host namespace the pod shares.
        for (names, host_net, host_ipc, index, want) in [
            (
                ["net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies"],
                true,
                false,
                1,
                r#"spec.securityContext.sysctls[1].name: Invalid value: "net.ipv4.tcp_syncookies": may not be specified when 'hostNetwork' is true"#,
            ),
            (
                ["kernel.shmmax", "kernel.shm_rmid_forced"],
                false,
                true,
                0,
                r#"spec.securityContext.sysctls[0].name: Invalid value: "kernel.shmmax": may not be specified when 'hostIPC' is true"#,
            ),
        ] {
            let e = validate_sysctls(names, P, host_net, host_ipc, false);
            assert_eq!(e.len(), 2, "{names:?}");
            assert_eq!(e[index].message(), want);
        }
        assert!(
            validate_sysctls(["net.ipv4.ip_local_port_range"], P, true, false, true).is_empty()
        );
        assert!(validate_sysctls(["kernel.shmmax"], P, false, true, true).is_empty());
    }

    #[test]
    fn required_duplicate_and_host_together() {
        let e = validate_sysctls(
            ["", "net.core.somaxconn", "net.core.somaxconn"],
            P,
            true,
            false,
            false,
        );
        let msgs: Vec<String> = e.iter().map(FieldError::message).collect();
        assert_eq!(
            msgs,
            vec![
                "spec.securityContext.sysctls[0].name: Required value".to_string(),
                r#"spec.securityContext.sysctls[1].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true"#.to_string(),
                r#"spec.securityContext.sysctls[2].name: Duplicate value: "net.core.somaxconn""#.to_string(),
                r#"spec.securityContext.sysctls[2].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true"#.to_string(),
            ]
        );
        // hostNetwork wins over hostIPC only by namespace; UTS/User unchecked.
        assert!(validate_sysctls(
            ["kernel.domainname", "user.max_user_namespaces"],
            P,
            true,
            true,
            false
        )
        .is_empty());
        // Invalid names still get the host check (GetNamespace works on any string).
        assert_eq!(validate_sysctls(["net.A"], P, true, false, false).len(), 2);
    }
}
