//! The general filter against the real kernel: what each field selects, what the kernel
//! narrows before the rule runs again here, deletes and flushes by filter.

mod common;

use common::{dnat, ip, tcp, Netns};
use kubenode_conntrack::{
    AddrMatch, Conntrack, DirectionFilter, Family, Flow, FlowFilter, FlushPath, FlushSupport,
    Masked,
};

fn cidr(s: &str) -> Option<AddrMatch> {
    Some(AddrMatch::parse("test", s).unwrap())
}

/// Source ports of the flows `filter` lists, sorted, and how many the kernel sent.
fn ports(ct: &mut Conntrack, family: Family, filter: &FlowFilter) -> (Vec<u16>, u64) {
    let (flows, s) = ct.list(family, filter).unwrap();
    let mut p: Vec<u16> = flows.iter().map(|f| f.orig.src_port).collect();
    p.sort();
    (p, s.received)
}

fn table() -> Vec<Flow> {
    let mut marked = dnat("10.0.0.2", 1002, "10.96.0.10", 53, "10.244.1.6", 5353);
    marked.mark = 0x1234;
    let mut zoned = dnat("10.0.0.3", 1003, "10.96.0.10", 53, "10.244.1.6", 5353);
    zoned.zone = 7;
    zoned.mark = 0x1200;
    vec![
        dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.5", 5353),
        marked,
        zoned,
        tcp("10.1.0.4", 1004, "10.96.0.11", 80, "10.244.0.5", 8080),
        tcp("10.1.0.5", 1005, "10.96.0.11", 443, "10.244.2.9", 8443),
    ]
}

#[test]
fn each_field_selects_its_flows_and_the_kernel_narrows_exact_ones() {
    let ns = Netns::new();
    let mut ct = ns.open();
    assert_eq!(ct.create(Family::V4, &table()).unwrap().ok, 5);
    let v6 = [dnat("fd00::1", 2001, "fd00:96::a", 53, "fd00:244::5", 5353)];
    assert_eq!(ct.create(Family::V6, &v6).unwrap().ok, 1);
    let dir = |src, dst| DirectionFilter {
        src,
        dst,
        ..Default::default()
    };
    // (filter, selected source ports, entries the kernel sends when it filters)
    let cases: Vec<(FlowFilter, Vec<u16>, Option<u64>)> = vec![
        (
            FlowFilter::default(),
            vec![1001, 1002, 1003, 1004, 1005],
            Some(5),
        ),
        (
            FlowFilter {
                proto: Some(6),
                ..Default::default()
            },
            vec![1004, 1005],
            Some(2),
        ),
        (
            FlowFilter {
                orig: dir(cidr("10.1.0.4"), None),
                ..Default::default()
            },
            vec![1004],
            Some(1),
        ),
        // A CIDR is filtered here only: the kernel sends the whole family.
        (
            FlowFilter {
                orig: dir(cidr("10.1.0.0/16"), None),
                ..Default::default()
            },
            vec![1004, 1005],
            Some(5),
        ),
        (
            FlowFilter {
                orig: dir(None, cidr("10.96.0.11/32")),
                ..Default::default()
            },
            vec![1004, 1005],
            Some(2),
        ),
        (
            FlowFilter {
                reply: dir(cidr("10.244.1.6"), None),
                ..Default::default()
            },
            vec![1002, 1003],
            Some(2),
        ),
        (
            FlowFilter {
                reply: dir(cidr("10.244.0.0/24"), None),
                ..Default::default()
            },
            vec![1001, 1004],
            Some(5),
        ),
        (
            FlowFilter {
                reply: dir(None, cidr("10.0.0.2")),
                ..Default::default()
            },
            vec![1002],
            Some(1),
        ),
        (
            FlowFilter {
                proto: Some(17),
                orig: DirectionFilter {
                    src_port: Some(1003),
                    ..Default::default()
                },
                ..Default::default()
            },
            vec![1003],
            Some(1),
        ),
        (
            FlowFilter {
                proto: Some(6),
                orig: DirectionFilter {
                    dst_port: Some(443),
                    ..Default::default()
                },
                ..Default::default()
            },
            vec![1005],
            Some(1),
        ),
        (
            FlowFilter {
                proto: Some(6),
                reply: DirectionFilter {
                    src_port: Some(8080),
                    ..Default::default()
                },
                ..Default::default()
            },
            vec![1004],
            Some(1),
        ),
        (
            FlowFilter {
                proto: Some(17),
                reply: DirectionFilter {
                    dst_port: Some(1002),
                    ..Default::default()
                },
                ..Default::default()
            },
            vec![1002],
            Some(1),
        ),
        (
            FlowFilter {
                zone: Some(7),
                ..Default::default()
            },
            vec![1003],
            Some(1),
        ),
        (
            FlowFilter {
                mark: Some(Masked {
                    value: 0x1234,
                    mask: u32::MAX,
                }),
                ..Default::default()
            },
            vec![1002],
            Some(1),
        ),
        (
            FlowFilter {
                mark: Some(Masked {
                    value: 0x1200,
                    mask: 0xff00,
                }),
                ..Default::default()
            },
            vec![1002, 1003],
            Some(2),
        ),
        // No flow has labels; labels are filtered here only.
        (
            FlowFilter {
                labels: Some(Masked { value: 1, mask: 1 }),
                ..Default::default()
            },
            vec![],
            Some(5),
        ),
    ];
    for (i, (filter, want, received)) in cases.iter().enumerate() {
        let (got, sent) = ports(&mut ct, Family::V4, filter);
        assert_eq!(&got, want, "case {i}: {filter:?}");
        if let Some(r) = received {
            assert_eq!(sent, *r, "case {i}: entries the kernel sent for {filter:?}");
        }
    }
    let (got, _) = ports(
        &mut ct,
        Family::V6,
        &FlowFilter {
            orig: dir(cidr("fd00::/64"), None),
            ..Default::default()
        },
    );
    assert_eq!(got, vec![2001]);
    let bad = FlowFilter {
        orig: dir(cidr("fd00::1"), None),
        ..Default::default()
    };
    assert!(ct.list(Family::V4, &bad).is_err());
}

