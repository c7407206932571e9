//! The ServiceCIDR guard: which ServiceCIDRs may be added, as the ServiceCIDR GA release note
//! asks operators to restrict with an admission policy. The rules are decided here; the
//! TypeScript side renders the same rules as a ValidatingAdmissionPolicy, and a differential
//! test holds the two to the same verdicts against a real API server.
//!
//! Rules, for requests by anyone but the API server itself (`system:apiserver`, which creates
//! and upgrades the default ServiceCIDR):
//! - the default ServiceCIDR (`kubernetes`), when protected, cannot be created, deleted or have
//!   its `spec.cidrs` changed;
//! - every CIDR of a created ServiceCIDR (or of an update that changes `spec.cidrs`) lies
//!   inside an allowed prefix of its family;
//! - no such CIDR overlaps a forbidden prefix (e.g. the node or pod networks).
//!
//! Overlap with other ServiceCIDRs is not a rule: the API server allows it by design, and an
//! admission policy sees only the object under review, never the other ServiceCIDRs.

use crate::{validate_cidr, CidrIndex, Family, Prefix};

/// The API server's own user: its loopback client writes the default ServiceCIDR.
pub const API_SERVER_USER: &str = "system:apiserver";
/// Name of the default ServiceCIDR the API server keeps from `--service-cluster-ip-range`.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";
/// Refusal text for the default ServiceCIDR.
pub const DEFAULT_PROTECTED_MESSAGE: &str =
    "the default ServiceCIDR \"kubernetes\" is managed by the API server: only system:apiserver may create or delete it or change its CIDRs";

/// A guard file's content, checked: canonical prefixes, each in its family's list.
#[derive(Debug, Clone)]
pub struct Guard {
    ipv4: Vec<Prefix>,
    ipv6: Vec<Prefix>,
    forbidden: Vec<Prefix>,
    protect_default: bool,
    allowed: CidrIndex,
    forbidden_index: CidrIndex,
}

/// What the request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// One admission request for a ServiceCIDR.
#[derive(Debug, Clone)]
pub struct GuardRequest<'a> {
    pub operation: Operation,
    pub name: &'a str,
    /// `spec.cidrs` of the object (empty for a delete).
    pub cidrs: &'a [String],
    /// `spec.cidrs` of the stored object (update only).
    pub old_cidrs: &'a [String],
    pub username: &'a str,
}

fn check_list(field: &str, list: &[String], family: Option<Family>) -> Result<Vec<Prefix>, String> {
    let mut out = Vec::with_capacity(list.len());
    for (i, s) in list.iter().enumerate() {
        let bad = validate_cidr(s);
        if let Some(m) = bad.first() {
            return Err(format!("{field}[{i}]: {s:?} {m}"));
        }
        let p = Prefix::parse(s).map_err(|e| format!("{field}[{i}]: {e}"))?;
        if let Some(f) = family {
            if p.family() != f {
                return Err(format!("{field}[{i}]: {s} is not an {} prefix", f.label()));
            }
        }
        out.push(p);
    }
    Ok(out)
}

fn index(prefixes: &[Prefix]) -> CidrIndex {
    let mut ix = CidrIndex::new();
    for (i, p) in prefixes.iter().enumerate() {
        ix.upsert(&i.to_string(), &[p.to_string()]);
    }
    ix
}

impl Guard {
    /// Checks a guard file's lists; the error names the entry (`allowed.ipv4[1]: …`).
    pub fn new(
        ipv4: &[String],
        ipv6: &[String],
        forbidden: &[String],
        protect_default: bool,
    ) -> Result<Guard, String> {
        let ipv4 = check_list("allowed.ipv4", ipv4, Some(Family::V4))?;
        let ipv6 = check_list("allowed.ipv6", ipv6, Some(Family::V6))?;
        let forbidden = check_list("forbidden", forbidden, None)?;
        if ipv4.is_empty() && ipv6.is_empty() {
            return Err("allowed: give at least one prefix (allowed.ipv4 or allowed.ipv6)".into());
        }
        let allowed = index(&[ipv4.as_slice(), ipv6.as_slice()].concat());
        let forbidden_index = index(&forbidden);
        Ok(Guard {
            ipv4,
            ipv6,
            forbidden,
            protect_default,
            allowed,
            forbidden_index,
        })
    }

    pub fn allowed(&self, family: Family) -> &[Prefix] {
        match family {
            Family::V4 => &self.ipv4,
            Family::V6 => &self.ipv6,
        }
    }

    pub fn forbidden(&self) -> &[Prefix] {
        &self.forbidden
    }

    pub fn protect_default(&self) -> bool {
        self.protect_default
    }

    /// The refusal of a CIDR outside the allowed prefixes, as the text before and after it.
    pub fn not_allowed_parts(&self, family: Family) -> (String, String) {
        let list: Vec<String> = self.allowed(family).iter().map(|p| p.to_string()).collect();
        let list = if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        };
        (
            "ServiceCIDR ".to_string(),
            format!(
                " is not inside an allowed {} prefix ({list})",
                family.label()
            ),
        )
    }

    /// The refusal of a CIDR overlapping a forbidden prefix: text before the CIDR, between it
    /// and the forbidden prefix, and after.
    pub fn forbidden_parts() -> [&'static str; 3] {
        ["ServiceCIDR ", " overlaps the forbidden prefix ", ""]
    }

    /// None when the request is allowed, else the refusal. A CIDR that does not parse is left
    /// to the API server's validation, which runs before admission.
    pub fn decide(&self, r: &GuardRequest<'_>) -> Option<String> {
        if r.username == API_SERVER_USER {
            return None;
        }
        let changed = match r.operation {
            Operation::Create => true,
            Operation::Update => r.cidrs != r.old_cidrs,
            Operation::Delete => false,
        };
        if self.protect_default
            && r.name == DEFAULT_SERVICE_CIDR
            && (changed || r.operation == Operation::Delete)
        {
            return Some(DEFAULT_PROTECTED_MESSAGE.to_string());
        }
        if !changed {
            return None;
        }
        // The policy's validations run in order; the first refusal is the message.
        for c in r.cidrs {
            let Ok(p) = Prefix::parse(c) else { continue };
            if self.allowed.containing_prefix(&p).is_empty() {
                let (before, after) = self.not_allowed_parts(p.family());
                return Some(format!("{before}{c}{after}"));
            }
        }
        for c in r.cidrs {
            let Ok(p) = Prefix::parse(c) else { continue };
            // Index names are positions in the file: the first in file order is named.
            let first = self
                .forbidden_index
                .overlapping(&p)
                .iter()
                .filter_map(|n| n.parse::<usize>().ok())
                .min();
            if let Some(f) = first.and_then(|i| self.forbidden.get(i)) {
                let [a, b, z] = Self::forbidden_parts();
                return Some(format!("{a}{c}{b}{f}{z}"));
            }
        }
        None
    }
}
