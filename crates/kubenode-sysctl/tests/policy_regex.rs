//! The value matchers must accept exactly what the published regex sources accept (the
//! rendered admission policy's CEL uses those sources), and the canonical form must be the
//! one the rendered `values` alternation matches.

use kubenode_sysctl::{
    canonical_value, integer_fields, integer_fields_source, MAX_MAGNITUDE, SPACE,
};
use proptest::prelude::*;
use regex::Regex;

/// What the rendered CEL accepts: the whole-value regex, then every field within the magnitude.
fn reference(re: &Regex, v: &str) -> Option<Vec<i64>> {
    let caps = re.captures(v)?;
    let out: Vec<i64> = caps
        .iter()
        .skip(1)
        .map(|m| m.and_then(|m| m.as_str().parse::<i64>().ok()))
        .collect::<Option<_>>()?;
    out.iter().all(|n| n.abs() <= MAX_MAGNITUDE).then_some(out)
}

fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("0".to_string()),
            Just("-".to_string()),
            Just(" ".to_string()),
            Just("\t".to_string()),
            Just("\u{a0}".to_string()),
            Just("+".to_string()),
            Just("x".to_string()),
            "[0-9]{1,18}",
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn integer_fields_match_the_regex(v in value(), count in 1usize..4) {
        let re = Regex::new(&integer_fields_source(count)).unwrap();
        prop_assert_eq!(integer_fields(&v, count), reference(&re, &v));
    }

    #[test]
    fn canonical_form_matches_the_space_class(v in value()) {
        let space = Regex::new(&format!("{SPACE}+")).unwrap();
        let edges = Regex::new(&format!("^{SPACE}+|{SPACE}+$")).unwrap();
        let expected = space.replace_all(&edges.replace_all(&v, ""), " ").into_owned();
        prop_assert_eq!(canonical_value(&v), expected);
    }
}
