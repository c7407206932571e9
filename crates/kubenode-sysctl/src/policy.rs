//! The policies of the pod-level sysctl design's SecurityContext enforcement:
//! - alternative 1, [`SysctlNamePolicy`]: a list of names or `*`-suffixed prefixes (`*` allows
//!   everything);
//! - alternative 2, [`SysctlPolicy`]: per name or per-segment wildcard pattern, allowed values,
//!   an integer range, or one range per field; the first matching entry decides.
//!
//! Names are compared in `NormalizeName` form so slash spellings match their dotted twins.
//! Both admit a pod in one call (the first refused sysctl, in spec order, rejects it with a
//! kubelet-style message) and validate it (one API field error per refused sysctl).

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::collections::HashSet;

use crate::normalize::normalize_name;
use crate::policy_value::{IntRange, RuleDetails, ValueRule};
use crate::quote::go_quote;
use crate::validation::{FieldError, FieldErrorType};

/// Field path of a pod's sysctls.
const PATH: &str = "spec.securityContext.sysctls";

/// Kubelet-style text for a name the policy refuses.
pub fn not_allowed_message(name: &str) -> String {
    format!(
        "forbidden sysctl: {} not allowed by policy",
        go_quote(&normalize_name(name))
    )
}

/// Kubelet-style text for a value the policy refuses; `detail` says which rule.
pub fn bad_value_message(name: &str, detail: &str) -> String {
    format!(
        "forbidden sysctl: {} not allowed by policy: value {detail}",
        go_quote(&normalize_name(name))
    )
}

fn forbidden(i: usize, name: &str) -> FieldError {
    FieldError {
        kind: FieldErrorType::Forbidden,
        field: format!("{PATH}[{i}]"),
        bad_value: None,
        detail: format!("sysctl {} is not allowed", go_quote(name)),
    }
}

fn invalid_value(i: usize, value: &str, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorType::Invalid,
        field: format!("{PATH}[{i}].value"),
        bad_value: Some(value.to_string()),
        detail,
    }
}

/// A policy that cannot be compiled; the message names the offending item
/// (`entries[2].fields[0]: min 5 is greater than max 1`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(String);

/// Alternative 1: allowed names and prefixes, normalised; an empty list allows nothing.
#[derive(Debug, Clone, Default)]
pub struct SysctlNamePolicy {
    all: bool,
    /// Exact names in first-seen order, without repeats.
    exact: Vec<String>,
    exact_set: HashSet<String>,
    /// Prefixes without their trailing `*`, in list order.
    prefixes: Vec<String>,
}

/// A [`SysctlNamePolicy`] as compiled, for renderers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "SysctlNamePolicyRules"))]
pub struct NamePolicyRules {
    /// The list holds `*`.
    pub all: bool,
    /// Exact names, normalised, in first-seen order without repeats.
    pub exact: Vec<String>,
    /// Prefixes without their trailing `*`, normalised, in list order.
    pub prefixes: Vec<String>,
}

impl SysctlNamePolicy {
    pub fn new<S: AsRef<str>>(allowed: &[S]) -> Result<Self, PolicyError> {
        let mut p = SysctlNamePolicy::default();
        for (i, a) in allowed.iter().enumerate() {
            let a = a.as_ref();
            if a.is_empty() {
                return Err(PolicyError(format!(
                    "allowed[{i}] must be a non-empty string, got \"\""
                )));
            }
            if a == "*" {
                p.all = true;
            } else if let Some(prefix) = a.strip_suffix('*') {
                p.prefixes.push(normalize_name(prefix).into_owned());
            } else {
                let n = normalize_name(a).into_owned();
                if p.exact_set.insert(n.clone()) {
                    p.exact.push(n);
                }
            }
        }
        Ok(p)
    }

    /// The alpha PodSecurityPolicy annotation form: `kernel.shmmax,kernel.msgmax,fs.mqueue.*`.
    pub fn from_annotation(value: &str) -> Result<Self, PolicyError> {
        if value.is_empty() {
            return Ok(Self::default());
        }
        Self::new(&value.split(',').collect::<Vec<_>>())
    }

