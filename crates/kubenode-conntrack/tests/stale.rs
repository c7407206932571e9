//! Upstream's decision rules (cleanup.go), case by case, and a property test against a
//! string-keyed transcription of upstream's algorithm.

mod common;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use common::{dnat, ip, tcp};
use kubenode_conntrack::{
    stale_diff, Endpoint, Error, Family, Flow, Protocol, ServicePort, StaleMatcher,
};
use proptest::prelude::*;

fn svc(name: &str, vip: &str, port: u16) -> ServicePort {
    ServicePort {
        name: name.into(),
        protocol: Protocol::Udp,
        cluster_ip: Some(ip(vip)),
        port,
        node_port: 0,
        external_ips: vec![],
        load_balancer_ips: vec![],
    }
}

fn ep(a: &str, port: u16, serving: bool) -> Endpoint {
    Endpoint {
        ip: ip(a),
        port,
        serving,
    }
}

fn matcher(services: &[ServicePort], eps: &[(&str, Vec<Endpoint>)]) -> StaleMatcher {
    let eps: HashMap<String, Vec<Endpoint>> = eps
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    StaleMatcher::build(Family::V4, services, &eps).unwrap()
}

const C: &str = "10.0.0.1";

#[test]
fn cluster_ip_flow_to_removed_endpoint_is_stale() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    assert!(!m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.5", 5353)));
    assert!(m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.6", 5353)));
}

#[test]
fn endpoint_port_change_is_stale() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    assert!(m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.5", 53)));
}

#[test]
fn other_service_port_on_same_vip_is_untouched() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    assert!(!m.is_stale(&dnat(C, 1, "10.96.0.10", 54, "10.244.0.9", 5353)));
    assert!(!m.is_stale(&dnat(C, 1, "10.96.0.11", 53, "10.244.0.9", 5353)));
}

#[test]
fn only_udp_flows_and_udp_services() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    assert!(!m.is_stale(&tcp(C, 1, "10.96.0.10", 53, "10.244.0.9", 5353)));
    for proto in [Protocol::Tcp, Protocol::Sctp] {
        let mut s = svc("a", "10.96.0.10", 53);
        s.protocol = proto;
        let m = matcher(&[s], &[("a", vec![ep("10.244.0.5", 5353, true)])]);
        assert!(m.is_empty());
        assert!(!m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.9", 5353)));
    }
}

#[test]
fn only_serving_endpoints_count() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[(
            "a",
            vec![ep("10.244.0.5", 5353, true), ep("10.244.0.6", 5353, false)],
        )],
    );
    assert!(!m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.5", 5353)));
    assert!(m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.6", 5353)));
}

#[test]
fn service_without_serving_endpoints_is_skipped() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.6", 5353, false)])],
    );
    assert!(m.is_empty());
    assert!(!m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.244.0.6", 5353)));
    let m = matcher(&[svc("a", "10.96.0.10", 53)], &[]);
    assert!(!m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.96.0.10", 53)));
}

#[test]
fn external_and_load_balancer_ips_are_frontends() {
    let mut s = svc("a", "10.96.0.10", 53);
    s.external_ips = vec![ip("192.0.2.1"), ip("2001:db8::1")];
    s.load_balancer_ips = vec![ip("198.51.100.1")];
    let m = matcher(&[s], &[("a", vec![ep("10.244.0.5", 5353, true)])]);
    for fe in ["192.0.2.1", "198.51.100.1"] {
        assert!(!m.is_stale(&dnat(C, 1, fe, 53, "10.244.0.5", 5353)));
        assert!(m.is_stale(&dnat(C, 1, fe, 53, "10.244.0.7", 5353)));
        assert!(!m.is_stale(&dnat(C, 1, fe, 54, "10.244.0.7", 5353)));
    }
}

#[test]
fn node_port_matches_any_destination_ip() {
    let mut s = svc("a", "10.96.0.10", 53);
    s.node_port = 30053;
    let m = matcher(&[s], &[("a", vec![ep("10.244.0.5", 5353, true)])]);
    assert!(!m.is_stale(&dnat(C, 1, "192.168.1.1", 30053, "10.244.0.5", 5353)));
    assert!(m.is_stale(&dnat(C, 1, "192.168.1.1", 30053, "10.244.0.9", 5353)));
    // Upstream quirk: an unrelated flow to an outside host on the node port.
    assert!(m.is_stale(&dnat(C, 1, "203.0.113.9", 30053, "203.0.113.9", 30053)));
}

#[test]
fn non_dnat_flow_to_vip_is_stale() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    assert!(m.is_stale(&dnat(C, 1, "10.96.0.10", 53, "10.96.0.10", 53)));
}

