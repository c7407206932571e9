//! The hand-written matchers must accept exactly what upstream's anchored regexes accept.

use kubenode_sysctl::{
    is_valid_sysctl_name, is_valid_sysctl_pattern, SYSCTL_CONTAIN_SLASH_FMT,
    SYSCTL_CONTAIN_SLASH_PATTERN_FMT, SYSCTL_MAX_LENGTH,
};
use proptest::prelude::*;
use regex::Regex;

fn upstream() -> (Regex, Regex) {
    (
        Regex::new(&format!("^{SYSCTL_CONTAIN_SLASH_FMT}$")).unwrap(),
        Regex::new(&format!("^{SYSCTL_CONTAIN_SLASH_PATTERN_FMT}$")).unwrap(),
    )
}

fn reference(re: &Regex, s: &str) -> bool {
    s.len() <= SYSCTL_MAX_LENGTH && re.is_match(s)
}

/// Every string of length ≤ 6 over the characters that matter: 299,593 strings.
#[test]
fn exhaustive_short_strings() {
    let (name_re, pat_re) = upstream();
    let alphabet = ['a', '0', '-', '_', '.', '/', '*', 'A'];
    let mut buf = String::new();
    let mut count = 0u64;
    fn rec(buf: &mut String, depth: usize, alphabet: &[char], f: &mut dyn FnMut(&str)) {
        f(buf);
        if depth == 0 {
            return;
        }
        for &c in alphabet {
            buf.push(c);
            rec(buf, depth - 1, alphabet, f);
            buf.pop();
        }
    }
    rec(&mut buf, 6, &alphabet, &mut |s| {
        count += 1;
        assert_eq!(
            is_valid_sysctl_name(s),
            reference(&name_re, s),
            "name {s:?}"
        );
        assert_eq!(
            is_valid_sysctl_pattern(s),
            reference(&pat_re, s),
            "pattern {s:?}"
        );
    });
    assert_eq!(count, 299_593);
}

fn cases() -> u32 {
    std::env::var("KUBENODE_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// Names built from plausible segments (so that many are valid), with random damage.
fn sysctlish() -> impl Strategy<Value = String> {
    let seg = prop::string::string_regex("[a-z0-9][-_a-z0-9]{0,6}[a-z0-9_*-]?").unwrap();
    let sep = prop::sample::select(vec![".", "/", "..", "*", "", "ä", "A", " "]);
    (
        prop::collection::vec((seg, sep), 1..8),
        prop::bool::ANY,
        0usize..300,
    )
        .prop_map(|(parts, pad, long)| {
            let mut s = String::new();
            for (i, (seg, sep)) in parts.iter().enumerate() {
                s.push_str(seg);
                if i + 1 < parts.len() {
                    s.push_str(sep);
                }
            }
            if pad {
                // Near the 253-byte limit.
                while s.len() < long {
                    s.push_str(".a");
                }
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn agrees_with_upstream_regexes(s in prop_oneof![sysctlish(), "[-_a-z0-9./*A]{0,24}", any::<String>()]) {
        thread_local!(static RE: (Regex, Regex) = upstream());
        RE.with(|(n, p)| {
            prop_assert_eq!(is_valid_sysctl_name(&s), reference(n, &s), "name {:?}", s);
            prop_assert_eq!(is_valid_sysctl_pattern(&s), reference(p, &s), "pattern {:?}", s);
            Ok(())
        })?;
    }
}