#[test]
fn delete_and_flush_by_filter_leave_the_rest() {
    let ns = Netns::new();
    let mut ct = ns.open();
    ct.create(Family::V4, &table()).unwrap();
    let v6 = [dnat("fd00::1", 2001, "fd00:96::a", 53, "fd00:244::5", 5353)];
    ct.create(Family::V6, &v6).unwrap();

    let by_backend = FlowFilter {
        reply: DirectionFilter {
            src: cidr("10.244.1.0/24"),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = ct.delete_matching(Family::V4, &by_backend).unwrap();
    assert_eq!(
        (r.path, r.matched, r.deleted, r.failed),
        (FlushPath::DumpDelete, 2, Some(2), 0)
    );
    let all = FlowFilter::default();
    assert_eq!(ports(&mut ct, Family::V4, &all).0, vec![1001, 1004, 1005]);

    // By mark: the kernel flushes it (every kernel with ctnetlink flush filtering).
    ct.create(Family::V4, &table()[1..3]).unwrap();
    let mark = FlowFilter {
        mark: Some(Masked {
            value: 0x1234,
            mask: u32::MAX,
        }),
        ..Default::default()
    };
    let r = ct.flush(Family::V4, &mark).unwrap();
    assert_eq!((r.path, r.deleted), (FlushPath::Kernel, None), "{r:?}");
    assert_eq!(
        ports(&mut ct, Family::V4, &all).0,
        vec![1001, 1003, 1004, 1005]
    );

    // A CIDR has no kernel form: dump and delete.
    let cidr_filter = FlowFilter {
        orig: DirectionFilter {
            src: cidr("10.1.0.0/16"),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = ct.flush(Family::V4, &cidr_filter).unwrap();
    assert_eq!(
        (r.path, r.deleted),
        (FlushPath::DumpDelete, Some(2)),
        "{r:?}"
    );
    assert_eq!(ports(&mut ct, Family::V4, &all).0, vec![1001, 1003]);

    // A zone needs CTA_FILTER on flush (kernels since 2024): the kernel's flush there, else
    // dump and delete.
    let zone = FlowFilter {
        zone: Some(7),
        ..Default::default()
    };
    let r = ct.flush(Family::V4, &zone).unwrap();
    let (path, deleted) = match ct.flush_support() {
        FlushSupport::Supported => (FlushPath::Kernel, None),
        _ => (FlushPath::DumpDelete, Some(1)),
    };
    assert_eq!((r.path, r.deleted), (path, deleted), "{r:?}");
    assert_eq!(ports(&mut ct, Family::V4, &all).0, vec![1001]);

    // Unfiltered: the family's table only.
    let r = ct.flush(Family::V4, &all).unwrap();
    assert_eq!((r.path, r.deleted), (FlushPath::Kernel, None), "{r:?}");
    assert!(ports(&mut ct, Family::V4, &all).0.is_empty());
    assert_eq!(ports(&mut ct, Family::V6, &all).0, vec![2001]);
    assert_eq!(ns.conntrack_l("ipv6").len(), 1);
}

#[test]
fn purge_removes_every_flow_of_an_address_in_any_protocol() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let mut flows = table();
    // A flow the pod opened itself: its address as the original source.
    flows.push(tcp(
        "10.244.0.5",
        1006,
        "10.96.0.1",
        443,
        "192.168.0.1",
        6443,
    ));
    ct.create(Family::V4, &flows).unwrap();
    for ips in [
        vec![ip("10.244.0.5")],
        vec![ip("10.244.0.5"), ip("10.9.9.9"), ip("10.9.9.8")],
    ] {
        let r = ct.purge_ips(Family::V4, &ips).unwrap();
        assert_eq!((r.deleted, r.failed), (Some(3), 0), "{ips:?}: {r:?}");
        assert_eq!(
            ports(&mut ct, Family::V4, &FlowFilter::default()).0,
            vec![1002, 1003, 1005]
        );
        ct.create(Family::V4, &[flows[0], flows[3], flows[5]])
            .unwrap();
    }
    assert!(ct.purge_ips(Family::V4, &[ip("fd00::1")]).is_err());
}

mod kernel_never_drops_a_match {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::TestRunner;
    use std::cell::RefCell;

    fn addr() -> impl Strategy<Value = Option<AddrMatch>> {
        let ips = [
            "10.0.0.1",
            "10.0.0.2",
            "10.96.0.10",
            "10.96.0.11",
            "10.244.0.5",
            "10.1.0.4",
        ];
        prop_oneof![
            Just(None),
            (0..ips.len(), 0u8..=32)
                .prop_map(move |(i, p)| Some(AddrMatch::new(ip(ips[i]), p.max(16)).unwrap())),
            (0..ips.len()).prop_map(move |i| Some(AddrMatch::host(ip(ips[i])))),
        ]
    }

    fn port() -> impl Strategy<Value = Option<u16>> {
        prop_oneof![
            Just(None),
            prop::sample::select(vec![53u16, 80, 443, 1001, 1004, 5353, 8080]).prop_map(Some)
        ]
    }

    fn dir() -> impl Strategy<Value = DirectionFilter> {
        (addr(), addr(), port(), port()).prop_map(|(src, dst, src_port, dst_port)| {
            DirectionFilter {
                src,
                dst,
                src_port,
                dst_port,
            }
        })
    }

    fn filter() -> impl Strategy<Value = FlowFilter> {
        (
            prop_oneof![Just(None), Just(Some(6u8)), Just(Some(17u8))],
            dir(),
            dir(),
            prop_oneof![Just(None), Just(Some(0u16)), Just(Some(7u16))],
            prop_oneof![
                Just(None),
                Just(Some(Masked {
                    value: 0x1200,
                    mask: 0xff00
                })),
                Just(Some(Masked {
                    value: 0,
                    mask: u32::MAX
                }))
            ],
        )
            .prop_map(|(proto, mut orig, mut reply, zone, mark)| {
                if proto.is_none() {
                    // Ports need a protocol: keep the case valid.
                    for d in [&mut orig, &mut reply] {
                        d.src_port = None;
                        d.dst_port = None;
                    }
                }
                FlowFilter {
                    proto,
                    orig,
                    reply,
                    zone,
                    mark,
                    labels: None,
                }
            })
    }

    #[test]
    fn listing_equals_the_rule_over_the_whole_table() {
        // One namespace and handle for every case (the table is only read), owned by the test so
        // the namespace is deleted when it ends: a static would never be dropped.
        let ns = Netns::new();
        let mut ct = ns.open();
        ct.create(Family::V4, &table()).unwrap();
        let all = ct.list(Family::V4, &FlowFilter::default()).unwrap().0;
        let ct = RefCell::new(ct);
        let config = ProptestConfig {
            cases: 64,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        TestRunner::new(config)
            .run(&filter(), |f| {
                let mut want: Vec<u16> = all
                    .iter()
                    .filter(|x| f.matches(x))
                    .map(|x| x.orig.src_port)
                    .collect();
                want.sort();
                prop_assert_eq!(ports(&mut ct.borrow_mut(), Family::V4, &f).0, want);
                Ok(())
            })
            .unwrap();
    }
}