#[test]
fn missing_reply_source_never_matches_a_backend() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    let mut f = dnat(C, 1, "10.96.0.10", 53, "10.244.0.5", 5353);
    f.reply.src = None;
    assert!(m.is_stale(&f));
    f.orig.dst = None;
    assert!(!m.is_stale(&f));
}

#[test]
fn port_collision_with_another_node_port_deletes_healthy_flow() {
    let a = svc("a", "10.96.0.10", 30053);
    let mut b = svc("b", "10.96.0.20", 53);
    b.node_port = 30053;
    let m = matcher(
        &[a, b],
        &[
            ("a", vec![ep("10.244.0.5", 5353, true)]),
            ("b", vec![ep("10.244.0.8", 53, true)]),
        ],
    );
    assert!(m.is_stale(&dnat(C, 1, "10.96.0.10", 30053, "10.244.0.5", 5353)));
}

#[test]
fn later_service_overwrites_shared_frontend() {
    let mut a = svc("a", "10.96.0.10", 53);
    a.external_ips = vec![ip("192.0.2.1")];
    let mut b = svc("b", "10.96.0.20", 53);
    b.external_ips = vec![ip("192.0.2.1")];
    let m = matcher(
        &[a, b],
        &[
            ("a", vec![ep("10.244.0.5", 53, true)]),
            ("b", vec![ep("10.244.0.8", 53, true)]),
        ],
    );
    assert!(m.is_stale(&dnat(C, 1, "192.0.2.1", 53, "10.244.0.5", 53)));
    assert!(!m.is_stale(&dnat(C, 1, "192.0.2.1", 53, "10.244.0.8", 53)));
}

#[test]
fn headless_services_are_ignored() {
    let mut s = svc("a", "10.96.0.10", 53);
    s.cluster_ip = None;
    s.node_port = 30053;
    let m = matcher(&[s], &[("a", vec![ep("10.244.0.5", 5353, true)])]);
    assert!(m.is_empty());
}

#[test]
fn family_mismatch_is_an_error() {
    let eps = HashMap::from([("a".to_string(), vec![ep("10.244.0.5", 53, true)])]);
    let r = StaleMatcher::build(Family::V6, &[svc("a", "10.96.0.10", 53)], &eps);
    assert!(matches!(r, Err(Error::FamilyMismatch(_))));
    let mut s = svc("a", "fd00::10", 53);
    s.external_ips = vec![ip("192.0.2.1")]; // other-family external IPs are filtered, not errors
    let r = StaleMatcher::build(Family::V6, &[s.clone()], &eps);
    assert!(matches!(r, Err(Error::FamilyMismatch(m)) if m.contains("endpoint")));
    let eps6 = HashMap::from([("a".to_string(), vec![ep("fd00:244::5", 53, true)])]);
    let m = StaleMatcher::build(Family::V6, &[s], &eps6).unwrap();
    assert!(m.is_stale(&dnat("fd00::1", 1, "fd00::10", 53, "fd00:244::6", 53)));
}

#[test]
fn non_udp_services_are_not_family_checked() {
    // A TCP service with an other-family cluster IP and endpoint does not stop the UDP cleanup.
    let mut web = svc("web", "10.96.0.11", 80);
    web.protocol = Protocol::Tcp;
    let eps = HashMap::from([
        ("web".to_string(), vec![ep("10.244.0.7", 8080, true)]),
        ("dns".to_string(), vec![ep("fd00:244::5", 53, true)]),
    ]);
    let m = StaleMatcher::build(Family::V6, &[web, svc("dns", "fd00::10", 53)], &eps).unwrap();
    assert!(m.is_stale(&dnat("fd00::1", 1, "fd00::10", 53, "fd00:244::6", 53)));
    assert!(!m.is_stale(&dnat("fd00::1", 1, "fd00::10", 53, "fd00:244::5", 53)));
}

