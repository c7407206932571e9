//! The per-pair filtered dumps and the targeted cleanup path, against the real kernel.

mod common;

use std::collections::HashMap;

use common::{dnat, ep, ip, svc, tcp, Netns};
use kubenode_conntrack::{
    CleanOptions, CleanPath, CleanReport, Conntrack, DumpFilter, Endpoint, Family, FlushSupport,
    FullReason, KubernetesVersion, Progress, ServicePort, Session, StaleMatcher,
};

type Key = (u16, std::net::IpAddr, u16);

/// (client port, reply source, reply port) of every UDP entry left, sorted.
fn left(ct: &mut Conntrack) -> Vec<Key> {
    let udp = DumpFilter {
        proto: Some(17),
        ..Default::default()
    };
    let mut k: Vec<Key> = ct
        .list(Family::V4, &udp)
        .unwrap()
        .0
        .iter()
        .map(|f| (f.orig.src_port, f.reply.src.unwrap(), f.reply.src_port))
        .collect();
    k.sort();
    k
}

/// (client port) of every UDP entry a dump filtered by `f` returns.
fn listed(ct: &mut Conntrack, f: DumpFilter) -> Vec<u16> {
    let mut p: Vec<u16> = ct
        .list(Family::V4, &f)
        .unwrap()
        .0
        .iter()
        .map(|f| f.orig.src_port)
        .collect();
    p.sort();
    p
}

#[test]
fn a_pair_dump_returns_exactly_the_matching_flows() {
    let ns = Netns::new();
    let mut ct = ns.open();
    // Probed at open: this kernel (6.x) deletes by filter.
    assert_eq!(ct.flush_support(), FlushSupport::Supported);
    let flows = vec![
        dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.6", 5353),
        dnat("10.0.0.1", 1002, "10.96.0.10", 53, "10.244.0.5", 6000),
        dnat("10.0.0.1", 1003, "10.96.0.11", 53, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1004, "192.0.2.1", 30053, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1005, "192.0.2.2", 30053, "10.244.0.5", 5353),
        tcp("10.0.0.1", 1006, "10.96.0.10", 53, "10.244.0.5", 5353),
    ];
    assert_eq!(ct.create(Family::V4, &flows).unwrap().ok, 7);
    assert_eq!(ct.table_count().unwrap(), 7);
    // The probe is refused before any entry is looked at.
    assert_eq!(ct.probe_flush(Family::V4), FlushSupport::Supported);
    assert_eq!(ct.table_count().unwrap(), 7, "the probe deletes nothing");

    // One (VIP:port, backend) pair: only that frontend's UDP flows to that backend.
    let vip_pair = DumpFilter {
        proto: Some(17),
        orig_dst: Some(ip("10.96.0.10")),
        orig_dst_port: Some(53),
        reply_src: Some(ip("10.244.0.5")),
        reply_src_port: Some(5353),
    };
    assert_eq!(listed(&mut ct, vip_pair), vec![1000]);
    // A node port pair: any destination IP.
    let np_pair = DumpFilter {
        orig_dst: None,
        orig_dst_port: Some(30053),
        ..vip_pair
    };
    assert_eq!(listed(&mut ct, np_pair), vec![1004, 1005]);
    // An IPv4 address in an IPv6 dump is refused before any request.
    assert!(ct.list(Family::V6, &vip_pair).is_err());
    assert_eq!(ct.table_count().unwrap(), 7, "dumps delete nothing");
}

struct Tables {
    services: Vec<ServicePort>,
    endpoints: HashMap<String, Vec<Endpoint>>,
    k8s: KubernetesVersion,
}

impl Tables {
    fn new(services: Vec<ServicePort>, endpoints: HashMap<String, Vec<Endpoint>>) -> Self {
        Tables {
            services,
            endpoints,
            k8s: KubernetesVersion::NEWEST,
        }
    }

    fn matcher(&self) -> StaleMatcher {
        StaleMatcher::build(Family::V4, &self.services, &self.endpoints, self.k8s).unwrap()
    }
}

