//! Checked conversions of JavaScript values: JS has only doubles, so every index, size and ID
//! is validated here before it reaches a core crate; and the Kubernetes release the sysctl and
//! conntrack rules take.

use kubenode_bitmap::JsNumber;
use kubenode_sysctl::{KubernetesVersion, KubernetesVersionError};

use crate::errors::{err, ErrorCode, ErrorKind, NativeError, Result};

/// The Kubernetes release whose rules to apply (default: the newest kubenode knows). One it has
/// no rules for is `Unsupported`, a malformed one `Parse`, both of kind `kubernetes-version`.
pub fn k8s_version(v: Option<String>) -> Result<KubernetesVersion> {
    match v {
        None => Ok(KubernetesVersion::default()),
        Some(v) => KubernetesVersion::parse(&v).map_err(|e| {
            let code = match e {
                KubernetesVersionError::Unsupported { .. } => ErrorCode::Unsupported,
                _ => ErrorCode::Parse,
            };
            NativeError::new(code, ErrorKind::KubernetesVersion, e)
        }),
    }
}

/// A non-negative integer no larger than `limit`.
pub fn index(what: &str, v: f64, limit: u64) -> Result<u64> {
    ranged(what, v, 0, limit)
}

/// An integer in `[min, max]`. JS passes every number as a double, and napi would truncate one
/// given for a `u32` without a word, so such numbers come in as `f64` and are checked here;
/// the value in the message reads as JS prints it.
pub fn ranged(what: &str, v: f64, min: u64, max: u64) -> Result<u64> {
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(err(
            ErrorCode::InvalidArg,
            format!("{what} must be an integer, got {}", JsNumber(v)),
        ));
    }
    if v < min as f64 || v > max as f64 {
        return Err(err(
            ErrorCode::OutOfRange,
            format!("{what} must be in [{min}, {max}], got {}", JsNumber(v)),
        ));
    }
    Ok(v as u64)
}

/// A 32-bit number (a host ID, a count of IDs, a pid): an integer in `[min, 2^32 - 1]`.
pub fn uint32(what: &str, v: f64, min: u32) -> Result<u32> {
    // In range by the check, so the conversion cannot fail.
    Ok(u32::try_from(ranged(what, v, min.into(), u32::MAX.into())?).unwrap_or(u32::MAX))
}

/// Any integer (sign kept), for upstream calls whose error text includes a negative value.
pub fn integer(what: &str, v: f64) -> Result<i64> {
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(err(
            ErrorCode::InvalidArg,
            format!("{what} must be an integer, got {}", JsNumber(v)),
        ));
    }
    if v.abs() > 9_007_199_254_740_991.0 {
        return Err(err(
            ErrorCode::InvalidArg,
            format!("{what} must be a safe integer, got {}", JsNumber(v)),
        ));
    }
    Ok(v as i64)
}