    pub fn allows(&self, name: &str) -> bool {
        if self.all {
            return true;
        }
        let n = normalize_name(name);
        self.exact_set.contains(n.as_ref())
            || self.prefixes.iter().any(|p| n.starts_with(p.as_str()))
    }

    /// True when the list holds `*`.
    pub fn allows_all(&self) -> bool {
        self.all
    }

    pub fn exact(&self) -> &[String] {
        &self.exact
    }

    pub fn prefixes(&self) -> &[String] {
        &self.prefixes
    }

    /// What the policy allows, as compiled.
    pub fn rules(&self) -> NamePolicyRules {
        NamePolicyRules {
            all: self.all,
            exact: self.exact.clone(),
            prefixes: self.prefixes.clone(),
        }
    }

    /// The message for the first name (in order) the policy refuses, or `None`.
    pub fn admit<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Option<String> {
        names
            .into_iter()
            .find(|n| !self.allows(n))
            .map(not_allowed_message)
    }

    /// One Forbidden error per name the policy refuses.
    pub fn validate<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<FieldError> {
        names
            .into_iter()
            .enumerate()
            .filter(|(_, n)| !self.allows(n))
            .map(|(i, n)| forbidden(i, n))
            .collect()
    }
}

/// One entry of a SysctlPolicy list as given (before compiling).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "SysctlPolicyEntryInput"))]
pub struct PolicyEntry {
    /// Dot-separated segments, each `[a-z]+[a-z_-0-9]*` or `*` (wildcard for one segment).
    pub name: String,
    pub values: Option<Vec<String>>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    // Named for the typings: `IntRange` is declared in a module read after this one.
    #[cfg_attr(feature = "napi", napi(ts_type = "Array<SysctlPolicyRange>"))]
    pub fields: Option<Vec<IntRange>>,
}

/// A compiled entry: the name pattern split at dots and the value rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledEntry {
    pub segments: Vec<String>,
    pub rule: ValueRule,
}

impl CompiledEntry {
    fn matches(&self, normalized: &str) -> bool {
        let mut segs = normalized.split('.');
        self.segments
            .iter()
            .all(|p| segs.next().is_some_and(|s| p == "*" || p == s))
            && segs.next().is_none()
    }
}

/// A compiled entry as renderers read it: its segments, the rule's bounds and detail texts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlPolicyRule"))]
pub struct PolicyRule {
    pub segments: Vec<String>,
    /// Allowed values, canonical form, first-seen order without repeats.
    pub values: Option<Vec<String>>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    // Named for the typings: both types are declared in a module read after this one.
    #[cfg_attr(feature = "napi", napi(ts_type = "Array<SysctlPolicyRange>"))]
    pub fields: Option<Vec<IntRange>>,
    #[cfg_attr(feature = "napi", napi(ts_type = "SysctlPolicyDetails"))]
    pub details: RuleDetails,
}

impl From<&CompiledEntry> for PolicyRule {
    fn from(e: &CompiledEntry) -> Self {
        let (values, range, fields) = match &e.rule {
            ValueRule::Any => (None, None, None),
            ValueRule::OneOf(v) => (Some(v.clone()), None, None),
            ValueRule::Range(r) => (None, Some(r), None),
            ValueRule::Fields(f) => (None, None, Some(f.clone())),
        };
        PolicyRule {
            segments: e.segments.clone(),
            values,
            min: range.and_then(|r| r.min),
            max: range.and_then(|r| r.max),
            fields,
            details: e.rule.details(),
        }
    }
}

/// A policy entry's name as a regular expression, for the policy file's JSON Schema: dot-separated
/// segments, each [`is_segment`] or `*`.
pub const POLICY_ENTRY_NAME_PATTERN: &str = r"^([a-z]+[a-z0-9_-]*|\*)(\.([a-z]+[a-z0-9_-]*|\*))*$";