#[test]
fn ipv6_rules() {
    let mut s = svc("a", "fd00:96::a", 53);
    s.node_port = 30053;
    s.load_balancer_ips = vec![ip("2001:db8::5")];
    let eps = HashMap::from([("a".to_string(), vec![ep("fd00:244::5", 5353, true)])]);
    let m = StaleMatcher::build(Family::V6, &[s], &eps).unwrap();
    assert!(!m.is_stale(&dnat("fd00::1", 1, "fd00:96::a", 53, "fd00:244::5", 5353)));
    assert!(m.is_stale(&dnat("fd00::1", 1, "fd00:96::a", 53, "fd00:244::6", 5353)));
    assert!(m.is_stale(&dnat("fd00::1", 1, "2001:db8::5", 53, "fd00:244::6", 5353)));
    assert!(m.is_stale(&dnat("fd00::1", 1, "fd00::99", 30053, "fd00:244::6", 5353)));
}

// ---- upstream transcription: strings, JoinHostPort, last writer wins ----

fn join(ip: Option<IpAddr>, port: u16) -> String {
    match ip {
        Some(IpAddr::V6(a)) => format!("[{a}]:{port}"),
        Some(IpAddr::V4(a)) => format!("{a}:{port}"),
        None => format!("<nil>:{port}"),
    }
}

fn upstream_is_stale(
    services: &[ServicePort],
    eps: &HashMap<String, Vec<Endpoint>>,
    flows: &[Flow],
) -> Vec<bool> {
    let mut vip: HashMap<String, HashSet<String>> = HashMap::new();
    let mut np: HashMap<u16, HashSet<String>> = HashMap::new();
    for s in services {
        if s.protocol != Protocol::Udp {
            continue;
        }
        let set: HashSet<String> = eps
            .get(&s.name)
            .into_iter()
            .flatten()
            .filter(|e| e.serving)
            .map(|e| join(Some(e.ip), e.port))
            .collect();
        if set.is_empty() {
            continue;
        }
        vip.insert(join(s.cluster_ip, s.port), set.clone());
        for i in s.load_balancer_ips.iter().chain(&s.external_ips) {
            vip.insert(join(Some(*i), s.port), set.clone());
        }
        if s.node_port != 0 {
            np.insert(s.node_port, set);
        }
    }
    flows
        .iter()
        .map(|f| {
            if f.orig.proto != 17 {
                return false;
            }
            let backend = join(f.reply.src, f.reply.src_port);
            if let Some(set) = vip.get(&join(f.orig.dst, f.orig.dst_port)) {
                if !set.contains(&backend) {
                    return true;
                }
            }
            if let Some(set) = np.get(&f.orig.dst_port) {
                if !set.contains(&backend) {
                    return true;
                }
            }
            false
        })
        .collect()
}

fn small_ip(prefix: &'static str) -> impl Strategy<Value = IpAddr> {
    (1u8..5).prop_map(move |i| ip(&format!("{prefix}{i}")))
}

fn small_port() -> impl Strategy<Value = u16> {
    prop_oneof![Just(53u16), Just(54), Just(30053), Just(30054)]
}

fn arb_service(i: usize) -> impl Strategy<Value = ServicePort> {
    (
        small_ip("10.96.0."),
        small_port(),
        prop_oneof![Just(0u16), small_port()],
        prop::collection::vec(small_ip("192.0.2."), 0..2),
        prop::collection::vec(small_ip("198.51.100."), 0..2),
        prop_oneof![4 => Just(Protocol::Udp), 1 => Just(Protocol::Tcp)],
    )
        .prop_map(move |(c, port, node_port, ext, lb, protocol)| ServicePort {
            name: format!("s{i}"),
            protocol,
            cluster_ip: Some(c),
            port,
            node_port,
            external_ips: ext,
            load_balancer_ips: lb,
        })
}

fn arb_flow() -> impl Strategy<Value = Flow> {
    (
        prop_oneof![
            small_ip("10.96.0."),
            small_ip("192.0.2."),
            small_ip("198.51.100."),
            small_ip("203.0.113.")
        ],
        small_port(),
        prop_oneof![small_ip("10.244.0."), small_ip("10.96.0.")],
        small_port(),
        prop_oneof![5 => Just(17u8), 1 => Just(6u8)],
    )
        .prop_map(|(d, dp, b, bp, proto)| {
            let mut f = dnat(C, 1000, &d.to_string(), dp, &b.to_string(), bp);
            f.orig.proto = proto;
            f.reply.proto = proto;
            f
        })
}