fn pass(s: &mut Session, t: &Tables, full: bool) -> CleanReport {
    let opts = CleanOptions {
        full,
        ..Default::default()
    };
    let progress = Progress::default();
    s.cleaner
        .clean(&mut s.ct, Family::V4, &t.matcher(), opts, &progress)
        .unwrap()
}

fn open(ns: &Netns) -> Session {
    Session::new(ns.open())
}

/// Makes the targeted path win (or lose) whatever this loaded machine measured.
fn pin_costs(s: &mut Session, targeted_wins: bool) {
    let table = s.ct.table_count().unwrap();
    let m = s.cleaner.costs_mut(Family::V4);
    m.record_walk(if targeted_wins { 1e-6 } else { 1.0 }, table);
    m.record_full(1e-3, table);
}

#[test]
fn the_handle_takes_the_targeted_path_for_what_changed() {
    let ns = Netns::new();
    let mut s = open(&ns);
    // v1.36 skips the service without endpoints, so it is a frontend the old matcher did not
    // know once it gets one (v1.37 knows it, with an empty set: see the tests below).
    let mut t = Tables {
        services: vec![
            svc("dns", "10.96.0.10", 53, 30053),
            svc("empty", "10.96.0.20", 53, 0),
        ],
        endpoints: HashMap::from([(
            "dns".to_string(),
            vec![ep("10.244.0.5", 5353), ep("10.244.0.6", 5353)],
        )]),
        k8s: KubernetesVersion::OLDEST,
    };
    let r = pass(&mut s, &t, false);
    assert_eq!(
        (r.path, r.full_reason),
        (CleanPath::Full, Some(FullReason::First))
    );
    let r = pass(&mut s, &t, false);
    assert_eq!((r.path, r.pairs), (CleanPath::Unchanged, 0), "{r:?}");

    let flows = vec![
        dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.6", 5353),
        dnat("10.0.0.1", 1002, "203.0.113.9", 30053, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1003, "203.0.113.9", 30053, "10.244.0.6", 5353),
        // To the service without endpoints: not DNATed, answered by the VIP itself.
        dnat("10.0.0.1", 1004, "10.96.0.20", 53, "10.96.0.20", 53),
        // Unrelated, and a pod-to-pod flow to the backend that goes away.
        dnat("10.0.0.1", 1005, "203.0.113.10", 9999, "203.0.113.10", 9999),
        dnat("10.0.0.1", 1006, "10.244.0.6", 5353, "10.244.0.6", 5353),
    ];
    assert_eq!(s.ct.create(Family::V4, &flows).unwrap().ok, 7);
    pin_costs(&mut s, true);

    // 10.244.0.6 stops serving; "empty" gets its first endpoint.
    t.endpoints
        .insert("dns".into(), vec![ep("10.244.0.5", 5353)]);
    t.endpoints
        .insert("empty".into(), vec![ep("10.244.1.1", 5353)]);
    let r = pass(&mut s, &t, false);
    assert_eq!(r.path, CleanPath::Targeted, "{r:?}");
    // Two pairs walked (VIP and node port, one flow each) and one frontend (one flow): every
    // listed flow was stale, and each was deleted by exact tuple.
    assert_eq!((r.pairs, r.listed, r.stale), (2, 3, 3), "{r:?}");
    assert_eq!((r.deleted, r.failed), (3, 0), "{r:?}");
    let e = r.estimate.unwrap();
    assert!(e.targeted_seconds < e.full_seconds);
    let ports: Vec<u16> = left(&mut s.ct).iter().map(|k| k.0).collect();
    assert_eq!(ports, vec![1000, 1002, 1005, 1006]);

    // The same change again, measured the other way round: one full pass.
    s.ct.create(
        Family::V4,
        &[dnat("10.0.0.1", 1007, "10.96.0.10", 53, "10.244.0.5", 5353)],
    )
    .unwrap();
    t.endpoints
        .insert("dns".into(), vec![ep("10.244.0.7", 5353)]);
    pin_costs(&mut s, false);
    let r = pass(&mut s, &t, false);
    assert_eq!(
        (r.path, r.full_reason),
        (CleanPath::Full, Some(FullReason::Cost)),
        "{r:?}"
    );
    assert!(r.estimate.is_some());
    assert_eq!(r.deleted, 3, "{r:?}");
    let r = pass(&mut s, &t, true);
    assert_eq!(r.full_reason, Some(FullReason::Requested));
    let ports: Vec<u16> = left(&mut s.ct).iter().map(|k| k.0).collect();
    assert_eq!(ports, vec![1005, 1006]);
}

