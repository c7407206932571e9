//! Upstream's stale rules for what changed between two syncs, as kernel filters.
//!
//! Why the result equals upstream's full pass: after a successful pass with the old tables no
//! flow is stale under them (`old.is_stale(f)` is false for every flow left). A flow `f` that
//! the new tables call stale has a frontend key `k` (VIP:port, or node port) in the new
//! matcher whose serving set lacks `f`'s reply source `b` (the set may be empty: a port without
//! serving endpoints, or a deleted frontend the new matcher carries). Either `k` was not a key
//! before (a new frontend, or under v1.36 one whose service had no serving endpoint and was
//! skipped) — then
//! every flow to `k` is decided again from a dump filtered to `k` — or `k` was a key and,
//! since `f` was not stale then, `b` was in its old set: `(k, b)` is a removed pair, and the
//! dump filtered to exactly `k` and `b` returns `f`. Conversely every flow such a filter
//! selects is stale under the new tables (`k` is a key whose set lacks `b`), and each is also
//! decided by the full pass's rule before it is deleted, so no flow to a serving endpoint is
//! touched. Flows created stale between two passes (a race upstream's
//! every-sync full pass also only catches at its next run) are left to the periodic full pass.

use crate::flow::DumpFilter;
use crate::hash::{FxMap, FxSet};
use crate::stale::{Backend, StaleMatcher};

/// The work a targeted pass does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StaleDiff {
    /// One kernel filter per removed (frontend, backend) pair: its flows are dumped and deleted.
    pub pairs: Vec<DumpFilter>,
    /// Frontends the old matcher did not know: each is dumped (filtered in the kernel to the
    /// frontend) and decided flow by flow with the new matcher.
    pub frontends: Vec<DumpFilter>,
}

impl StaleDiff {
    /// Nothing can have become stale.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.frontends.is_empty()
    }

    /// Walks over the table the targeted pass costs (one per filtered dump).
    pub fn walks(&self) -> usize {
        self.pairs.len() + self.frontends.len()
    }
}

/// The diff of one kind of frontend key: new keys become frontend dumps, backends gone from a
/// known key become pairs.
fn diff_keys<K: std::hash::Hash + Eq + Copy>(
    (old, old_sets): (&FxMap<K, u32>, &[FxSet<Backend>]),
    (new, new_sets): (&FxMap<K, u32>, &[FxSet<Backend>]),
    frontend: impl Fn(K) -> DumpFilter,
    pair: impl Fn(K, Backend) -> DumpFilter,
    d: &mut StaleDiff,
) {
    let empty = FxSet::default();
    for (&k, &i) in new {
        let now = new_sets.get(i as usize).unwrap_or(&empty);
        match old.get(&k) {
            None => d.frontends.push(frontend(k)),
            Some(&j) => {
                let before = old_sets.get(j as usize).unwrap_or(&empty);
                let gone = before.iter().filter(|b| !now.contains(b));
                d.pairs.extend(gone.map(|&b| pair(k, b)));
            }
        }
    }
}

/// What changed from `old` (the tables of the last successful pass) to `new`.
pub fn stale_diff(old: &StaleMatcher, new: &StaleMatcher) -> StaleDiff {
    let mut d = StaleDiff::default();
    // Every key carries its service port's protocol: the filters match flows of that protocol.
    let filter = |proto, orig_dst, port, reply: Option<Backend>| DumpFilter {
        proto: Some(proto),
        orig_dst,
        orig_dst_port: Some(port),
        reply_src: reply.map(|b| b.0),
        reply_src_port: reply.map(|b| b.1),
    };
    diff_keys(
        (&old.vip, &old.sets),
        (&new.vip, &new.sets),
        |(proto, ip, port)| filter(proto, Some(ip), port, None),
        |(proto, ip, port), b| filter(proto, Some(ip), port, Some(b)),
        &mut d,
    );
    // Upstream's node-port rule ignores the destination IP: so do these filters.
    diff_keys(
        (&old.node_port, &old.sets),
        (&new.node_port, &new.sets),
        |(proto, np)| filter(proto, None, np, None),
        |(proto, np), b| filter(proto, None, np, Some(b)),
        &mut d,
    );
    d
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;
    use crate::consts::{IPPROTO_SCTP, IPPROTO_UDP};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A matcher with one frontend (VIP and node port) of protocol `proto` and these backends.
    fn matcher(proto: u8, backends: &[&str]) -> StaleMatcher {
        let mut m = StaleMatcher::default();
        m.sets
            .push(backends.iter().map(|b| (ip(b), 5353)).collect());
        m.vip.insert((proto, ip("10.96.0.10"), 53), 0);
        m.node_port.insert((proto, 30053), 0);
        m
    }

    #[test]
    fn the_filters_take_the_protocol_of_their_service_port() {
        for proto in [IPPROTO_UDP, IPPROTO_SCTP] {
            let old = matcher(proto, &["10.244.0.1", "10.244.0.2"]);
            let d = stale_diff(&old, &matcher(proto, &["10.244.0.2"]));
            let gone = Some(ip("10.244.0.1"));
            assert_eq!(d.pairs.len(), 2, "one per frontend key");
            for f in &d.pairs {
                assert_eq!((f.proto, f.reply_src), (Some(proto), gone));
            }
            let d = stale_diff(&StaleMatcher::default(), &old);
            assert_eq!(d.frontends.len(), 2);
            assert!(d.frontends.iter().all(|f| f.proto == Some(proto)));
        }
    }

    #[test]
    fn the_same_address_and_port_of_another_protocol_is_another_frontend() {
        let old = matcher(IPPROTO_UDP, &["10.244.0.1"]);
        let d = stale_diff(&old, &matcher(IPPROTO_SCTP, &["10.244.0.2"]));
        assert!(d.pairs.is_empty(), "{d:?}");
        assert_eq!(d.frontends.len(), 2);
    }
}
