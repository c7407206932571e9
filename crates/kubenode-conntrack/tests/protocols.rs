//! The protocol rule the reconciler's gate reads through the binding is the one the pass uses.
use std::collections::HashMap;

use kubenode_conntrack::{Family, KubernetesVersion, Protocol, ServicePort, StaleMatcher};

fn port(protocol: Protocol) -> ServicePort {
    ServicePort {
        name: "ns/svc:p".into(),
        protocol,
        cluster_ip: Some("10.0.0.1".parse().unwrap()),
        port: 53,
        node_port: 0,
        external_ips: vec![],
        load_balancer_ips: vec![],
    }
}

#[test]
fn the_gates_protocols_are_the_ones_the_matcher_keeps() {
    let endpoints = HashMap::from([(
        "ns/svc:p".to_string(),
        vec![kubenode_conntrack::Endpoint {
            ip: "10.1.0.1".parse().unwrap(),
            port: 5353,
            serving: true,
        }],
    )]);
    let gate: Vec<&str> = Protocol::with_stale_flows().collect();
    assert_eq!(gate, ["UDP"]);
    for name in ["TCP", "UDP", "SCTP"] {
        let p = Protocol::parse(name).unwrap();
        let m = StaleMatcher::build(
            Family::V4,
            &[port(p)],
            &endpoints,
            KubernetesVersion::NEWEST,
        )
        .unwrap();
        assert_eq!(!m.is_empty(), gate.contains(&name), "{name}");
        assert_eq!(p.has_stale_flows(), gate.contains(&name), "{name}");
    }
    assert_eq!(Protocol::parse("udp"), None);
}
