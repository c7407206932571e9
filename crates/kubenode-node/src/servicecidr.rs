//! Binding for `kubenode-cidr`: the ServiceCIDR index and the upstream helper functions.

use kubenode_cidr::{
    broadcast_address, ip_to_addr, prefix_contains_ip, scan_matches, validate_cidr, Addr,
    CidrError, CidrIndex, DeleteCheck, Family, OrphanScan, Prefix, Query,
};
use napi::Env;
use napi_derive::napi;

use crate::errors::{err, throwing, ErrorCode, NativeError, Result};

fn to_js(e: CidrError) -> NativeError {
    err(ErrorCode::Parse, e)
}

fn prefix(s: &str) -> Result<Prefix> {
    Prefix::parse(s).map_err(to_js)
}

fn addr(s: &str) -> Result<Addr> {
    Addr::parse(s).map_err(to_js)
}

/// An IP family, as Kubernetes spells it.
#[napi(string_enum)]
pub enum IpFamily {
    #[napi(value = "IPv4")]
    V4,
    #[napi(value = "IPv6")]
    V6,
}

impl From<Family> for IpFamily {
    fn from(f: Family) -> Self {
        match f {
            Family::V4 => Self::V4,
            Family::V6 => Self::V6,
        }
    }
}

/// Upstream `canDeleteCIDR`'s verdict.
#[napi(string_enum)]
pub enum ServiceCidrDeleteOutcome {
    #[napi(value = "containedInOther")]
    ContainedInOther,
    #[napi(value = "blocked")]
    Blocked,
    #[napi(value = "noOrphans")]
    NoOrphans,
}

#[napi(object)]
pub struct ServiceCidrPrefixInfo {
    /// An IPv4-mapped IPv6 prefix is IPv6, as in Go's netip.
    pub family: IpFamily,
    pub bits: u32,
    /// The address as written (host bits kept).
    pub address: String,
    /// The prefix with host bits cleared.
    pub masked: String,
    pub ipv4_mapped: bool,
}

#[napi]
pub fn servicecidr_parse_prefix(env: Env, cidr: String) -> napi::Result<ServiceCidrPrefixInfo> {
    throwing(&env, || {
        let p = prefix(&cidr)?;
        Ok(ServiceCidrPrefixInfo {
            family: p.family().into(),
            bits: u32::from(p.bits()),
            address: p.addr().to_string(),
            masked: p.masked().to_string(),
            ipv4_mapped: p.addr().is_4in6(),
        })
    })
}

#[napi]
pub fn servicecidr_validate(cidr: String) -> Vec<String> {
    validate_cidr(&cidr)
}

/// The API server's check of a whole `spec.cidrs`; empty when valid.
#[napi]
pub fn servicecidr_validate_spec(cidrs: Vec<String>) -> Vec<String> {
    kubenode_cidr::validate_spec_cidrs(&cidrs)
}

#[napi]
pub fn servicecidr_prefix_contains_ip(env: Env, cidr: String, ip: String) -> napi::Result<bool> {
    throwing(&env, || Ok(prefix_contains_ip(&prefix(&cidr)?, addr(&ip)?)))
}

#[napi]
pub fn servicecidr_broadcast_address(env: Env, cidr: String) -> napi::Result<String> {
    throwing(&env, || Ok(broadcast_address(&prefix(&cidr)?).to_string()))
}

#[napi]
pub fn servicecidr_ip_to_addr(ip: String) -> Option<String> {
    ip_to_addr(&ip).map(|a| a.to_string())
}

/// Indices of the CIDR lists that match `query` under `kind` (`overlaps`, `containsPrefix` or
/// `containsAddress`): upstream's linear scan, one crossing for the whole list.
#[napi]
pub fn servicecidr_match(
    env: Env,
    kind: String,
    lists: Vec<Vec<String>>,
    query: String,
) -> napi::Result<Vec<u32>> {
    throwing(&env, || {
        let q = match kind.as_str() {
            "overlaps" => Query::Overlaps(prefix(&query)?),
            "containsPrefix" => Query::ContainsPrefix(prefix(&query)?),
            "containsAddress" => Query::ContainsAddress(addr(&query)?),
            other => {
                return Err(err(
                    ErrorCode::InvalidArg,
                    format!("unknown match kind {other:?}"),
                ))
            }
        };
        scan_matches(&lists, &q)
            .into_iter()
            .map(|i| {
                u32::try_from(i).map_err(|_| err(ErrorCode::OutOfRange, "too many ServiceCIDRs"))
            })
            .collect()
    })
}

#[napi(object)]
pub struct ServiceCidrEntry {
    pub name: String,
    pub cidrs: Vec<String>,
}

#[napi(object)]
pub struct ServiceCidrDeleteCheck {
    pub outcome: ServiceCidrDeleteOutcome,
    /// The IPAddress that blocks the deletion (`blocked` only).
    pub ip: Option<String>,
    /// IPAddress names that are not addresses; skipped.
    pub unparsable: Vec<String>,
}

#[napi(js_name = "ServiceCidrIndex")]
pub struct JsServiceCidrIndex {
    inner: CidrIndex,
}

