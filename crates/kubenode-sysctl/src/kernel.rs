//! Kernel version as the kubelet reads it: `/proc/sys/kernel/osrelease`, trimmed, parsed like
//! `k8s.io/apimachinery/pkg/util/version.ParseGeneric` (leading dotted numbers, rest ignored).

use std::fmt;
use thiserror::Error;

pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VersionError {
    /// Upstream texts, so callers can match them.
    #[error("could not parse {0} as version")]
    NoMatch(String),
    #[error("illegal version string {0}")]
    TooFewComponents(String),
    #[error("illegal zero-prefixed version component {0} in {1}")]
    ZeroPrefixed(String, String),
    #[error("illegal non-numeric version component {0} in {1}: value out of range")]
    Overflow(String, String),
    #[error("reading {path}: {message}")]
    Read { path: String, message: String },
}

/// A generic (non-semver) version: two or more numeric components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelVersion {
    components: Vec<u64>,
    original: String,
}

impl KernelVersion {
    /// `ParseGeneric`: `^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)*$` with at least two components and no
    /// zero-prefixed first component.
    pub fn parse(s: &str) -> Result<Self, VersionError> {
        let q = crate::quote::go_quote;
        // RE2's `\s` is ASCII `[\t\n\f\r ]`.
        let t = s.trim_start_matches(['\t', '\n', '\x0c', '\r', ' ']);
        let t = t.strip_prefix('v').unwrap_or(t);
        let b = t.as_bytes();
        let mut end = 0;
        let mut components = Vec::new();
        // Take `digits(.digits)*`; a dot not followed by a digit belongs to the ignored rest.
        loop {
            let start = end;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                if components.is_empty() {
                    return Err(VersionError::NoMatch(q(s)));
                }
                break;
            }
            components.push(&t[start..end]);
            if end < b.len() && b[end] == b'.' {
                end += 1;
            } else {
                break;
            }
        }
        if components.len() < 2 {
            return Err(VersionError::TooFewComponents(q(s)));
        }
        let mut nums = Vec::with_capacity(components.len());
        for (i, comp) in components.iter().enumerate() {
            if i == 0 && comp.starts_with('0') && *comp != "0" {
                return Err(VersionError::ZeroPrefixed(q(comp), q(s)));
            }
            let n: u64 = comp
                .parse()
                .map_err(|_| VersionError::Overflow(q(comp), q(s)))?;
            nums.push(n);
        }
        Ok(Self {
            components: nums,
            original: s.to_string(),
        })
    }

    pub fn components(&self) -> &[u64] {
        &self.components
    }

    /// `AtLeast`: numeric, field by field; missing fields count as 0.
    pub fn at_least(&self, min: &[u64]) -> bool {
        let n = self.components.len().max(min.len());
        for i in 0..n {
            let a = self.components.get(i).copied().unwrap_or(0);
            let b = min.get(i).copied().unwrap_or(0);
            if a != b {
                return a > b;
            }
        }
        true
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.components.iter().map(|c| c.to_string()).collect();
        f.write_str(&parts.join("."))
    }
}

/// The running kernel's version, read like `pkg/util/kernel.GetVersion`.
pub fn read_kernel_version() -> Result<KernelVersion, VersionError> {
    let raw = std::fs::read_to_string(OSRELEASE).map_err(|e| VersionError::Read {
        path: OSRELEASE.to_string(),
        message: e.to_string(),
    })?;
    KernelVersion::parse(raw.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_generic() {
        let v = KernelVersion::parse("3.18.0-957.27.2.el7.x86_64").unwrap();
        assert_eq!(v.components(), &[3, 18, 0]);
        assert_eq!(
            KernelVersion::parse("5.15.0-75-generic")
                .unwrap()
                .components(),
            &[5, 15, 0]
        );
        assert_eq!(
            KernelVersion::parse("6.18.44-fc-v657")
                .unwrap()
                .components(),
            &[6, 18, 44]
        );
        assert_eq!(
            KernelVersion::parse("  v4.5").unwrap().components(),
            &[4, 5]
        );
        assert_eq!(KernelVersion::parse("4.5.").unwrap().components(), &[4, 5]);
        assert_eq!(KernelVersion::parse("4.5.x").unwrap().components(), &[4, 5]);
        assert!(matches!(
            KernelVersion::parse("5"),
            Err(VersionError::TooFewComponents(_))
        ));
        assert!(matches!(
            KernelVersion::parse("five.4"),
            Err(VersionError::NoMatch(_))
        ));
        assert!(matches!(
            KernelVersion::parse(""),
            Err(VersionError::NoMatch(_))
        ));
        assert!(matches!(
            KernelVersion::parse("05.4"),
            Err(VersionError::ZeroPrefixed(..))
        ));
        assert!(KernelVersion::parse("5.04").is_ok());
        assert!(matches!(
            KernelVersion::parse("99999999999999999999.1"),
            Err(VersionError::Overflow(..))
        ));
        assert_eq!(
            KernelVersion::parse("x").unwrap_err().to_string(),
            "could not parse \"x\" as version"
        );
    }

    #[test]
    fn at_least() {
        let v = KernelVersion::parse("4.15").unwrap();
        assert!(v.at_least(&[4, 15]));
        assert!(v.at_least(&[4, 6]));
        assert!(!v.at_least(&[4, 16]));
        assert!(!v.at_least(&[4, 15, 1]));
        assert!(KernelVersion::parse("10.0").unwrap().at_least(&[4, 15]));
    }

    #[test]
    fn reads_running_kernel() {
        let v = read_kernel_version().expect("osrelease must parse on Linux");
        assert!(v.components().len() >= 2);
    }
}