fn arb_eps() -> impl Strategy<Value = HashMap<String, Vec<Endpoint>>> {
    prop::collection::vec(
        prop::collection::vec(
            (
                small_ip("10.244.0."),
                small_port(),
                prop::bool::weighted(0.8),
            ),
            0..4,
        ),
        4,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, l)| {
                (
                    format!("s{i}"),
                    l.into_iter()
                        .map(|(ip, port, serving)| Endpoint { ip, port, serving })
                        .collect(),
                )
            })
            .collect::<HashMap<_, _>>()
    })
}

fn arb_case() -> impl Strategy<Value = (Vec<ServicePort>, HashMap<String, Vec<Endpoint>>, Vec<Flow>)>
{
    let services = (0usize..4).prop_flat_map(|n| (0..n).map(arb_service).collect::<Vec<_>>());
    (
        services,
        arb_eps(),
        prop::collection::vec(arb_flow(), 0..40),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The binary-keyed matcher decides exactly as upstream's string-keyed algorithm.
    #[test]
    fn matches_upstream_transcription((services, eps, flows) in arb_case()) {
        let m = StaleMatcher::build(Family::V4, &services, &eps).unwrap();
        let want = upstream_is_stale(&services, &eps, &flows);
        let got: Vec<bool> = flows.iter().map(|f| m.is_stale(f)).collect();
        prop_assert_eq!(got, want);
    }

    /// The targeted path deletes what the full pass would: on a table the old tables left
    /// clean, the flows the diff's pair filters match, plus the stale ones among the flows its
    /// frontend dumps list, are exactly the flows the new tables call stale.
    #[test]
    fn the_diff_selects_what_the_full_pass_selects(
        (old_svcs, old_eps, flows) in arb_case(),
        (new_svcs, new_eps, _) in arb_case(),
    ) {
        let old = StaleMatcher::build(Family::V4, &old_svcs, &old_eps).unwrap();
        let new = StaleMatcher::build(Family::V4, &new_svcs, &new_eps).unwrap();
        let table: Vec<&Flow> = flows.iter().filter(|f| !old.is_stale(f)).collect();
        let d = stale_diff(&old, &new);
        for f in &table {
            let flushed = d.pairs.iter().any(|x| x.matches(f));
            let dumped = d.frontends.iter().any(|x| x.matches(f)) && new.is_stale(f);
            prop_assert!(!flushed || new.is_stale(f), "a flush hits a kept flow: {:?}", f);
            prop_assert_eq!(flushed || dumped, new.is_stale(f), "{:?} {:?}", f, d);
        }
        prop_assert!(stale_diff(&new, &new).is_empty());
    }

    /// No flow is ever selected if its backend serves every service whose frontend or node
    /// port it hits (so a flow to a serving endpoint survives unless upstream's port-collision
    /// quirk applies, which the condition accounts for).
    #[test]
    fn flows_to_serving_endpoints_survive((services, eps, flows) in arb_case()) {
        let m = StaleMatcher::build(Family::V4, &services, &eps).unwrap();
        for f in &flows {
            let backend = (f.reply.src.unwrap(), f.reply.src_port);
            let hits: Vec<&ServicePort> = services.iter().filter(|s| {
                s.protocol == Protocol::Udp && (
                    (f.orig.dst_port == s.port && (s.cluster_ip == f.orig.dst
                        || s.external_ips.iter().chain(&s.load_balancer_ips).any(|i| Some(*i) == f.orig.dst)))
                    || (s.node_port != 0 && s.node_port == f.orig.dst_port))
            }).collect();
            let serves_all = hits.iter().all(|s| eps.get(&s.name).into_iter().flatten()
                .any(|e| e.serving && (e.ip, e.port) == backend));
            if f.orig.proto == 17 && serves_all {
                prop_assert!(!m.is_stale(f), "{:?}", f);
            }
        }
    }
}

/// The pass dumps only what the matcher's filter lets through, so a flow the filter drops must
/// never be one the matcher would select.
#[test]
fn the_dump_filter_never_hides_a_stale_flow() {
    let m = matcher(
        &[svc("a", "10.96.0.10", 53)],
        &[("a", vec![ep("10.244.0.5", 5353, true)])],
    );
    let f = m.dump_filter();
    let stale = dnat(C, 1, "10.96.0.10", 53, "10.244.0.6", 5353);
    assert!(m.is_stale(&stale) && f.matches(&stale));
    let other = tcp(C, 1, "10.96.0.10", 53, "10.244.0.6", 5353);
    assert!(!f.matches(&other) && !m.is_stale(&other));
}