/// `[a-z]+[a-z0-9_-]*`.
fn is_segment(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

fn check_range(r: &IntRange, at: &str) -> Result<(), PolicyError> {
    match (r.min, r.max) {
        (Some(lo), Some(hi)) if lo > hi => Err(PolicyError(format!(
            "{at}: min {lo} is greater than max {hi}"
        ))),
        _ => Ok(()),
    }
}

/// `at` names the entry in messages (`entries[3]`).
fn compile(e: &PolicyEntry, at: &str) -> Result<CompiledEntry, PolicyError> {
    let segments: Vec<String> = e.name.split('.').map(str::to_string).collect();
    if segments.iter().any(|s| s != "*" && !is_segment(s)) {
        return Err(PolicyError(format!(
            "{at}.name {}: each segment must match [a-z]+[a-z_-0-9]* or be \"*\"",
            go_quote(&e.name)
        )));
    }
    let range = IntRange {
        min: e.min,
        max: e.max,
    };
    let rules = [e.values.is_some(), range.is_bounded(), e.fields.is_some()];
    if rules.iter().filter(|&&r| r).count() > 1 {
        return Err(PolicyError(format!(
            "{at}: set either values or min/max or fields, not several"
        )));
    }
    check_range(&range, at)?;
    let rule = if let Some(fields) = &e.fields {
        if fields.is_empty() {
            return Err(PolicyError(format!(
                "{at}.fields must be a non-empty array of {{ min?, max? }}"
            )));
        }
        for (j, f) in fields.iter().enumerate() {
            check_range(f, &format!("{at}.fields[{j}]"))?;
        }
        ValueRule::Fields(fields.clone())
    } else if let Some(values) = &e.values {
        ValueRule::one_of(values.iter().map(String::as_str))
    } else if range.is_bounded() {
        ValueRule::Range(range)
    } else {
        ValueRule::Any
    };
    Ok(CompiledEntry { segments, rule })
}

/// JavaScript's `String.prototype.trim` whitespace (the annotation's numbers were read with
/// `Number`, which trims these).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// A number of the annotation form, read as JavaScript's `Number` reads it (decimal with
/// fraction or exponent, or `0x`/`0o`/`0b`), when it is a safe integer. The form's syntax is
/// the core's alone (TypeScript hands the annotation over unparsed); it stays what it was when
/// published, so annotations written then still read the same.
fn annotation_integer(s: &str) -> Option<i64> {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return None;
    }
    let radix = match t.get(..2) {
        Some("0x" | "0X") => Some(16),
        Some("0o" | "0O") => Some(8),
        Some("0b" | "0B") => Some(2),
        _ => None,
    };
    let v: f64 = match radix {
        Some(r) => {
            let digits = &t[2..];
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(r)) {
                return None;
            }
            digits.chars().fold(0f64, |acc, c| {
                acc * f64::from(r) + f64::from(c.to_digit(r).unwrap_or(0))
            })
        }
        None => {
            // Rust also reads `inf`/`nan`; JavaScript does not, and neither is a safe integer.
            let body = t.strip_prefix(['+', '-']).unwrap_or(t);
            if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
                return None;
            }
            t.parse().ok()?
        }
    };
    (v.is_finite() && v.fract() == 0.0 && v.abs() <= crate::policy_value::MAX_MAGNITUDE as f64)
        .then_some(v as i64)
}

