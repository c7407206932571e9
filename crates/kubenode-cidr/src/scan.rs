//! Upstream's list-based helpers (`OverlapsPrefix`, `ContainsPrefix`, `ContainsAddress`) as a
//! plain scan over given CIDR lists, for callers that hold objects rather than an index.

use crate::{prefix_contains_ip, Addr, Prefix};

#[derive(Debug, Clone, Copy)]
pub enum Query {
    Overlaps(Prefix),
    ContainsPrefix(Prefix),
    ContainsAddress(Addr),
}

/// Positions of the lists with at least one parsable CIDR matching `q` (unparsable CIDRs are
/// skipped, as upstream does).
pub fn scan_matches<S: AsRef<str>>(lists: &[Vec<S>], q: &Query) -> Vec<usize> {
    let hit = |p: Prefix| match q {
        Query::Overlaps(o) => p.overlaps(o),
        Query::ContainsPrefix(o) => p.encloses(o),
        Query::ContainsAddress(a) => prefix_contains_ip(&p, *a),
    };
    lists
        .iter()
        .enumerate()
        .filter(|(_, cidrs)| {
            cidrs
                .iter()
                .filter_map(|c| Prefix::parse(c.as_ref()).ok())
                .any(hit)
        })
        .map(|(i, _)| i)
        .collect()
}
