//! Value rules of a SysctlPolicy entry (allowed values, an integer range, one range per field
//! of a multi-value sysctl) and the detail texts of their violations.
//!
//! The syntax is also published as regex sources (`SPACE`, `INT_FIELD`) that mean the same in
//! RE2 (CEL's `matches`) as the hand-written matchers here, so a rendered admission policy
//! decides like the node; `tests/policy_regex.rs` checks the equivalence.

#[cfg(feature = "napi")]
use napi_derive::napi;
use std::collections::HashSet;

use crate::quote::go_quote;

/// One whitespace character as the kernel's sysctl parser skips it (ASCII `isspace`).
pub const SPACE: &str = r"[\t\n\v\f\r ]";

/// One integer field: at most 16 significant digits after leading zeros, so every match parses
/// without overflow in CEL's int64 and exactly in a JS number (the magnitude check follows).
pub const INT_FIELD: &str = "-?0*[0-9]{1,16}";

/// Largest magnitude accepted for an integer value (JavaScript's `Number.MAX_SAFE_INTEGER`).
pub const MAX_MAGNITUDE: i64 = 9_007_199_254_740_991;

/// Longest value (in code points, as CEL's `size`) a value rule inspects; longer ones are
/// refused. The kernel reads a sysctl write within one page, and the limit keeps the rendered
/// CEL within the API server's cost budget.
pub const MAX_VALUE_LENGTH: usize = 4096;

/// The value syntax as regex sources RE2 and JavaScript read alike, and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlPolicySyntax"))]
pub struct ValueSyntax {
    /// One kernel whitespace character ([`SPACE`]).
    pub space: String,
    /// One integer field ([`INT_FIELD`]).
    pub int_field: String,
    /// Largest magnitude of an integer value ([`MAX_MAGNITUDE`]).
    pub max_magnitude: i64,
    /// Longest value (code points) a value rule inspects ([`MAX_VALUE_LENGTH`]); u32, as the
    /// limit is one page.
    pub max_value_length: u32,
}

pub fn value_syntax() -> ValueSyntax {
    ValueSyntax {
        space: SPACE.to_string(),
        int_field: INT_FIELD.to_string(),
        max_magnitude: MAX_MAGNITUDE,
        max_value_length: MAX_VALUE_LENGTH as u32,
    }
}

/// Whole-value regex source for `count` whitespace-separated integer fields.
pub fn integer_fields_source(count: usize) -> String {
    let fields = vec![format!("({INT_FIELD})"); count].join(&format!("{SPACE}+"));
    format!("^{SPACE}*{fields}{SPACE}*$")
}

fn is_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ')
}

/// Whether `v` has more than `MAX_VALUE_LENGTH` code points.
pub fn too_long(v: &str) -> bool {
    // A code point takes 1 to 4 bytes: most values are decided by their byte length.
    v.len() > MAX_VALUE_LENGTH
        && (v.len() > 4 * MAX_VALUE_LENGTH || v.chars().count() > MAX_VALUE_LENGTH)
}

/// Leading/trailing whitespace dropped, inner runs folded to one space.
pub fn canonical_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for part in v.split(is_space).filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// One field as `INT_FIELD` matches it (a digit run with at most 16 significant digits), within
/// `MAX_MAGNITUDE`.
fn integer_field(f: &str) -> Option<i64> {
    let digits = f.strip_prefix('-').unwrap_or(f);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // `0*` may take every leading zero but the last digit.
    let zeros = digits
        .bytes()
        .take_while(|&b| b == b'0')
        .count()
        .min(digits.len() - 1);
    if digits.len() - zeros > 16 {
        return None;
    }
    let n: i64 = digits[zeros..].parse().ok()?;
    (n <= MAX_MAGNITUDE).then_some(if f.starts_with('-') { -n } else { n })
}