fn annotation_entry(item: &str) -> Result<PolicyEntry, PolicyError> {
    let Some((name, spec)) = item.split_once('=') else {
        return Ok(PolicyEntry {
            name: item.to_string(),
            ..PolicyEntry::default()
        });
    };
    let mut entry = PolicyEntry {
        name: name.to_string(),
        ..PolicyEntry::default()
    };
    if let Some(values) = spec.strip_prefix("values:") {
        entry.values = Some(
            values
                .split(' ')
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect(),
        );
        return Ok(entry);
    }
    let quoted = go_quote(item);
    let parts: Vec<&str> = spec.split(':').collect();
    if !parts.len().is_multiple_of(2) {
        return Err(PolicyError(format!(
            "sysctl policy {quoted}: expected key:value pairs"
        )));
    }
    for pair in parts.chunks_exact(2) {
        let (key, num) = (pair[0], pair[1]);
        let Some(n) = annotation_integer(num) else {
            return Err(PolicyError(format!(
                "sysctl policy {quoted}: {key} must be an integer"
            )));
        };
        match key {
            "min" => entry.min = Some(n),
            "max" => entry.max = Some(n),
            _ => {
                return Err(PolicyError(format!(
                    "sysctl policy {quoted}: unknown key {}",
                    go_quote(key)
                )))
            }
        }
    }
    Ok(entry)
}

/// Alternative 2: name patterns with allowed values or integer bounds; first match decides.
#[derive(Debug, Clone, Default)]
pub struct SysctlPolicy {
    entries: Vec<CompiledEntry>,
}

impl SysctlPolicy {
    /// Compiles the entries; the first bad one fails (`entries[i]…`).
    pub fn new(entries: &[PolicyEntry]) -> Result<Self, PolicyError> {
        Self::new_at(entries, "entries")
    }

