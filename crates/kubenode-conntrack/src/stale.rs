//! kube-proxy's stale UDP flow rules (`pkg/proxy/conntrack/cleanup.go`, `CleanStaleEntries`),
//! with binary keys instead of formatted strings. Comparing canonical strings and comparing
//! address bytes plus port give the same answers. The rules are those of the Kubernetes release
//! the matcher is built for (v1.36 or v1.37).

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;

use kubenode_sysctl::KubernetesVersion;

use crate::consts::{IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP};
use crate::error::Result;
use crate::flow::{check_family, DumpFilter, Family, Flow};
use crate::hash::{FxMap, FxSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// The service-port protocols by their API names.
    const NAMES: [(&'static str, Protocol); 3] = [
        ("TCP", Protocol::Tcp),
        ("UDP", Protocol::Udp),
        ("SCTP", Protocol::Sctp),
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(n, _)| *n == s).map(|&(_, p)| p)
    }

    /// The IP protocol number of its flows.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => IPPROTO_TCP,
            Protocol::Udp => IPPROTO_UDP,
            Protocol::Sctp => IPPROTO_SCTP,
        }
    }

    /// Whether flows of IP protocol `n` can be stale: [`has_stale_flows`](Self::has_stale_flows)
    /// by number, for the per-flow decision.
    fn number_has_stale_flows(n: u8) -> bool {
        Self::NAMES
            .iter()
            .any(|&(_, p)| p.number() == n && p.has_stale_flows())
    }

    /// The kernel's protocol filter for a full pass: the one protocol with stale flows (a
    /// `CTA_FILTER` names one), or none when the rule covers more, and user space decides.
    fn stale_flow_filter() -> Option<u8> {
        let mut numbers = Self::NAMES
            .iter()
            .filter(|(_, p)| p.has_stale_flows())
            .map(|&(_, p)| p.number());
        match (numbers.next(), numbers.next()) {
            (Some(n), None) => Some(n),
            _ => None,
        }
    }

    /// Upstream's UDP-only rule: only flows of UDP service ports can go stale.
    pub fn has_stale_flows(self) -> bool {
        self == Protocol::Udp
    }

    /// The API names of the protocols with stale flows, for callers that skip a pass when no
    /// such service port changed (kube-proxy's `ConntrackCleanupRequired`).
    pub fn with_stale_flows() -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .iter()
            .filter(|(_, p)| p.has_stale_flows())
            .map(|&(n, _)| n)
    }
}

/// One service port for one IP family, as the proxier sees it (`ServicePort`). Generic over how
/// its protocol and addresses are held, so the tables callers hand over ([`ServiceEntry`], text)
/// and the checked form the rules read ([`ServicePort`]) are one type with one set of fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Service<Proto, ClusterIp, Ip> {
    /// The endpoints key (upstream's `ServicePortName`).
    pub name: String,
    /// `"TCP"`, `"UDP"` or `"SCTP"` as handed over.
    pub protocol: Proto,
    /// Handed over as text, `""` or `"None"` for headless services; checked, `None` for those
    /// (which the proxier never sees).
    pub cluster_ip: ClusterIp,
    pub port: u16,
    /// 0 when the service has no node port.
    pub node_port: u16,
    pub external_ips: Vec<Ip>,
    /// Load-balancer VIPs (ingress IPs not in `ipMode: Proxy`).
    pub load_balancer_ips: Vec<Ip>,
}

/// A service port as the stale-flow rules read it: every value checked.
pub type ServicePort = Service<Protocol, Option<IpAddr>, IpAddr>;

/// A service port as callers hand it over (kube-proxy's view of one `ServicePort`), checked by
/// [`stale_matcher`](crate::stale_matcher).
pub type ServiceEntry = Service<String, String, String>;

/// One endpoint of a service port; `Ip` is its address, checked or as handed over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Endpoint<Ip = IpAddr> {
    pub ip: Ip,
    pub port: u16,
    /// EndpointSlice `conditions.serving`, with nil already mapped to true.
    pub serving: bool,
}

/// One endpoint of a service port as callers hand it over.
pub type EndpointEntry = Endpoint<String>;

pub(crate) type Backend = (IpAddr, u16);