/// The value's integer fields when it has exactly `count` of them, each within `MAX_MAGNITUDE`
/// (what `integer_fields_source(count)` matches, plus the magnitude check).
pub fn integer_fields(v: &str, count: usize) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(count);
    for f in v.split(is_space).filter(|p| !p.is_empty()) {
        if out.len() == count {
            return None;
        }
        out.push(integer_field(f)?);
    }
    (out.len() == count).then_some(out)
}

/// Inclusive bounds of an integer field; no bound where `None`. JavaScript passes safe
/// integers (its callers check that), which napi reads exactly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "SysctlPolicyRange"))]
pub struct IntRange {
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl IntRange {
    pub fn contains(&self, n: i64) -> bool {
        self.min.is_none_or(|m| n >= m) && self.max.is_none_or(|m| n <= m)
    }

    pub fn is_bounded(&self) -> bool {
        self.min.is_some() || self.max.is_some()
    }

    /// Upstream-style detail for a value outside the range (`must be between 128 and 4096`).
    pub fn detail(&self) -> String {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => format!("must be between {lo} and {hi}"),
            (Some(lo), None) => format!("must be at least {lo}"),
            (None, Some(hi)) => format!("must be at most {hi}"),
            (None, None) => String::new(),
        }
    }
}

/// The detail texts a violation of a rule reports (after `value `), for renderers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlPolicyDetails"))]
pub struct RuleDetails {
    /// For a value longer than `MAX_VALUE_LENGTH` (absent for a name-only rule).
    pub too_long: Option<String>,
    /// For a value outside `values`.
    pub values: Option<String>,
    /// For a value that is not one integer (`min`/`max`) or not `fields.length` integers.
    pub shape: Option<String>,
    /// For an integer outside `min`/`max`.
    pub range: Option<String>,
    /// For each field, the detail when it is out of its range; `""` for an unbounded field.
    pub fields: Option<Vec<String>>,
}

/// What an entry allows for the value. `Any` is a name-only entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRule {
    Any,
    /// Allowed values in canonical form, in first-seen order without repeats.
    OneOf(Vec<String>),
    /// A single integer within the range (at least one bound set).
    Range(IntRange),
    /// One integer per field, each within its range (at least one field).
    Fields(Vec<IntRange>),
}

impl ValueRule {
    /// `values` canonicalised, in first-seen order without repeats.
    pub fn one_of<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut seen = HashSet::new();
        let list = values
            .into_iter()
            .map(canonical_value)
            .filter(|v| seen.insert(v.clone()))
            .collect();
        ValueRule::OneOf(list)
    }

    /// Why `value` breaks the rule (the detail after `value`), or `None` when it complies.
    pub fn violation(&self, value: &str) -> Option<String> {
        if *self == ValueRule::Any {
            return None;
        }
        if too_long(value) {
            return self.too_long_detail();
        }
        match self {
            ValueRule::Any => None,
            ValueRule::OneOf(allowed) => {
                let v = canonical_value(value);
                if allowed.contains(&v) {
                    None
                } else {
                    self.values_detail()
                }
            }
            ValueRule::Fields(ranges) => {
                let Some(got) = integer_fields(value, ranges.len()) else {
                    return self.shape_detail();
                };
                let k = got.iter().zip(ranges).position(|(&n, r)| !r.contains(n))?;
                Some(field_detail(k, &ranges[k]))
            }
            ValueRule::Range(r) => match integer_fields(value, 1) {
                None => self.shape_detail(),
                Some(got) => (!r.contains(got[0])).then(|| r.detail()),
            },
        }
    }

    /// Every detail text the rule can report, each present only where it applies.
    pub fn details(&self) -> RuleDetails {
        RuleDetails {
            too_long: self.too_long_detail(),
            values: self.values_detail(),
            shape: self.shape_detail(),
            range: match self {
                ValueRule::Range(r) => Some(r.detail()),
                _ => None,
            },
            fields: matches!(self, ValueRule::Fields(_)).then(|| self.field_details()),
        }
    }

    /// Detail for a value longer than `MAX_VALUE_LENGTH`; `None` for `Any` (never refused).
    pub fn too_long_detail(&self) -> Option<String> {
        (*self != ValueRule::Any).then(|| format!("must be at most {MAX_VALUE_LENGTH} characters"))
    }

    /// Detail for a value outside the allowed list (canonical values, Go-quoted).
    pub fn values_detail(&self) -> Option<String> {
        let ValueRule::OneOf(allowed) = self else {
            return None;
        };
        let quoted: Vec<String> = allowed.iter().map(|v| go_quote(v)).collect();
        Some(format!("must be one of {}", quoted.join(", ")))
    }

    /// Detail for a value that is not one integer (`Range`) or not one per field (`Fields`).
    pub fn shape_detail(&self) -> Option<String> {
        match self {
            ValueRule::Range(_) => Some("must be an integer".to_string()),
            ValueRule::Fields(r) => Some(format!(
                "must be {} integers separated by whitespace",
                r.len()
            )),
            _ => None,
        }
    }

    /// For `Fields`, each field's detail when out of range (`""` for an unbounded field).
    pub fn field_details(&self) -> Vec<String> {
        let ValueRule::Fields(ranges) = self else {
            return Vec::new();
        };
        ranges
            .iter()
            .enumerate()
            .map(|(k, r)| {
                if r.is_bounded() {
                    field_detail(k, r)
                } else {
                    String::new()
                }
            })
            .collect()
    }
}

