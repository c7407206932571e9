//! The Kubernetes release a decision is made for. The kubelet's safe sysctl list changes between
//! releases (v1.37 added two rows), so a node on v1.36 must be judged with v1.36's list; the
//! Pod Security baseline takes its own policy version (`latest` or `v1.<minor>`).

use std::fmt;
use thiserror::Error;

use crate::kernel::KernelVersion;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KubernetesVersionError {
    #[error("Kubernetes version {0}: {1}")]
    Parse(String, crate::kernel::VersionError),
    #[error("Kubernetes version {0} is not a v1 release")]
    NotV1(String),
    #[error("Kubernetes version {given} is not supported: kubenode has the tables of v1.{oldest} to v1.{newest}")]
    Unsupported {
        given: String,
        oldest: u32,
        newest: u32,
    },
    #[error("policy version must be \"latest\" or \"v1.<minor>\", got {0}")]
    Policy(String),
}

/// A supported Kubernetes minor release (`v1.<minor>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubernetesVersion {
    minor: u32,
}

impl KubernetesVersion {
    /// Oldest release whose tables kubenode carries.
    pub const OLDEST: Self = Self { minor: 36 };
    /// Newest release whose tables kubenode carries; the default.
    pub const NEWEST: Self = Self { minor: 37 };

    /// `v1.36`, `1.36`, `v1.36.3` or `v1.37.0-alpha.1` (patch and pre-release are ignored:
    /// the tables change only between minor releases).
    pub fn parse(s: &str) -> Result<Self, KubernetesVersionError> {
        let q = crate::quote::go_quote;
        let v = KernelVersion::parse(s).map_err(|e| KubernetesVersionError::Parse(q(s), e))?;
        let c = v.components();
        if c[0] != 1 {
            return Err(KubernetesVersionError::NotV1(q(s)));
        }
        let minor = u32::try_from(c[1]).unwrap_or(u32::MAX);
        if !(Self::OLDEST.minor..=Self::NEWEST.minor).contains(&minor) {
            return Err(KubernetesVersionError::Unsupported {
                given: q(s),
                oldest: Self::OLDEST.minor,
                newest: Self::NEWEST.minor,
            });
        }
        Ok(Self { minor })
    }

    pub fn minor(self) -> u32 {
        self.minor
    }
}

impl Default for KubernetesVersion {
    fn default() -> Self {
        Self::NEWEST
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v1.{}", self.minor)
    }
}

/// A Pod Security policy version: `latest` (`None`) or `v1.<minor>` exactly, as
/// `api.ParseVersion` accepts.
pub fn parse_policy_version(s: &str) -> Result<Option<u32>, KubernetesVersionError> {
    if s == "latest" {
        return Ok(None);
    }
    let bad = || KubernetesVersionError::Policy(crate::quote::go_quote(s));
    let minor = s.strip_prefix("v1.").ok_or_else(bad)?;
    let canonical = minor == "0" || (!minor.starts_with('0') && !minor.is_empty());
    if !canonical || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    minor.parse().map(Some).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        assert_eq!(KubernetesVersion::parse("v1.36").unwrap().minor(), 36);
        assert_eq!(KubernetesVersion::parse("1.37").unwrap().minor(), 37);
        assert_eq!(KubernetesVersion::parse("v1.36.3").unwrap().minor(), 36);
        assert_eq!(
            KubernetesVersion::parse("v1.37.0-alpha.1").unwrap().minor(),
            37
        );
        assert_eq!(KubernetesVersion::default().to_string(), "v1.37");
        assert_eq!(
            KubernetesVersion::parse("v1.38").unwrap_err().to_string(),
            "Kubernetes version \"v1.38\" is not supported: kubenode has the tables of v1.36 to v1.37"
        );
        assert!(matches!(
            KubernetesVersion::parse("v1.35"),
            Err(KubernetesVersionError::Unsupported { .. })
        ));
        assert!(matches!(
            KubernetesVersion::parse("v2.0"),
            Err(KubernetesVersionError::NotV1(_))
        ));
        assert_eq!(
            KubernetesVersion::parse("latest").unwrap_err().to_string(),
            "Kubernetes version \"latest\": could not parse \"latest\" as version"
        );
        assert!(KubernetesVersion::parse("v1").is_err());
        assert!(KubernetesVersion::parse("v1.99999999999999999999").is_err());
    }

    #[test]
    fn policy() {
        assert_eq!(parse_policy_version("latest"), Ok(None));
        assert_eq!(parse_policy_version("v1.0"), Ok(Some(0)));
        assert_eq!(parse_policy_version("v1.36"), Ok(Some(36)));
        for bad in ["v1.036", "1.36", "v1.", "v2.0", "v1.36.1", "v1.x", "Latest"] {
            assert!(parse_policy_version(bad).is_err(), "{bad}");
        }
    }
}