#[napi]
impl JsServiceCidrIndex {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self {
            inner: CidrIndex::new(),
        }
    }

    /// Sets the CIDRs of `name`; returns the CIDRs skipped as unparsable.
    #[napi]
    pub fn upsert(&mut self, name: String, cidrs: Vec<String>) -> Vec<String> {
        self.inner.upsert(&name, &cidrs)
    }

    /// Bulk load in one crossing; returns how many CIDRs were skipped as unparsable.
    #[napi]
    pub fn upsert_many(&mut self, entries: Vec<ServiceCidrEntry>) -> u32 {
        let mut skipped = 0u32;
        for e in entries {
            skipped = skipped.saturating_add(self.inner.upsert(&e.name, &e.cidrs).len() as u32);
        }
        skipped
    }

    #[napi]
    pub fn remove(&mut self, name: String) -> bool {
        self.inner.remove(&name)
    }

    #[napi]
    pub fn has(&self, name: String) -> bool {
        self.inner.has(&name)
    }

    #[napi(getter)]
    pub fn size(&self) -> u32 {
        self.inner.len() as u32
    }

    #[napi(getter)]
    pub fn node_count(&self) -> u32 {
        self.inner.node_count() as u32
    }

    #[napi]
    pub fn containing(&self, env: Env, ip: String) -> napi::Result<Vec<String>> {
        throwing(&env, || Ok(self.inner.containing(addr(&ip)?)))
    }

    #[napi]
    pub fn containing_prefix(&self, env: Env, cidr: String) -> napi::Result<Vec<String>> {
        throwing(&env, || Ok(self.inner.containing_prefix(&prefix(&cidr)?)))
    }

    #[napi]
    pub fn overlapping(&self, env: Env, cidr: String) -> napi::Result<Vec<String>> {
        throwing(&env, || Ok(self.inner.overlapping(&prefix(&cidr)?)))
    }

    /// Upstream `canDeleteCIDR` over the allocator-managed IPAddresses (`ips[i]` with family
    /// label `families[i]`, null when the label is absent).
    #[napi]
    pub fn can_delete(
        &self,
        env: Env,
        name: String,
        cidrs: Vec<String>,
        ips: Vec<String>,
        families: Vec<Option<String>>,
    ) -> napi::Result<ServiceCidrDeleteCheck> {
        throwing(&env, || {
            let scan = orphan_scan(&ips, &families)?;
            let mut unparsable = Vec::new();
            let (outcome, ip) = match self.inner.can_delete(&name, &cidrs, &scan, &mut unparsable) {
                DeleteCheck::ContainedInOther => (ServiceCidrDeleteOutcome::ContainedInOther, None),
                DeleteCheck::BlockedBy { ip } => (ServiceCidrDeleteOutcome::Blocked, Some(ip)),
                DeleteCheck::NoOrphans => (ServiceCidrDeleteOutcome::NoOrphans, None),
            };
            Ok(ServiceCidrDeleteCheck {
                outcome,
                ip,
                unparsable,
            })
        })
    }

    /// Every IPAddress `canDelete` looks at that lies inside `name`, with the other ServiceCIDRs
    /// containing each (empty: it blocks the deletion).
    #[napi]
    pub fn holders(
        &self,
        env: Env,
        name: String,
        cidrs: Vec<String>,
        ips: Vec<String>,
        families: Vec<Option<String>>,
    ) -> napi::Result<ServiceCidrHolders> {
        throwing(&env, || {
            let scan = orphan_scan(&ips, &families)?;
            let mut unparsable = Vec::new();
            let holders = self
                .inner
                .holders(&name, &cidrs, &scan, &mut unparsable)
                .into_iter()
                .map(|h| ServiceCidrHolder {
                    index: h.index as u32,
                    ip: h.ip,
                    taken_over_by: h.taken_over_by,
                })
                .collect();
            Ok(ServiceCidrHolders {
                holders,
                unparsable,
            })
        })
    }
}

/// `ips[i]` with family label `families[i]` (null when the label is absent).
fn orphan_scan<'a>(
    ips: &'a [String],
    families: &'a [Option<String>],
) -> Result<Vec<OrphanScan<'a>>> {
    if ips.len() != families.len() {
        return Err(err(
            ErrorCode::InvalidArg,
            "ips and families must have the same length",
        ));
    }
    Ok(ips
        .iter()
        .zip(families)
        .map(|(n, f)| OrphanScan {
            name: n,
            family_label: f.as_deref(),
        })
        .collect())
}

/// An IPAddress inside a ServiceCIDR and the other ServiceCIDRs that contain it.
#[napi(object)]
pub struct ServiceCidrHolder {
    /// Position in the `ips` argument.
    pub index: u32,
    /// The address, as upstream prints it.
    pub ip: String,
    /// Sorted names of the other ServiceCIDRs containing it; empty: it blocks the deletion.
    pub taken_over_by: Vec<String>,
}

/// What `holders` found.
#[napi(object)]
pub struct ServiceCidrHolders {
    pub holders: Vec<ServiceCidrHolder>,
    /// IPAddress names that are not addresses (skipped, as upstream does).
    pub unparsable: Vec<String>,
}