/// Detail for field `k` (0-based) outside its range.
fn field_detail(k: usize, r: &IntRange) -> String {
    format!("field {} {}", k + 1, r.detail())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(min: Option<i64>, max: Option<i64>) -> IntRange {
        IntRange { min, max }
    }

    #[test]
    fn canonical_form_uses_kernel_whitespace_only() {
        assert_eq!(canonical_value("  1\t\n2  3 "), "1 2 3");
        assert_eq!(canonical_value(""), "");
        assert_eq!(canonical_value(" \u{b}\u{c} "), "");
        // A no-break space is not kernel whitespace.
        assert_eq!(canonical_value("a\u{a0}b"), "a\u{a0}b");
    }

    #[test]
    fn published_syntax_is_the_matchers_syntax() {
        let s = value_syntax();
        assert_eq!((s.space.as_str(), s.int_field.as_str()), (SPACE, INT_FIELD));
        assert_eq!(s.max_magnitude, 9_007_199_254_740_991);
        assert_eq!(s.max_value_length, 4096);
        assert!(integer_fields_source(1).contains(&s.int_field));
    }

    #[test]
    fn details_are_those_the_rule_can_report() {
        assert_eq!(ValueRule::Any.details(), RuleDetails::default());
        let one_of = ValueRule::one_of(["1", "2"]).details();
        assert_eq!(one_of.values.as_deref(), Some(r#"must be one of "1", "2""#));
        assert_eq!(
            one_of.too_long.as_deref(),
            Some("must be at most 4096 characters")
        );
        assert_eq!(
            (one_of.shape, one_of.range, one_of.fields),
            (None, None, None)
        );
        let int = ValueRule::Range(range(Some(1), None)).details();
        assert_eq!(int.range.as_deref(), Some("must be at least 1"));
        assert_eq!(int.shape.as_deref(), Some("must be an integer"));
        assert_eq!((int.values, int.fields), (None, None));
        let fields = ValueRule::Fields(vec![range(None, None), range(Some(0), Some(9))]).details();
        assert_eq!(fields.fields.map(|f| f.len()), Some(2));
        assert_eq!(
            fields.shape.as_deref(),
            Some("must be 2 integers separated by whitespace")
        );
        assert_eq!((fields.values, fields.range), (None, None));
    }

    #[test]
    fn length_counts_code_points() {
        assert!(!too_long(&"a".repeat(MAX_VALUE_LENGTH)));
        assert!(too_long(&"a".repeat(MAX_VALUE_LENGTH + 1)));
        assert!(!too_long(&"é".repeat(MAX_VALUE_LENGTH)));
        assert!(too_long(&"é".repeat(MAX_VALUE_LENGTH + 1)));
        assert!(!too_long(&"😀".repeat(MAX_VALUE_LENGTH)));
    }

    #[test]
    fn integer_fields_follow_the_regex() {
        assert_eq!(integer_fields(" 12\t-3 ", 2), Some(vec![12, -3]));
        assert_eq!(integer_fields("-0", 1), Some(vec![0]));
        assert_eq!(integer_fields("00000000000000000000001", 1), Some(vec![1]));
        assert_eq!(
            integer_fields("9007199254740991", 1),
            Some(vec![MAX_MAGNITUDE])
        );
        assert_eq!(
            integer_fields("-9007199254740991", 1),
            Some(vec![-MAX_MAGNITUDE])
        );
        assert_eq!(integer_fields("9007199254740992", 1), None);
        assert_eq!(integer_fields("12345678901234567", 1), None);
        assert_eq!(integer_fields("1 2", 1), None);
        assert_eq!(integer_fields("1", 2), None);
        assert_eq!(integer_fields("+1", 1), None);
        assert_eq!(integer_fields("- 1", 1), None);
        assert_eq!(integer_fields("1.0", 1), None);
        assert_eq!(integer_fields("", 1), None);
        assert_eq!(integer_fields("١", 1), None);
    }

    #[test]
    fn range_details() {
        assert_eq!(range(Some(1), Some(2)).detail(), "must be between 1 and 2");
        assert_eq!(range(Some(-1), None).detail(), "must be at least -1");
        assert_eq!(range(None, Some(9)).detail(), "must be at most 9");
    }

    #[test]
    fn violations_name_the_rule() {
        let one_of = ValueRule::one_of(["a  b", "c", "a b"]);
        assert_eq!(one_of, ValueRule::OneOf(vec!["a b".into(), "c".into()]));
        assert_eq!(one_of.violation(" a\tb "), None);
        assert_eq!(
            one_of.violation("d").as_deref(),
            Some(r#"must be one of "a b", "c""#)
        );
        let r = ValueRule::Range(range(Some(128), Some(4096)));
        assert_eq!(r.violation("128"), None);
        assert_eq!(r.violation("x").as_deref(), Some("must be an integer"));
        assert_eq!(
            r.violation("8192").as_deref(),
            Some("must be between 128 and 4096")
        );
        let f = ValueRule::Fields(vec![range(Some(1024), None), range(None, Some(65535))]);
        assert_eq!(f.violation("1024 65535"), None);
        assert_eq!(
            f.violation("1024").as_deref(),
            Some("must be 2 integers separated by whitespace")
        );
        assert_eq!(
            f.violation("80 90").as_deref(),
            Some("field 1 must be at least 1024")
        );
        assert_eq!(
            f.violation("2000 70000").as_deref(),
            Some("field 2 must be at most 65535")
        );
        assert_eq!(
            f.field_details(),
            [
                "field 1 must be at least 1024",
                "field 2 must be at most 65535"
            ]
        );
        let open = ValueRule::Fields(vec![IntRange::default(), range(Some(0), Some(1))]);
        assert_eq!(
            open.field_details(),
            ["", "field 2 must be between 0 and 1"]
        );
        assert_eq!(open.violation("-5 1"), None);
        assert_eq!(ValueRule::Any.too_long_detail(), None);
        assert_eq!(ValueRule::Any.shape_detail(), None);
        let long = "1".repeat(MAX_VALUE_LENGTH + 1);
        assert_eq!(
            r.violation(&long).as_deref(),
            Some("must be at most 4096 characters")
        );
        assert_eq!(ValueRule::Any.violation(&long), None);
    }

    #[test]
    fn values_are_quoted_like_go() {
        let r = ValueRule::one_of(["\u{a0}", "x\"y"]);
        assert_eq!(
            r.violation("z").as_deref(),
            Some(r#"must be one of "\u00a0", "x\"y""#)
        );
    }
}