#[test]
fn a_partial_pass_makes_the_next_one_full() {
    let ns = Netns::new();
    let mut s = open(&ns);
    let t = Tables::new(
        vec![svc("dns", "10.96.0.10", 53, 0)],
        HashMap::from([("dns".to_string(), vec![ep("10.244.0.5", 5353)])]),
    );
    s.ct.faults_mut().dump_intr = kubenode_conntrack::MAX_DUMP_ATTEMPTS;
    let r = pass(&mut s, &t, false);
    assert!(r.partial);
    let r = pass(&mut s, &t, false);
    assert_eq!(r.full_reason, Some(FullReason::PreviousIncomplete));
    let r = pass(&mut s, &t, false);
    assert_eq!(r.path, CleanPath::Unchanged);
}

#[test]
fn the_walk_cost_comes_from_the_full_pass_dump_then_from_targeted_walks() {
    let ns = Netns::new();
    let mut s = open(&ns);
    let flows: Vec<_> = (0..2000u16)
        .map(|i| dnat("10.0.0.1", 1000 + i, "10.96.0.10", 53, "10.244.0.5", 5353))
        .collect();
    assert_eq!(s.ct.create(Family::V4, &flows).unwrap().ok, 2000);
    // Nothing walked the table at open, so nothing is known of a walk yet.
    assert_eq!(s.cleaner.costs(Family::V4).walk_per_entry(2000), None);
    let mut t = Tables::new(
        vec![svc("dns", "10.96.0.10", 53, 0)],
        HashMap::from([(
            "dns".to_string(),
            vec![ep("10.244.0.5", 5353), ep("10.244.0.6", 5353)],
        )]),
    );
    assert_eq!(pass(&mut s, &t, false).path, CleanPath::Full);
    let from_dump = s.cleaner.costs(Family::V4).walk_per_entry(2000);
    assert!(from_dump.is_some_and(|w| w > 0.0), "{from_dump:?}");
    // The first decision after it compares real figures, with no probe in between.
    t.endpoints
        .insert("dns".into(), vec![ep("10.244.0.5", 5353)]);
    let r = pass(&mut s, &t, false);
    let e = r.estimate.expect("estimated from the full pass");
    assert!(e.targeted_seconds > 0.0 && e.full_seconds > 0.0, "{r:?}");
    // One walk against a pass that dumped and filled every entry: targeted on any load.
    assert_eq!((r.path, r.pairs), (CleanPath::Targeted, 1), "{r:?}");
    // The pair's dump was timed, and its measure replaces the estimate.
    let measured = s.cleaner.costs(Family::V4).walk_per_entry(2000);
    assert!(measured.is_some_and(|w| w > 0.0) && measured != from_dump);
}