/// The desired state: frontends mapped to the serving backends of their service port. Every
/// key starts with the IP protocol number of its service port, so the rules and the targeted
/// path's kernel filters take the protocol from the port, never from a constant.
#[derive(Debug, Default, Clone)]
pub struct StaleMatcher {
    pub(crate) sets: Vec<FxSet<Backend>>,
    pub(crate) vip: FxMap<(u8, IpAddr, u16), u32>,
    pub(crate) node_port: FxMap<(u8, u16), u32>,
    /// The release whose rules built these tables.
    pub(crate) k8s: KubernetesVersion,
}

/// From v1.37 a UDP service port without serving endpoints is processed with an empty set:
/// its established flows are DNATed before the reject rule for such a service can see them,
/// and a one-way sender refreshes its entry forever. v1.36 skipped the port.
fn cleans_ports_without_endpoints(k8s: KubernetesVersion) -> bool {
    k8s.minor() >= 37
}

/// Kubernetes' headless service: `spec.clusterIP` is `"None"` (or unset, `""`); such a
/// service has no cluster IP to match flows against.
pub fn is_headless(cluster_ip: &str) -> bool {
    cluster_ip.is_empty() || cluster_ip == "None"
}

impl StaleMatcher {
    /// Builds the maps as release `k8s` of upstream does: UDP service ports only; only serving
    /// endpoints; ClusterIP, load-balancer VIPs and external IPs at the service port, plus the
    /// node port by port alone. A port with no serving endpoint is skipped entirely under v1.36;
    /// from v1.37 its frontends map to an empty set (every flow to them is stale) but its node
    /// port is left out, since matching on the port alone with nothing to keep would take
    /// foreign flows to that port too. A later service overwrites an earlier one on the same
    /// key. External and load-balancer IPs of the other family are ignored (upstream filters
    /// them per family); a cluster IP or endpoint of the other family of a UDP service port is
    /// an error, since the tables are per family.
    pub fn build(
        family: Family,
        services: &[ServicePort],
        endpoints: &HashMap<String, Vec<Endpoint>>,
        k8s: KubernetesVersion,
    ) -> Result<Self> {
        let mut m = StaleMatcher {
            k8s,
            ..Default::default()
        };
        for (i, svc) in services.iter().enumerate() {
            // Upstream looks at UDP service ports only; the rest may hold anything.
            if !svc.protocol.has_stale_flows() {
                continue;
            }
            if let Some(ip) = &svc.cluster_ip {
                check_family(family, ip, || {
                    format!("services[{i}] ({}).clusterIP", svc.name)
                })?;
            }
            let name = &svc.name;
            for (j, ep) in endpoints
                .get(name)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                check_family(family, &ep.ip, || format!("endpoints[{name:?}][{j}].ip"))?;
            }
            let Some(cluster_ip) = svc.cluster_ip else {
                continue;
            };
            let set: FxSet<Backend> = endpoints
                .get(&svc.name)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .filter(|e| e.serving)
                .map(|e| (e.ip, e.port))
                .collect();
            let has_backends = !set.is_empty();
            if !has_backends && !cleans_ports_without_endpoints(k8s) {
                continue;
            }
            let (idx, proto) = (m.sets.len() as u32, svc.protocol.number());
            m.sets.push(set);
            m.vip.insert((proto, cluster_ip, svc.port), idx);
            for ip in svc.load_balancer_ips.iter().chain(&svc.external_ips) {
                if Family::of(ip) == family {
                    m.vip.insert((proto, *ip, svc.port), idx);
                }
            }
            if svc.node_port != 0 && has_backends {
                m.node_port.insert((proto, svc.node_port), idx);
            }
        }
        Ok(m)
    }

    /// Ahead of upstream (the rule upstream merged for v1.38), from v1.37 on: a frontend
    /// (VIP and port) of `previous`, the tables of the cleaner's last pass, that these tables
    /// lack belongs to a deleted service port, and every flow to it is stale, as for a port
    /// without serving endpoints; node ports are left alone for the same reason as there.
    /// Borrows `self` when nothing was deleted (or under v1.36, where deleted services keep
    /// their flows).
    pub fn with_deleted(&self, previous: Option<&StaleMatcher>) -> Cow<'_, StaleMatcher> {
        let Some(prev) = previous.filter(|_| cleans_ports_without_endpoints(self.k8s)) else {
            return Cow::Borrowed(self);
        };
        let gone: Vec<_> = prev
            .vip
            .keys()
            .filter(|k| !self.vip.contains_key(k))
            .copied()
            .collect();
        if gone.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut m = self.clone();
        let idx = m.sets.len() as u32;
        m.sets.push(FxSet::default());
        m.vip.extend(gone.into_iter().map(|k| (k, idx)));
        Cow::Owned(m)
    }

    /// No frontend of a service port with stale flows (UDP): nothing can be stale.
    pub fn is_empty(&self) -> bool {
        self.vip.is_empty() && self.node_port.is_empty()
    }

    /// The release whose rules built these tables.
    pub fn kubernetes_version(&self) -> KubernetesVersion {
        self.k8s
    }

    /// The kernel-side filter for a pass: only flows [`is_stale`](Self::is_stale) can select.
    pub fn dump_filter(&self) -> DumpFilter {
        DumpFilter {
            proto: Protocol::stale_flow_filter(),
            ..Default::default()
        }
    }

    fn serves(&self, set: u32, backend: Option<Backend>) -> bool {
        match (self.sets.get(set as usize), backend) {
            (Some(s), Some(b)) => s.contains(&b),
            _ => false,
        }
    }

    /// Upstream's decision for one flow: protocols with stale flows only (UDP); stale if its
    /// protocol, VIP and port are known and the reply source is not a serving backend, or else
    /// if its destination port is a node port of its protocol (any destination IP) and the
    /// reply source is not one of that service's backends.
    #[inline]
    pub fn is_stale(&self, f: &Flow) -> bool {
        let proto = f.orig.proto;
        if !Protocol::number_has_stale_flows(proto) {
            return false;
        }
        let backend = f.reply.src.map(|ip| (ip, f.reply.src_port));
        if let Some(dst) = f.orig.dst {
            if let Some(&set) = self.vip.get(&(proto, dst, f.orig.dst_port)) {
                if !self.serves(set, backend) {
                    return true;
                }
            }
        }
        if let Some(&set) = self.node_port.get(&(proto, f.orig.dst_port)) {
            if !self.serves(set, backend) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Tuple;

    fn flow(dst: &str, dst_port: u16, backend: &str, proto: u8) -> Flow {
        let ip = |s: &str| Some(s.parse().unwrap());
        Flow {
            orig: Tuple {
                src: ip("10.0.0.1"),
                dst: ip(dst),
                proto,
                src_port: 1000,
                dst_port,
            },
            reply: Tuple {
                src: ip(backend),
                dst: ip("10.0.0.1"),
                proto,
                src_port: 5353,
                dst_port: 1000,
            },
            ..Default::default()
        }
    }

    #[test]
    fn the_kernel_filter_of_a_full_pass_is_the_rules_one_protocol() {
        assert_eq!(Protocol::stale_flow_filter(), Some(IPPROTO_UDP));
        assert_eq!(
            StaleMatcher::default().dump_filter().proto,
            Some(IPPROTO_UDP)
        );
        for p in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
            assert_eq!(
                Protocol::number_has_stale_flows(p.number()),
                p.has_stale_flows()
            );
        }
    }

    #[test]
    fn a_frontend_key_matches_flows_of_its_protocol_only() {
        let mut m = StaleMatcher::default();
        m.sets.push(FxSet::default());
        m.vip
            .insert((IPPROTO_TCP, "10.96.0.10".parse().unwrap(), 53), 0);
        // No UDP frontend at that address and port: a UDP flow there is not stale.
        assert!(!m.is_stale(&flow("10.96.0.10", 53, "10.244.0.9", IPPROTO_UDP)));
        m.vip
            .insert((IPPROTO_UDP, "10.96.0.10".parse().unwrap(), 53), 0);
        assert!(m.is_stale(&flow("10.96.0.10", 53, "10.244.0.9", IPPROTO_UDP)));
        // A protocol without stale flows is never stale, whatever the keys.
        assert!(!m.is_stale(&flow("10.96.0.10", 53, "10.244.0.9", IPPROTO_TCP)));
    }
}