    /// As `new`, naming the list `path` in messages (`spec.sysctls[i]…` for a policy file).
    pub fn new_at(entries: &[PolicyEntry], path: &str) -> Result<Self, PolicyError> {
        let entries = entries
            .iter()
            .enumerate()
            .map(|(i, e)| compile(e, &format!("{path}[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(SysctlPolicy { entries })
    }

    /// The alpha annotation form:
    /// `kernel.shmmax,kernel.msgmax=max:10:min:1,kernel.msgmni=values:1000 2000 3000`
    /// (`values:` lists space-separated allowed values).
    pub fn from_annotation(value: &str) -> Result<Self, PolicyError> {
        if value.is_empty() {
            return Ok(Self::default());
        }
        let entries = value
            .split(',')
            .map(annotation_entry)
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(&entries)
    }

    /// The compiled entries in order (first match decides).
    pub fn entries(&self) -> &[CompiledEntry] {
        &self.entries
    }

    /// The compiled entries in order, with their detail texts.
    pub fn rules(&self) -> Vec<PolicyRule> {
        self.entries.iter().map(PolicyRule::from).collect()
    }

    fn find(&self, name: &str) -> Option<&CompiledEntry> {
        let n = normalize_name(name);
        self.entries.iter().find(|e| e.matches(&n))
    }

    /// True when an entry matches `name` (its value is then up to the entry's rule).
    pub fn matches(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Why the policy refuses one sysctl: no entry matches its name (`Err(None)`), or its value
    /// breaks the matching entry's rule (`Err(Some(detail))`).
    fn check(&self, name: &str, value: &str) -> Result<(), Option<String>> {
        match self.find(name) {
            None => Err(None),
            Some(e) => e.rule.violation(value).map_or(Ok(()), |d| Err(Some(d))),
        }
    }

    /// The message for the first sysctl (in order) the policy refuses, or `None`.
    pub fn admit<'a>(
        &self,
        sysctls: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<String> {
        sysctls.into_iter().find_map(|(name, value)| {
            self.check(name, value).err().map(|refused| match refused {
                None => not_allowed_message(name),
                Some(detail) => bad_value_message(name, &detail),
            })
        })
    }

    /// Forbidden for names no entry matches; Invalid for values outside the entry's rule.
    pub fn validate<'a>(
        &self,
        sysctls: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<FieldError> {
        sysctls
            .into_iter()
            .enumerate()
            .filter_map(|(i, (name, value))| {
                self.check(name, value).err().map(|refused| match refused {
                    None => forbidden(i, name),
                    Some(detail) => invalid_value(i, value, detail),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_pattern_accepts_the_names_is_segment_accepts() {
        let re = regex::Regex::new(super::POLICY_ENTRY_NAME_PATTERN).unwrap();
        let alphabet = ['a', 'z', '0', '_', '-', '*', '.', 'B'];
        // Every name of up to four characters over an alphabet with each class in it.
        let mut names = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = names
                .iter()
                .flat_map(|n| alphabet.iter().map(move |c| format!("{n}{c}")))
                .collect();
            names.extend(longer);
        }
        names.sort();
        names.dedup();
        for n in names {
            let by_rule = !n.is_empty() && n.split('.').all(|s| s == "*" || super::is_segment(s));
            assert_eq!(re.is_match(&n), by_rule, "{n:?}");
        }
    }

    use super::*;

    fn entry(name: &str) -> PolicyEntry {
        PolicyEntry {
            name: name.into(),
            ..PolicyEntry::default()
        }
    }

    fn err<T: std::fmt::Debug>(r: Result<T, PolicyError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn name_policy_matches_names_and_prefixes() {
        let p = SysctlNamePolicy::new(&["kernel.shmmax", "net/ipv4/*", "kernel.shmmax"]).unwrap();
        assert!(p.allows("kernel/shmmax"));
        assert!(p.allows("net.ipv4.tcp_syncookies"));
        assert!(!p.allows("kernel.sem"));
        assert_eq!(p.exact(), ["kernel.shmmax"]);
        assert_eq!(p.prefixes(), ["net.ipv4."]);
        assert!(SysctlNamePolicy::new(&["*"]).unwrap().allows("anything"));
        assert!(!SysctlNamePolicy::new::<&str>(&[])
            .unwrap()
            .allows("kernel.sem"));
        assert_eq!(
            err(SysctlNamePolicy::new(&["a", ""])),
            r#"allowed[1] must be a non-empty string, got """#
        );
        let a = SysctlNamePolicy::from_annotation("kernel.shmmax,fs.mqueue.*").unwrap();
        assert!(a.allows("fs.mqueue.msg_max") && !a.allows("fs.file-max"));
        assert!(!SysctlNamePolicy::from_annotation("")
            .unwrap()
            .allows("kernel.sem"));
    }

    #[test]
    fn name_policy_rules_are_the_compiled_lists() {
        let p = SysctlNamePolicy::new(&["kernel/shmmax", "net/ipv4/*", "kernel.shmmax"]).unwrap();
        assert_eq!(
            p.rules(),
            NamePolicyRules {
                all: false,
                exact: vec!["kernel.shmmax".into()],
                prefixes: vec!["net.ipv4.".into()],
            }
        );
        assert!(SysctlNamePolicy::new(&["*", "a"]).unwrap().rules().all);
        assert_eq!(
            SysctlNamePolicy::default().rules(),
            NamePolicyRules::default()
        );
    }

    #[test]
    fn name_policy_admits_and_validates() {
        let p = SysctlNamePolicy::new(&["kernel.shm*"]).unwrap();
        assert_eq!(
            p.admit(["kernel.shmmax", "kernel/sem"]).as_deref(),
            Some(r#"forbidden sysctl: "kernel.sem" not allowed by policy"#)
        );
        assert_eq!(p.admit(["kernel.shmmax"]), None);
        let errs = p.validate(["kernel.sem", "kernel.shmall", "net/core/x"]);
        let msgs: Vec<String> = errs.iter().map(FieldError::message).collect();
        assert_eq!(
            msgs,
            [
                r#"spec.securityContext.sysctls[0]: Forbidden: sysctl "kernel.sem" is not allowed"#,
                r#"spec.securityContext.sysctls[2]: Forbidden: sysctl "net/core/x" is not allowed"#,
            ]
        );
        assert_eq!(errs[0].kind.reason(), "FieldValueForbidden");
    }

    #[test]
    fn compile_errors_name_the_entry() {
        assert_eq!(
            err(SysctlPolicy::new(&[
                entry("net.core.somaxconn"),
                entry("net..x")
            ])),
            r#"entries[1].name "net..x": each segment must match [a-z]+[a-z_-0-9]* or be "*""#
        );
        assert_eq!(
            err(SysctlPolicy::new_at(
                &[entry("a"), entry("a.B")],
                "spec.sysctls"
            )),
            r#"spec.sysctls[1].name "a.B": each segment must match [a-z]+[a-z_-0-9]* or be "*""#
        );
        assert!(SysctlPolicy::new(&[entry("9net")]).is_err());
        assert!(SysctlPolicy::new(&[entry("Net")]).is_err());
        assert!(SysctlPolicy::new(&[entry("net.*.x_1-2")]).is_ok());
        let range = |min, max| IntRange { min, max };
        for (e, want) in [
            (
                PolicyEntry {
                    values: Some(vec![]),
                    min: Some(1),
                    ..entry("a")
                },
                "entries[0]: set either values or min/max or fields, not several",
            ),
            (
                PolicyEntry {
                    min: Some(5),
                    max: Some(1),
                    ..entry("a")
                },
                "entries[0]: min 5 is greater than max 1",
            ),
            (
                PolicyEntry {
                    fields: Some(vec![]),
                    ..entry("a")
                },
                "entries[0].fields must be a non-empty array of { min?, max? }",
            ),
            (
                PolicyEntry {
                    fields: Some(vec![range(None, None), range(Some(2), Some(-2))]),
                    ..entry("a")
                },
                "entries[0].fields[1]: min 2 is greater than max -2",
            ),
        ] {
            assert_eq!(err(SysctlPolicy::new(&[e])), want);
        }
    }
    #[test]
    fn first_match_decides() {
        let p = SysctlPolicy::new(&[
            PolicyEntry {
                min: Some(128),
                max: Some(4096),
                ..entry("net.core.somaxconn")
            },
            entry("net.core.*"),
            PolicyEntry {
                values: Some(vec!["1".into()]),
                ..entry("*")
            },
        ])
        .unwrap();
        assert_eq!(p.admit([("net.core.somaxconn", "1024")]), None);
        assert!(p.matches("net/core/x") && p.matches("y") && !p.matches("a.b.c"));
        assert_eq!(
            p.admit([("net/core/somaxconn", "8192")]).as_deref(),
            Some(
                r#"forbidden sysctl: "net.core.somaxconn" not allowed by policy: value must be between 128 and 4096"#
            )
        );
        assert_eq!(p.admit([("net.core.rmem_max", "anything")]), None);
        assert_eq!(p.admit([("", "1")]), None);
        assert_eq!(
            p.admit([("x", "1"), ("kernel.sem", "1")]).as_deref(),
            Some(r#"forbidden sysctl: "kernel.sem" not allowed by policy"#)
        );
        assert_eq!(
            p.admit([("x", "2")]).as_deref(),
            Some(r#"forbidden sysctl: "x" not allowed by policy: value must be one of "1""#)
        );
    }

    #[test]
    fn rules_describe_each_entry_in_order() {
        let bounded = |min, max| IntRange { min, max };
        let policy = SysctlPolicy::new(&[
            entry("kernel.shmmax"),
            PolicyEntry {
                fields: Some(vec![bounded(Some(0), None), bounded(None, None)]),
                ..entry("net.*.x")
            },
        ]);
        let rules = policy.map(|p| p.rules()).unwrap_or_default();
        let fields = ValueRule::Fields(vec![bounded(Some(0), None), bounded(None, None)]);
        assert_eq!(
            rules,
            [
                PolicyRule {
                    segments: vec!["kernel".into(), "shmmax".into()],
                    values: None,
                    min: None,
                    max: None,
                    fields: None,
                    details: RuleDetails::default(),
                },
                PolicyRule {
                    segments: vec!["net".into(), "*".into(), "x".into()],
                    values: None,
                    min: None,
                    max: None,
                    fields: Some(vec![bounded(Some(0), None), bounded(None, None)]),
                    details: fields.details(),
                },
            ]
        );
        let annotated = SysctlPolicy::from_annotation("a.b=min:1,c=values:x  y").unwrap();
        let (range, one_of) = (&annotated.rules()[0], &annotated.rules()[1]);
        assert_eq!(
            (range.min, range.max, range.values.clone()),
            (Some(1), None, None)
        );
        assert_eq!(range.details.range.as_deref(), Some("must be at least 1"));
        assert_eq!(one_of.values, Some(vec!["x".to_string(), "y".to_string()]));
        assert_eq!(one_of.details, ValueRule::one_of(["x", "y"]).details());
    }

    #[test]
    fn validate_reports_each_sysctl() {
        let p = SysctlPolicy::new(&[PolicyEntry {
            fields: Some(vec![
                IntRange {
                    min: Some(1024),
                    max: None,
                },
                IntRange {
                    min: None,
                    max: Some(65535),
                },
            ]),
            ..entry("net.ipv4.ip_local_port_range")
        }])
        .unwrap();
        let msgs: Vec<String> = p
            .validate([
                ("net.ipv4.ip_local_port_range", "1024 65535"),
                ("net.ipv4.ip_local_port_range", "80\t90"),
                ("kernel.sem", ""),
            ])
            .iter()
            .map(FieldError::message)
            .collect();
        assert_eq!(
            msgs,
            [
                r#"spec.securityContext.sysctls[1].value: Invalid value: "80\t90": field 1 must be at least 1024"#,
                r#"spec.securityContext.sysctls[2]: Forbidden: sysctl "kernel.sem" is not allowed"#,
            ]
        );
    }

    #[test]
    fn annotation_form() {
        let p = SysctlPolicy::from_annotation(
            "kernel.shmmax,kernel.msgmax=max:10:min:1,kernel.msgmni=values:1000 2000  3000",
        )
        .unwrap();
        let e = p.entries();
        assert_eq!(e[0].rule, ValueRule::Any);
        assert_eq!(
            e[1].rule,
            ValueRule::Range(IntRange {
                min: Some(1),
                max: Some(10)
            })
        );
        assert_eq!(
            e[2].rule,
            ValueRule::OneOf(vec!["1000".into(), "2000".into(), "3000".into()])
        );
        assert!(SysctlPolicy::from_annotation("")
            .unwrap()
            .entries()
            .is_empty());
        assert_eq!(
            err(SysctlPolicy::from_annotation("a=min")),
            r#"sysctl policy "a=min": expected key:value pairs"#
        );
        assert_eq!(
            err(SysctlPolicy::from_annotation("a=min: ")),
            r#"sysctl policy "a=min: ": min must be an integer"#
        );
        assert_eq!(
            err(SysctlPolicy::from_annotation("a=step:1")),
            r#"sysctl policy "a=step:1": unknown key "step""#
        );
        assert_eq!(
            err(SysctlPolicy::from_annotation("a=min:5:max:1")),
            "entries[0]: min 5 is greater than max 1"
        );
    }

    #[test]
    fn annotation_numbers_read_like_javascript_number() {
        for (s, n) in [
            ("12", 12),
            (" 12\u{a0}", 12),
            ("+5", 5),
            ("-0", 0),
            ("1e3", 1000),
            ("1.0", 1),
            ("5.", 5),
            (".5e1", 5),
            ("0x1F", 31),
            ("0o17", 15),
            ("0B101", 5),
            ("9007199254740991", 9_007_199_254_740_991),
        ] {
            assert_eq!(annotation_integer(s), Some(n), "{s:?}");
        }
        for s in [
            "",
            " ",
            "1.5",
            "abc",
            "inf",
            "Infinity",
            "nan",
            "-0x1",
            "0x",
            "1e400",
            "9007199254740992",
            "1_000",
            "\u{85}1",
        ] {
            assert_eq!(annotation_integer(s), None, "{s:?}");
        }
    }
}
