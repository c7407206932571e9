//! Sysctl name and pattern syntax (`pkg/apis/core/validation` and `pkg/apis/policy/validation`).
//! Hand-written matchers that accept exactly what the anchored upstream regexes accept; the
//! property tests compare them against the regexes themselves.

/// `SysctlMaxLength`: measured in bytes, as Go's `len()`.
pub const SYSCTL_MAX_LENGTH: usize = 253;

/// `SysctlContainSlashFmt` (names).
pub const SYSCTL_CONTAIN_SLASH_FMT: &str =
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?";

/// `SysctlContainSlashPatternFmt` (kubelet allowlist entries).
pub const SYSCTL_CONTAIN_SLASH_PATTERN_FMT: &str =
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]";

#[inline]
fn is_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

#[inline]
fn is_inner(b: u8) -> bool {
    is_alnum(b) || b == b'-' || b == b'_'
}

/// One segment: `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`.
#[inline]
fn is_segment(s: &[u8]) -> bool {
    match s {
        [] => false,
        [only] => is_alnum(*only),
        [first, mid @ .., last] => {
            is_alnum(*first) && is_alnum(*last) && mid.iter().all(|&b| is_inner(b))
        }
    }
}

/// The last segment of a pattern: `([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`.
#[inline]
fn is_pattern_tail(s: &[u8]) -> bool {
    match s {
        [] => false,
        [only] => is_alnum(*only) || *only == b'*',
        [first, mid @ .., last] => {
            is_alnum(*first)
                && (is_alnum(*last) || *last == b'*')
                && mid.iter().all(|&b| is_inner(b))
        }
    }
}

#[inline]
fn is_sep(b: u8) -> bool {
    b == b'.' || b == b'/'
}

/// `IsValidSysctlName`: at most 253 bytes, segments of [`SYSCTL_CONTAIN_SLASH_FMT`] joined by
/// `.` or `/`.
pub fn is_valid_sysctl_name(name: &str) -> bool {
    if name.len() > SYSCTL_MAX_LENGTH {
        return false;
    }
    name.as_bytes().split(|&b| is_sep(b)).all(is_segment)
}

/// `IsValidSysctlPattern`: like a name, but the last segment may end in `*` or be just `*`.
/// Separators cannot occur in the last segment, so splitting at the last separator is the only
/// way the regex can match.
pub fn is_valid_sysctl_pattern(pattern: &str) -> bool {
    if pattern.len() > SYSCTL_MAX_LENGTH {
        return false;
    }
    let b = pattern.as_bytes();
    match b.iter().rposition(|&c| is_sep(c)) {
        None => is_pattern_tail(b),
        Some(i) => {
            let (head, tail) = (&b[..i], &b[i + 1..]);
            is_pattern_tail(tail) && head.split(|&c| is_sep(c)).all(is_segment)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_upstream_test() {
        for bad in [
            "", "*", "ä", "Abc", "a_", "a.", "a/", "_a", ".a", "/a", "-a", "a*b", "a..b", "a//b",
        ] {
            assert!(!is_valid_sysctl_name(bad), "{bad:?} must be invalid");
        }
        assert!(!is_valid_sysctl_name(&"a".repeat(256)));
        assert!(is_valid_sysctl_name(&"a".repeat(253)));
        assert!(!is_valid_sysctl_name(&"a".repeat(254)));
        for good in [
            "a",
            "a/b/c/d",
            "a/b.c",
            "kernel.shm_rmid_forced",
            "net.ipv4.conf.enp3s0/200.forwarding",
            "net/ipv4/conf/enp3s0.200/forwarding",
            "a-b_c.d",
            "0",
        ] {
            assert!(is_valid_sysctl_name(good), "{good:?} must be valid");
        }
    }

    #[test]
    fn patterns_from_upstream_test() {
        for good in [
            "a", "a.b", "a_b", "a-b", "abc", "abc.def", "a/b/c/d", "a/b.c", "*", "a*", "a.*",
            "a.b*", "a_*", "a-*", "a.b_*", "a/b/*", "a.b/c*", "0*",
        ] {
            assert!(is_valid_sysctl_pattern(good), "{good:?} must be valid");
        }
        for bad in [
            "", "ä", "a_", "_", "__", "_a", "_a._b", "-", ".", "a.", ".a", "a.b.", "a*.b", "a*b",
            "*a", "Abc", "a/", "/a", "a*/b", "**", "a.*.b",
        ] {
            assert!(!is_valid_sysctl_pattern(bad), "{bad:?} must be invalid");
        }
        assert!(!is_valid_sysctl_pattern(&"a".repeat(256)));
        assert!(is_valid_sysctl_pattern(&format!("{}*", "a".repeat(252))));
    }
}
