//! Strict CIDR validation as the API server applies it to `spec.cidrs`
//! (apimachinery `IsValidCIDR`), for clear errors on bad input before a request is made.

use crate::Prefix;

/// Returns the validation messages for `s`; empty when valid.
pub fn validate_cidr(s: &str) -> Vec<String> {
    let p = match Prefix::parse(s) {
        Ok(p) => p,
        Err(_) => {
            return vec![
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)".to_string(),
            ]
        }
    };
    let mut out = Vec::new();
    if p.addr().is_4in6() {
        out.push("must not have an IPv4-mapped IPv6 address".to_string());
    }
    if p.masked() != p {
        out.push("must not have bits set beyond the prefix length".to_string());
    }
    let canonical = p.masked().to_string();
    if out.is_empty() && canonical != s {
        out.push(format!("must be in canonical form ({canonical:?})"));
    }
    out
}
