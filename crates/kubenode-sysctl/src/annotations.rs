//! The alpha annotations of the pod-level sysctl design (v1.4):
//! `security.alpha.kubernetes.io/sysctls: kernel.shm_rmid_forced=1` and
//! `security.alpha.kubernetes.io/unsafe-sysctls: net.ipv4.route.min_pmtu=1000,kernel.msgmax=1 2 3`.
//! Parsing follows upstream's `SysctlsFromPodAnnotation`; a safe sysctl may be listed as
//! unsafe, an unsafe one must be.

use std::collections::HashSet;

use crate::quote::go_quote;
use crate::validation::{validate_sysctls, FieldError, FieldErrorType};

/// Annotation listing safe sysctls (`name=value,…`).
pub const SYSCTLS_ANNOTATION: &str = "security.alpha.kubernetes.io/sysctls";
/// Annotation listing unsafe sysctls (`name=value,…`).
pub const UNSAFE_SYSCTLS_ANNOTATION: &str = "security.alpha.kubernetes.io/unsafe-sysctls";

/// An annotation item not of the form `name=value` (upstream's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AnnotationFormatError(String);

/// `SysctlsFromPodAnnotation`: `""` gives none; each comma item must be exactly `name=value`
/// with a non-empty name.
pub fn parse_sysctl_annotation(
    value: &str,
) -> Result<Vec<(String, String)>, AnnotationFormatError> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(|kv| {
            let mut parts = kv.split('=');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(name), Some(v), None) if !name.is_empty() => {
                    Ok((name.to_string(), v.to_string()))
                }
                _ => Err(AnnotationFormatError(format!(
                    "sysctl {} not of the format sysctl_name=value",
                    go_quote(kv)
                ))),
            }
        })
        .collect()
}

fn key_path(key: &str) -> String {
    format!("metadata.annotations[{key}]")
}

fn invalid(field: String, bad_value: &str, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorType::Invalid,
        field,
        bad_value: Some(bad_value.to_string()),
        detail,
    }
}

/// Both annotations (absent ones as `None`) in the `securityContext.sysctls` form, safe then
/// unsafe, with upstream's field errors: syntax, names, "can not be safe and unsafe", and
/// sysctls `is_safe` refuses under the safe annotation.
pub fn sysctls_from_annotations(
    safe: Option<&str>,
    unsafe_: Option<&str>,
    is_safe: impl Fn(&str) -> bool,
) -> (Vec<(String, String)>, Vec<FieldError>) {
    let mut errors = Vec::new();
    let mut read = |key: &str, raw: Option<&str>| -> Vec<(String, String)> {
        let Some(raw) = raw else {
            return Vec::new();
        };
        match parse_sysctl_annotation(raw) {
            Ok(list) => {
                let names = list.iter().map(|(n, _)| n.as_str());
                errors.extend(validate_sysctls(names, &key_path(key), false, false, false));
                list
            }
            Err(e) => {
                errors.push(invalid(key_path(key), raw, e.to_string()));
                Vec::new()
            }
        }
    };
    let safe = read(SYSCTLS_ANNOTATION, safe);
    let unsafe_ = read(UNSAFE_SYSCTLS_ANNOTATION, unsafe_);
    let unsafe_names: HashSet<&str> = unsafe_.iter().map(|(n, _)| n.as_str()).collect();
    let in_both: Vec<&str> = safe
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| unsafe_names.contains(n))
        .collect();
    if !in_both.is_empty() {
        errors.push(invalid(
            key_path(UNSAFE_SYSCTLS_ANNOTATION),
            &in_both.join(", "),
            "can not be safe and unsafe".to_string(),
        ));
    }
    for (i, (name, _)) in safe.iter().enumerate() {
        if !name.is_empty() && !is_safe(name) {
            errors.push(invalid(
                format!("{}[{i}].name", key_path(SYSCTLS_ANNOTATION)),
                name,
                format!("not a safe sysctl; list it in {UNSAFE_SYSCTLS_ANNOTATION}"),
            ));
        }
    }
    (safe.into_iter().chain(unsafe_).collect(), errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_upstream() {
        assert_eq!(parse_sysctl_annotation(""), Ok(vec![]));
        assert_eq!(
            parse_sysctl_annotation("a.b=1,c=1 2 3,d="),
            Ok(vec![
                ("a.b".into(), "1".into()),
                ("c".into(), "1 2 3".into()),
                ("d".into(), "".into())
            ])
        );
        for bad in ["a", "=1", "a=1=2", "a=1,", ",a=1"] {
            assert!(parse_sysctl_annotation(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_sysctl_annotation("a=1,b\t").unwrap_err().to_string(),
            r#"sysctl "b\t" not of the format sysctl_name=value"#
        );
    }

    #[test]
    fn converts_and_reports_placement() {
        let (sysctls, errors) = sysctls_from_annotations(
            Some("kernel.shm_rmid_forced=1,net.core.somaxconn=1024"),
            Some("net.core.somaxconn=1024,kernel.msgmax=1 2 3"),
            |n| n == "kernel.shm_rmid_forced",
        );
        assert_eq!(sysctls.len(), 4);
        assert_eq!(sysctls[3], ("kernel.msgmax".into(), "1 2 3".into()));
        let msgs: Vec<String> = errors.iter().map(FieldError::message).collect();
        assert_eq!(
            msgs,
            [
                r#"metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls]: Invalid value: "net.core.somaxconn": can not be safe and unsafe"#,
                r#"metadata.annotations[security.alpha.kubernetes.io/sysctls][1].name: Invalid value: "net.core.somaxconn": not a safe sysctl; list it in security.alpha.kubernetes.io/unsafe-sysctls"#,
            ]
        );
        let (sysctls, errors) = sysctls_from_annotations(Some("x"), Some("Bad=1"), |_| false);
        assert_eq!(sysctls, [("Bad".to_string(), "1".to_string())]);
        let msgs: Vec<String> = errors.iter().map(FieldError::message).collect();
        assert_eq!(
            msgs[0],
            r#"metadata.annotations[security.alpha.kubernetes.io/sysctls]: Invalid value: "x": sysctl "x" not of the format sysctl_name=value"#
        );
        assert!(msgs[1].starts_with(
            r#"metadata.annotations[security.alpha.kubernetes.io/unsafe-sysctls][0].name: Invalid value: "Bad": must have at most 253 characters"#
        ));
        assert_eq!(msgs.len(), 2);
    }
}
