//! The event socket against the real kernel, in a network namespace each test creates.

mod common;

use std::time::Duration;

use common::{dnat, dns_flows, ip, tcp, Netns};
use kubenode_conntrack::{
    DumpFilter, EventKind, EventSocket, Family, Flow, FlowEvent, Groups, ReadOutcome,
};

fn open(ns: &Netns, groups: Groups, rcvbuf: Option<usize>) -> EventSocket {
    EventSocket::open(Some(&ns.path()), groups, rcvbuf).unwrap()
}

/// Reads until `n` events arrived or nothing came for half a second.
fn collect(s: &mut EventSocket, n: usize) -> (Vec<FlowEvent>, bool) {
    let mut out = Vec::new();
    let mut lost = false;
    while out.len() < n {
        let r = s.read(&mut out, 256, Duration::from_millis(500)).unwrap();
        lost |= r.lost;
        if r.events == 0 && !r.lost {
            break;
        }
    }
    (out, lost)
}

fn sport_kinds(events: &[FlowEvent]) -> Vec<(u16, EventKind)> {
    let mut v: Vec<_> = events
        .iter()
        .map(|e| (e.flow.orig.src_port, e.kind))
        .collect();
    v.sort_by_key(|(p, k)| (*p, *k as u8));
    v
}

#[test]
fn every_flow_once_as_new_and_once_as_destroy() {
    let ns = Netns::new();
    let mut s = open(&ns, Groups::ALL, None);
    let mut ct = ns.open();
    let flows: Vec<Flow> = (0..20)
        .map(|i| dnat("10.0.0.1", 1000 + i, "10.96.0.10", 53, "10.244.0.5", 5353))
        .collect();
    assert_eq!(ct.create(Family::V4, &flows).unwrap().ok, 20);
    let (listed, _) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    assert_eq!(ct.delete(Family::V4, &listed).unwrap().ok, 20);
    let (events, lost) = collect(&mut s, 40);
    assert!(!lost);
    let mut want: Vec<_> = (0..20)
        .flat_map(|i| [(1000 + i, EventKind::New), (1000 + i, EventKind::Destroy)])
        .collect();
    want.sort_by_key(|(p, k)| (*p, *k as u8));
    assert_eq!(sport_kinds(&events), want);
    let e = events.iter().find(|e| e.kind == EventKind::New).unwrap();
    assert_eq!(e.flow.reply.src, Some(ip("10.244.0.5")));
    assert!(e.flow.id.is_some());
    // Nothing more: a read times out empty.
    let mut out = Vec::new();
    let r = s.read(&mut out, 10, Duration::from_millis(50)).unwrap();
    assert_eq!(r, ReadOutcome::default());
}

#[test]
fn only_the_joined_groups_and_the_filtered_protocol_arrive() {
    let ns = Netns::new();
    let destroy_only = Groups {
        new: false,
        update: false,
        destroy: true,
    };
    let mut s = open(&ns, destroy_only, None);
    s.set_filter(DumpFilter {
        proto: Some(6),
        ..Default::default()
    })
    .unwrap();
    assert!(s.kernel_filter());
    let mut ct = ns.open();
    let flows = vec![
        dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
        tcp("10.0.0.1", 1001, "10.96.0.11", 80, "10.244.0.7", 8080),
    ];
    assert_eq!(ct.create(Family::V4, &flows).unwrap().ok, 2);
    let (listed, _) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    ct.delete(Family::V4, &listed).unwrap();
    let (events, _) = collect(&mut s, 2);
    assert_eq!(sport_kinds(&events), vec![(1001, EventKind::Destroy)]);
}

#[test]
fn the_kernel_filter_drops_other_addresses_before_they_fill_the_buffer() {
    let ns = Netns::new();
    // A buffer too small for the unfiltered burst.
    let mut s = open(&ns, Groups::ALL, Some(4096));
    s.set_filter(DumpFilter {
        proto: Some(17),
        orig_dst: Some(ip("10.96.0.99")),
        orig_dst_port: Some(53),
        reply_src: Some(ip("10.244.0.9")),
        reply_src_port: Some(5353),
    })
    .unwrap();
    let mut ct = ns.open();
    assert_eq!(ct.create(Family::V4, &dns_flows(2000)).unwrap().ok, 2000);
    let wanted = dnat("10.0.0.1", 7, "10.96.0.99", 53, "10.244.0.9", 5353);
    assert_eq!(ct.create(Family::V4, &[wanted]).unwrap().ok, 1);
    let (events, lost) = collect(&mut s, 1);
    assert!(!lost, "the filtered burst overflowed the buffer");
    assert_eq!(sport_kinds(&events), vec![(7, EventKind::New)]);
}

#[test]
fn an_overflow_is_reported_and_the_socket_keeps_working() {
    let ns = Netns::new();
    let mut s = open(&ns, Groups::ALL, Some(4096));
    let mut ct = ns.open();
    assert_eq!(ct.create(Family::V4, &dns_flows(2000)).unwrap().ok, 2000);
    let mut out = Vec::new();
    let mut lost = 0;
    loop {
        let r = s.read(&mut out, 4096, Duration::from_millis(200)).unwrap();
        if r.lost {
            lost += 1;
            assert_eq!(r.overflows, lost);
        } else if r.events == 0 {
            break;
        }
    }
    assert!(lost >= 1);
    assert!(out.len() < 2000, "{}", out.len());
    let later = dnat("10.0.0.1", 9, "10.96.0.10", 53, "10.244.0.5", 5353);
    assert_eq!(ct.create(Family::V4, &[later]).unwrap().ok, 1);
    let (events, lost) = collect(&mut s, 1);
    assert!(!lost);
    assert_eq!(sport_kinds(&events), vec![(9, EventKind::New)]);
}

#[test]
fn a_waker_ends_a_blocked_read() {
    let ns = Netns::new();
    let mut s = open(&ns, Groups::ALL, None);
    let w = s.waker();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        w.wake();
    });
    let started = std::time::Instant::now();
    let r = s
        .read(&mut Vec::new(), 10, Duration::from_secs(30))
        .unwrap();
    assert!(r.woken);
    assert!(started.elapsed() < Duration::from_secs(5));
    t.join().unwrap();
}
