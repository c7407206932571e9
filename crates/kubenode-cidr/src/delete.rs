//! Upstream `canDeleteCIDR` (pkg/controller/servicecidrs), answered from the index in one pass.

use crate::{Addr, CidrIndex, Prefix};

/// One IPAddress object managed by `ipallocator.k8s.io`: its name and its
/// `ipaddress.kubernetes.io/ip-family` label value (`None` when the label is absent).
#[derive(Debug, Clone)]
pub struct OrphanScan<'a> {
    pub name: &'a str,
    pub family_label: Option<&'a str>,
}

/// The outcome of the deletion check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteCheck {
    /// Every parsable CIDR is equal to or inside a CIDR of another ServiceCIDR.
    ContainedInOther,
    /// `ip` would be left without a ServiceCIDR.
    BlockedBy { ip: String },
    /// No IPAddress depends on this ServiceCIDR alone.
    NoOrphans,
}

/// The family label upstream derives from a CIDR string (`netutils.IPFamilyOfCIDRString`):
/// an IPv4-mapped IPv6 prefix counts as IPv4; unparsable gives the empty "unknown" family.
pub fn legacy_family_label(cidr: &str) -> &'static str {
    match Prefix::parse(cidr) {
        Ok(p) if p.addr().is_4in6() => "IPv4",
        Ok(p) => p.family().label(),
        Err(_) => "",
    }
}

impl CidrIndex {
    /// Upstream `canDeleteCIDR` for the ServiceCIDR `name` with spec `cidrs`, given the
    /// IPAddresses managed by the allocator. `unparsable` collects IPAddress names that are not
    /// addresses (upstream logs them as "[SHOULD NOT HAPPEN]" and skips them).
    pub fn can_delete<S: AsRef<str>>(
        &self,
        name: &str,
        cidrs: &[S],
        ips: &[OrphanScan<'_>],
        unparsable: &mut Vec<String>,
    ) -> DeleteCheck {
        // A lookup result "is only the target" when it holds exactly one CIDR, the target's.
        let target = self.id_of(name);
        let is_only_target = |ids: &[u32]| ids.len() == 1 && ids.first().copied() == target;
        let mut has_parent = true;
        for c in cidrs {
            if let Ok(p) = Prefix::parse(c.as_ref()) {
                let ids = self.enclosing_ids(&p);
                if ids.is_empty() || is_only_target(&ids) {
                    has_parent = false;
                }
            }
        }
        if has_parent {
            return DeleteCheck::ContainedInOther;
        }
        let mut blocked = None;
        self.scan_holders(cidrs, ips, unparsable, |_, addr, ids| {
            if is_only_target(ids) {
                blocked = Some(addr.to_string());
                return false;
            }
            true
        });
        if let Some(ip) = blocked {
            return DeleteCheck::BlockedBy { ip };
        }
        DeleteCheck::NoOrphans
    }

    /// Every IPAddress `canDeleteCIDR` looks at that lies inside the ServiceCIDR `name`, each
    /// with the other ServiceCIDRs that contain it (empty: the IPAddress blocks the deletion).
    /// In input order, each IPAddress once.
    pub fn holders<S: AsRef<str>>(
        &self,
        name: &str,
        cidrs: &[S],
        ips: &[OrphanScan<'_>],
        unparsable: &mut Vec<String>,
    ) -> Vec<Holder> {
        let target = self.id_of(name);
        let mut seen = vec![false; ips.len()];
        let mut out = Vec::new();
        self.scan_holders(cidrs, ips, unparsable, |i, addr, ids| {
            if target.is_some_and(|t| ids.contains(&t)) && !std::mem::replace(&mut seen[i], true) {
                let others = ids
                    .iter()
                    .copied()
                    .filter(|&id| Some(id) != target)
                    .collect();
                out.push(Holder {
                    index: i,
                    ip: addr.to_string(),
                    taken_over_by: self.names(others),
                });
            }
            true
        });
        out.sort_by_key(|h| h.index);
        out
    }

    /// The scan of `canDeleteCIDR`: for each CIDR, the IPAddresses labelled with its family,
    /// with the ids of every ServiceCIDR containing each; `visit` returns false to stop.
    fn scan_holders<S: AsRef<str>>(
        &self,
        cidrs: &[S],
        ips: &[OrphanScan<'_>],
        unparsable: &mut Vec<String>,
        mut visit: impl FnMut(usize, Addr, &[u32]) -> bool,
    ) {
        for c in cidrs {
            // Upstream lists with the selector `ip-family=<family>`, which needs the label to be
            // present: an absent label never matches, not even the empty family of an
            // unparsable CIDR.
            let family = legacy_family_label(c.as_ref());
            for (i, ip) in ips.iter().enumerate() {
                if ip.family_label != Some(family) {
                    continue;
                }
                let Ok(addr) = Addr::parse(ip.name) else {
                    unparsable.push(ip.name.to_string());
                    continue;
                };
                if !visit(i, addr, &self.containing_ids(addr)) {
                    return;
                }
            }
        }
    }
}

/// An IPAddress inside the ServiceCIDR being deleted (see [`CidrIndex::holders`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Position of the IPAddress in the input.
    pub index: usize,
    /// The address, as upstream prints it.
    pub ip: String,
    /// Sorted names of the other ServiceCIDRs containing it; empty when none would take it over.
    pub taken_over_by: Vec<String>,
}
