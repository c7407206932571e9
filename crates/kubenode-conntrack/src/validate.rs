//! Every check on what callers hand over: family names, IP text, ports, protocol names, the
//! per-family service/endpoint tables and flows. One function and one message per rule; the
//! bindings only convert their values into these inputs.

use std::collections::HashMap;
use std::net::IpAddr;

use kubenode_sysctl::KubernetesVersion;

use crate::consts::{IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP};
use crate::error::{Error, Result};
use crate::flow::{check_family, Family, Flow, Tuple};
use crate::stale::{
    is_headless, Endpoint, EndpointEntry, Protocol, ServiceEntry, ServicePort, StaleMatcher,
};

/// `"IPv4"` or `"IPv6"`, kube-proxy's `ip_family` label values.
pub fn parse_family(s: &str) -> Result<Family> {
    match s {
        "IPv4" => Ok(Family::V4),
        "IPv6" => Ok(Family::V6),
        other => Err(Error::InvalidArgument(format!(
            "family must be \"IPv4\" or \"IPv6\", got {other:?}"
        ))),
    }
}

/// One IP address; zone suffixes, CIDRs and IPv4 with other than four decimal parts are
/// rejected.
pub fn parse_ip(what: &str, s: &str) -> Result<IpAddr> {
    s.parse()
        .map_err(|_| Error::InvalidArgument(format!("{what}: invalid IP address {s:?}")))
}

/// A protocol name for a dump filter (any case) as its IP protocol number.
pub fn protocol_number(s: &str) -> Result<u8> {
    match s.to_ascii_lowercase().as_str() {
        "udp" => Ok(IPPROTO_UDP),
        "tcp" => Ok(IPPROTO_TCP),
        "sctp" => Ok(IPPROTO_SCTP),
        _ => Err(Error::InvalidArgument(format!(
            "protocol must be udp, tcp, sctp or a number, got {s:?}"
        ))),
    }
}

/// Service and endpoint ports are never 0 (the API server rejects that).
fn nonzero_port(what: impl FnOnce() -> String, port: u16) -> Result<u16> {
    if port == 0 {
        return Err(Error::OutOfRange(format!(
            "{} must be in [1, 65535], got 0",
            what()
        )));
    }
    Ok(port)
}

fn service_port(i: usize, s: &ServiceEntry) -> Result<ServicePort> {
    if s.name.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "services[{i}].name must be a non-empty string"
        )));
    }
    let what = |field: &str| format!("services[{i}] ({}).{field}", s.name);
    let protocol = Protocol::parse(&s.protocol).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{} must be TCP, UDP or SCTP, got {:?}",
            what("protocol"),
            s.protocol
        ))
    })?;
    let cluster_ip = if is_headless(&s.cluster_ip) {
        None
    } else {
        Some(parse_ip(&what("clusterIP"), &s.cluster_ip)?)
    };
    let ips = |field: &str, list: &[String]| -> Result<Vec<IpAddr>> {
        list.iter()
            .enumerate()
            .map(|(j, ip)| parse_ip(&format!("{}[{j}]", what(field)), ip))
            .collect()
    };
    Ok(ServicePort {
        name: s.name.clone(),
        protocol,
        cluster_ip,
        port: nonzero_port(|| what("port"), s.port)?,
        node_port: s.node_port,
        external_ips: ips("externalIPs", &s.external_ips)?,
        load_balancer_ips: ips("loadBalancerIPs", &s.load_balancer_ips)?,
    })
}

fn endpoint(name: &str, j: usize, e: &EndpointEntry) -> Result<Endpoint> {
    let what = |field: &str| format!("endpoints[{name:?}][{j}].{field}");
    Ok(Endpoint {
        ip: parse_ip(&what("ip"), &e.ip)?,
        port: nonzero_port(|| what("port"), e.port)?,
        serving: e.serving,
    })
}

/// Checks the tables for `family` and builds the stale-flow matcher from them. Every address
/// must parse; the family rule is [`StaleMatcher::build`]'s.
pub fn stale_matcher(
    family: Family,
    services: &[ServiceEntry],
    endpoints: &HashMap<String, Vec<EndpointEntry>>,
    k8s: KubernetesVersion,
) -> Result<StaleMatcher> {
    let svcs = services
        .iter()
        .enumerate()
        .map(|(i, s)| service_port(i, s))
        .collect::<Result<Vec<_>>>()?;
    let mut eps = HashMap::with_capacity(endpoints.len());
    for (name, list) in endpoints {
        let v = list
            .iter()
            .enumerate()
            .map(|(j, e)| endpoint(name, j, e))
            .collect::<Result<Vec<_>>>()?;
        eps.insert(name.clone(), v);
    }
    StaleMatcher::build(family, &svcs, &eps, k8s)
}

