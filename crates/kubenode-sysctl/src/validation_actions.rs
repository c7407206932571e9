//! A ValidatingAdmissionPolicyBinding's `validationActions`, checked as the API server checks
//! them (`validateValidationActions` in `pkg/apis/admissionregistration/validation`), with its
//! `field.Error` texts, so a rendered binding is one the API server accepts.

use std::collections::HashSet;
use std::fmt::Write;

/// The actions the API server knows, in the sorted order its messages list them.
pub const VALIDATION_ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];

/// Go's `json.Marshal` of a string (HTML-safe, as field errors print a non-string value).
fn go_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The API server's errors for `actions` at `field` (e.g. `spec.validationActions`), in its
/// order; empty when the binding would be accepted.
pub fn validation_actions_errors(actions: &[String], field: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !VALIDATION_ACTIONS.contains(&a.as_str()) {
            let supported: Vec<String> = VALIDATION_ACTIONS
                .iter()
                .map(|v| format!("\"{v}\""))
                .collect();
            errs.push(format!(
                "{field}[{i}]: Unsupported value: {}: supported values: {}",
                go_json(a),
                supported.join(", ")
            ));
        }
        if !seen.insert(a) {
            errs.push(format!("{field}[{i}]: Duplicate value: {}", go_json(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        let list: Vec<String> = actions.iter().map(|a| go_json(a)).collect();
        errs.push(format!(
            "{field}: Invalid value: [{}]: must not contain both Deny and Warn (repeating the same \
             validation failure information in the API response and headers serves no purpose)",
            list.join(",")
        ));
    }
    if seen.is_empty() {
        errs.push(format!(
            "{field}: Required value: at least one validation action is required"
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(actions: &[&str]) -> Vec<String> {
        let a: Vec<String> = actions.iter().map(|s| s.to_string()).collect();
        validation_actions_errors(&a, "spec.validationActions")
    }

    // Upstream's TestValidateValidatingAdmissionPolicyBinding cases for validationActions.
    #[test]
    fn upstream_cases() {
        for ok in [
            &["Deny"][..],
            &["Warn"],
            &["Audit"],
            &["Deny", "Audit"],
            &["Warn", "Audit"],
        ] {
            assert_eq!(check(ok), Vec::<String>::new(), "{ok:?}");
        }
        assert_eq!(
            check(&[]),
            ["spec.validationActions: Required value: at least one validation action is required"]
        );
        assert_eq!(
            check(&["illegal"]),
            [
                r#"spec.validationActions[0]: Unsupported value: "illegal": supported values: "Audit", "Deny", "Warn""#
            ]
        );
        assert_eq!(
            check(&["Deny", "Deny"]),
            [r#"spec.validationActions[1]: Duplicate value: "Deny""#]
        );
        assert_eq!(
            check(&["Deny", "Warn"]),
            [
                r#"spec.validationActions: Invalid value: ["Deny","Warn"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"#
            ]
        );
    }

    #[test]
    fn every_error_in_upstream_order() {
        assert_eq!(
            check(&["Warn", "x<y", "Warn", "Deny"]),
            [
                r#"spec.validationActions[1]: Unsupported value: "x\u003cy": supported values: "Audit", "Deny", "Warn""#,
                r#"spec.validationActions[2]: Duplicate value: "Warn""#,
                r#"spec.validationActions: Invalid value: ["Warn","x\u003cy","Warn","Deny"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"#,
            ]
        );
    }
}
