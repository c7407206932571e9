//! The opt-in purge of a deleted pod's flows (Calico's approach): when an address leaves every
//! EndpointSlice, every flow of that address goes, in any protocol and either direction.
//! Upstream kube-proxy deletes only UDP flows to stale endpoints and leaves TCP to time out on
//! purpose; this is off unless asked for.

use std::collections::HashSet;
use std::net::IpAddr;

use crate::conntrack::Conntrack;
use crate::error::Result;
use crate::filter::{AddrMatch, DirectionFilter, FlowFilter};
use crate::flow::{check_family, Family, Flow};
use crate::flush::FilterDeleteReport;

/// Most addresses purged with kernel-filtered dumps (four per address: original and reply,
/// source and destination); more share one unfiltered dump.
const FILTERED_PURGE_MAX: usize = 2;

/// The endpoint addresses of `family` in `previous` that are in no endpoint of `current`,
/// sorted and without repeats. Text that is not an IP address of `family` (an FQDN endpoint,
/// the other family's slice) owns no flow of this table and is skipped; equal addresses in
/// different spellings (`fd00::1`, `fd00:0::1`) are one address.
pub fn gone_ips<S: AsRef<str>>(family: Family, previous: &[S], current: &[S]) -> Vec<IpAddr> {
    let ips = |list: &[S]| -> HashSet<IpAddr> {
        list.iter()
            .filter_map(|s| s.as_ref().parse::<IpAddr>().ok())
            .filter(|ip| Family::of(ip) == family)
            .collect()
    };
    let now = ips(current);
    let mut gone: Vec<IpAddr> = ips(previous)
        .into_iter()
        .filter(|ip| !now.contains(ip))
        .collect();
    gone.sort();
    gone
}

/// Whether any address of `f`, original or reply, source or destination, is in `ips`.
pub fn flow_has_ip(f: &Flow, ips: &HashSet<IpAddr>) -> bool {
    [f.orig.src, f.orig.dst, f.reply.src, f.reply.dst]
        .iter()
        .flatten()
        .any(|ip| ips.contains(ip))
}

/// The four filters that together select every flow of `ip`.
fn filters_of(ip: IpAddr) -> [FlowFilter; 4] {
    let host = Some(AddrMatch::host(ip));
    let dir = |src, dst| DirectionFilter {
        src,
        dst,
        ..Default::default()
    };
    let f = |orig, reply| FlowFilter {
        orig,
        reply,
        ..Default::default()
    };
    [
        f(dir(host, None), DirectionFilter::default()),
        f(dir(None, host), DirectionFilter::default()),
        f(DirectionFilter::default(), dir(host, None)),
        f(DirectionFilter::default(), dir(None, host)),
    ]
}

impl Conntrack {
    /// Deletes every flow of `family` with any of `ips` as an original or reply source or
    /// destination, in any protocol. A few addresses are found with kernel-filtered dumps;
    /// many share one dump of the table.
    pub fn purge_ips(&mut self, family: Family, ips: &[IpAddr]) -> Result<FilterDeleteReport> {
        for (i, ip) in ips.iter().enumerate() {
            check_family(family, ip, || format!("ips[{i}]"))?;
        }
        if ips.len() <= FILTERED_PURGE_MAX {
            let filters: Vec<FlowFilter> = ips.iter().flat_map(|ip| filters_of(*ip)).collect();
            return self.delete_where(family, &filters, |_| true);
        }
        let set: HashSet<IpAddr> = ips.iter().copied().collect();
        self.delete_where(family, &[FlowFilter::default()], |f| flow_has_ip(f, &set))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Tuple;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_addresses_gone_from_every_slice() {
        let prev = [
            "10.0.0.1",
            "10.0.0.2",
            "10.0.0.3",
            "10.0.0.2",
            "fd00::1",
            "db.example",
        ];
        let cur = ["10.0.0.2", "10.0.0.4"];
        assert_eq!(
            gone_ips(Family::V4, &prev, &cur),
            vec![ip("10.0.0.1"), ip("10.0.0.3")]
        );
        assert_eq!(gone_ips(Family::V6, &prev, &cur), vec![ip("fd00::1")]);
        // Another spelling of a current address is that address.
        assert!(gone_ips(Family::V6, &["fd00::1"], &["fd00:0:0::1"]).is_empty());
        // A new address is not gone; nothing before means nothing gone.
        assert!(gone_ips::<&str>(Family::V4, &[], &["10.0.0.9"]).is_empty());
        assert_eq!(
            gone_ips::<&str>(Family::V4, &["10.0.0.9"], &[]),
            vec![ip("10.0.0.9")]
        );
    }

    #[test]
    fn any_address_of_a_flow_counts() {
        let set: HashSet<IpAddr> = [ip("10.0.0.9")].into_iter().collect();
        let t = |s: &str, d: &str| Tuple {
            src: Some(ip(s)),
            dst: Some(ip(d)),
            ..Default::default()
        };
        let flow = |orig, reply| Flow {
            orig,
            reply,
            ..Default::default()
        };
        let a = t("1.1.1.1", "2.2.2.2");
        assert!(!flow_has_ip(&flow(a, a), &set));
        assert!(flow_has_ip(&flow(t("10.0.0.9", "2.2.2.2"), a), &set));
        assert!(flow_has_ip(&flow(t("1.1.1.1", "10.0.0.9"), a), &set));
        assert!(flow_has_ip(&flow(a, t("10.0.0.9", "2.2.2.2")), &set));
        assert!(flow_has_ip(&flow(a, t("1.1.1.1", "10.0.0.9")), &set));
        // The four filters of an address select exactly the flows the set rule selects.
        let filters = filters_of(ip("10.0.0.9"));
        for f in [
            flow(a, a),
            flow(t("10.0.0.9", "2.2.2.2"), a),
            flow(a, t("1.1.1.1", "10.0.0.9")),
        ] {
            assert_eq!(filters.iter().any(|x| x.matches(&f)), flow_has_ip(&f, &set));
        }
    }
}