/// Every address of every flow must be of `family`, checked before any request is sent.
pub fn check_flows(family: Family, flows: &[Flow]) -> Result<()> {
    for (i, f) in flows.iter().enumerate() {
        for (dir, t) in [("forward", &f.orig), ("reverse", &f.reply)] {
            let Tuple { src, dst, .. } = t;
            for (field, ip) in [("srcIP", src), ("dstIP", dst)] {
                if let Some(ip) = ip {
                    check_family(family, ip, || format!("flows[{i}].{dir}.{field}"))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn dns() -> (Vec<ServiceEntry>, HashMap<String, Vec<EndpointEntry>>) {
        let svc = ServiceEntry {
            name: "kube-system/dns:dns".into(),
            protocol: "UDP".into(),
            cluster_ip: "10.96.0.10".into(),
            port: 53,
            ..Default::default()
        };
        let ep = EndpointEntry {
            ip: "10.244.0.1".into(),
            port: 5353,
            serving: true,
        };
        (
            vec![svc],
            HashMap::from([("kube-system/dns:dns".into(), vec![ep])]),
        )
    }

    fn fails(
        family: Family,
        edit: impl FnOnce(&mut Vec<ServiceEntry>, &mut HashMap<String, Vec<EndpointEntry>>),
    ) -> Error {
        let (mut s, mut e) = dns();
        edit(&mut s, &mut e);
        stale_matcher(family, &s, &e, KubernetesVersion::NEWEST)
            .expect_err("tables should be rejected")
    }

    #[test]
    fn good_tables_build_a_matcher() {
        let (s, e) = dns();
        assert!(
            !stale_matcher(Family::V4, &s, &e, KubernetesVersion::NEWEST)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn family_names() {
        assert_eq!(parse_family("IPv6").unwrap(), Family::V6);
        let e = parse_family("ipv4").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"family must be "IPv4" or "IPv6", got "ipv4""#
        );
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn bad_tables_have_one_message_per_rule() {
        let e = fails(Family::V4, |s, _| s[0].cluster_ip = "10.96.0.300".into());
        assert_eq!(
            e.to_string(),
            r#"services[0] (kube-system/dns:dns).clusterIP: invalid IP address "10.96.0.300""#
        );
        for bad in ["fe80::1%eth0", "10.0.0.0/8", "10.1", "010.0.0.1"] {
            let e = fails(Family::V4, |s, _| s[0].cluster_ip = bad.into());
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
        }
        let e = fails(Family::V4, |s, _| s[0].protocol = "udp".into());
        assert_eq!(
            e.to_string(),
            r#"services[0] (kube-system/dns:dns).protocol must be TCP, UDP or SCTP, got "udp""#
        );
        let e = fails(Family::V4, |s, _| s[0].external_ips = vec!["nope".into()]);
        assert!(
            e.to_string()
                .contains(".externalIPs[0]: invalid IP address"),
            "{e}"
        );
        let e = fails(Family::V4, |s, _| s[0].port = 0);
        assert_eq!(e.kind(), ErrorKind::OutOfRange);
        assert!(
            e.to_string()
                .ends_with(".port must be in [1, 65535], got 0"),
            "{e}"
        );
        let e = fails(Family::V4, |s, _| s[0].name.clear());
        assert_eq!(e.to_string(), "services[0].name must be a non-empty string");
        let e = fails(Family::V4, |_, e| {
            e.values_mut().for_each(|l| l[0].port = 0);
        });
        assert_eq!(e.kind(), ErrorKind::OutOfRange);
    }

    #[test]
    fn the_family_rule_applies_to_udp_ports_only() {
        let e = fails(Family::V4, |s, _| s[0].cluster_ip = "fd00::10".into());
        assert_eq!(e.kind(), ErrorKind::Family);
        assert_eq!(
            e.to_string(),
            "services[0] (kube-system/dns:dns).clusterIP: fd00::10 is not an IPv4 address \
             (family mismatch)"
        );
        let e = fails(Family::V4, |_, e| {
            e.values_mut().for_each(|l| l[0].ip = "fd00:244::1".into());
        });
        assert_eq!(
            e.to_string(),
            r#"endpoints["kube-system/dns:dns"][0].ip: fd00:244::1 is not an IPv4 address (family mismatch)"#
        );
        // A TCP port and its endpoints may be of either family; their addresses must parse.
        let (mut s, mut e) = dns();
        s[0].protocol = "TCP".into();
        s[0].cluster_ip = "fd00::10".into();
        e.values_mut().for_each(|l| l[0].ip = "fd00:244::1".into());
        assert!(stale_matcher(Family::V4, &s, &e, KubernetesVersion::NEWEST)
            .unwrap()
            .is_empty());
        e.values_mut().for_each(|l| l[0].ip = "bad".into());
        assert!(stale_matcher(Family::V4, &s, &e, KubernetesVersion::NEWEST).is_err());
    }

    #[test]
    fn flows_of_the_other_family_are_rejected_with_their_place() {
        let ip = |s: &str| Some(s.parse().unwrap());
        let mut f = Flow::default();
        f.orig.src = ip("10.0.0.1");
        f.orig.dst = ip("10.96.0.10");
        f.reply.src = ip("10.244.0.1");
        f.reply.dst = ip("10.0.0.1");
        assert!(check_flows(Family::V4, &[f]).is_ok());
        let e = check_flows(Family::V6, &[f]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Family);
        assert_eq!(
            e.to_string(),
            "flows[0].forward.srcIP: 10.0.0.1 is not an IPv6 address (family mismatch)"
        );
    }

    #[test]
    fn protocol_names() {
        assert_eq!(protocol_number("UDP").unwrap(), IPPROTO_UDP);
        assert_eq!(protocol_number("sctp").unwrap(), IPPROTO_SCTP);
        let e = protocol_number("icmp").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"protocol must be udp, tcp, sctp or a number, got "icmp""#
        );
    }
}