/// A service that dropped to zero serving endpoints, and one that was deleted, lose every flow
/// to their VIPs from v1.37 (the deleted one ahead of upstream), whichever path the pass
/// takes; node-port flows stay (matched by port alone, they could be anyone's). v1.36 keeps
/// them all.
#[test]
fn flows_of_a_service_without_endpoints_or_deleted_go_on_either_path() {
    for k8s in [KubernetesVersion::NEWEST, KubernetesVersion::OLDEST] {
        for full in [false, true] {
            let ns = Netns::new();
            let mut s = open(&ns);
            let mut dns = svc("dns", "10.96.0.10", 53, 30053);
            dns.external_ips = vec![ip("192.0.2.10")];
            let mut t = Tables {
                services: vec![dns, svc("gone", "10.96.0.30", 53, 0)],
                endpoints: HashMap::from([
                    (
                        "dns".to_string(),
                        vec![ep("10.244.0.5", 5353), ep("10.244.0.6", 5353)],
                    ),
                    ("gone".to_string(), vec![ep("10.244.0.7", 5353)]),
                ]),
                k8s,
            };
            assert_eq!(pass(&mut s, &t, false).path, CleanPath::Full);
            let flows = vec![
                dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
                dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.6", 5353),
                dnat("10.0.0.1", 1002, "192.0.2.10", 53, "10.244.0.5", 5353),
                dnat("10.0.0.1", 1003, "203.0.113.9", 30053, "10.244.0.5", 5353),
                // Foreign traffic to the node port number: not the service's.
                dnat("10.0.0.1", 1004, "203.0.113.9", 30053, "203.0.113.9", 30053),
                dnat("10.0.0.1", 1005, "10.96.0.30", 53, "10.244.0.7", 5353),
                dnat("10.0.0.1", 1006, "203.0.113.10", 9999, "203.0.113.10", 9999),
            ];
            assert_eq!(s.ct.create(Family::V4, &flows).unwrap().ok, 7);
            pin_costs(&mut s, true);
            t.endpoints.insert("dns".into(), vec![]);
            t.services.retain(|s| s.name != "gone");
            t.endpoints.remove("gone");
            let r = pass(&mut s, &t, full);
            let ports: Vec<u16> = left(&mut s.ct).iter().map(|k| k.0).collect();
            let what = format!("{k8s} full={full}: {r:?}");
            if k8s == KubernetesVersion::OLDEST {
                assert_eq!(r.deleted, 0, "{what}");
                assert_eq!(
                    ports,
                    vec![1000, 1001, 1002, 1003, 1004, 1005, 1006],
                    "{what}"
                );
                continue;
            }
            let path = if full {
                CleanPath::Full
            } else {
                CleanPath::Targeted
            };
            assert_eq!(r.path, path, "{what}");
            assert_eq!((r.stale, r.deleted, r.failed), (4, 4, 0), "{what}");
            assert_eq!(ports, vec![1003, 1004, 1006], "{what}");

            // Deleted frontends count once: traffic to the old VIP afterwards is no service's.
            s.ct.create(
                Family::V4,
                &[dnat("10.0.0.1", 1007, "10.96.0.30", 53, "10.96.0.30", 53)],
            )
            .unwrap();
            assert_eq!(pass(&mut s, &t, true).deleted, 0);
        }
    }
}

/// A pass that does not get through keeps the deleted frontends for the next one.
#[test]
fn deleted_frontends_outlive_an_incomplete_pass() {
    let ns = Netns::new();
    let mut s = open(&ns);
    let mut t = Tables::new(
        vec![svc("gone", "10.96.0.30", 53, 0)],
        HashMap::from([("gone".to_string(), vec![ep("10.244.0.7", 5353)])]),
    );
    pass(&mut s, &t, false);
    t.services.clear();
    t.endpoints.clear();
    s.ct.faults_mut().dump_intr = kubenode_conntrack::MAX_DUMP_ATTEMPTS;
    assert!(pass(&mut s, &t, false).partial);
    let flow = dnat("10.0.0.1", 1000, "10.96.0.30", 53, "10.244.0.7", 5353);
    s.ct.create(Family::V4, &[flow]).unwrap();
    let r = pass(&mut s, &t, false);
    assert_eq!(r.full_reason, Some(FullReason::PreviousIncomplete));
    assert_eq!((r.stale, r.deleted), (1, 1), "{r:?}");
    assert!(left(&mut s.ct).is_empty());
}
