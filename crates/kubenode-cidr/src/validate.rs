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

/// The API server's check of a whole `spec.cidrs` (upstream `validateServiceCIDRSpec`): one or
/// two CIDRs, each valid, two only of different families. Messages name the field.
pub fn validate_spec_cidrs<S: AsRef<str>>(cidrs: &[S]) -> Vec<String> {
    if cidrs.is_empty() {
        return vec!["spec.cidrs: Required value: at least one CIDR required".to_string()];
    }
    if cidrs.len() > 2 {
        return vec!["spec.cidrs: Invalid value: may only hold up to 2 values".to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        for m in validate_cidr(c.as_ref()) {
            out.push(format!(
                "spec.cidrs[{i}]: Invalid value: {:?}: {m}",
                c.as_ref()
            ));
        }
    }
    if let [a, b] = cidrs {
        let fa = crate::delete::legacy_family_label(a.as_ref());
        if fa == crate::delete::legacy_family_label(b.as_ref()) && !fa.is_empty() {
            out.push(
                "spec.cidrs: Invalid value: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"
                    .to_string(),
            );
        }
    }
    out
}
