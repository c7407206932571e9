//! The event-fed flow index against the real kernel: built by the first (full) pass, kept by
//! events afterwards, and answering later passes with exact deletes and no dump.

mod common;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{dnat, ep, svc, Netns};
use kubenode_conntrack::{
    CleanOptions, CleanPath, CleanReport, Conntrack, DumpFilter, Endpoint, Family, FullReason,
    KubernetesVersion, Progress, Resync, Session, StaleMatcher,
};

fn matcher(backends: &[&str]) -> StaleMatcher {
    let eps: Vec<Endpoint> = backends.iter().map(|b| ep(b, 5353)).collect();
    let endpoints = HashMap::from([("dns".to_string(), eps)]);
    let services = [svc("dns", "10.96.0.10", 53, 30053)];
    StaleMatcher::build(Family::V4, &services, &endpoints, KubernetesVersion::NEWEST).unwrap()
}

fn pass(s: &mut Session, m: &StaleMatcher) -> CleanReport {
    let progress = Progress::default();
    s.cleaner
        .clean(&mut s.ct, Family::V4, m, CleanOptions::default(), &progress)
        .unwrap()
}

/// Client ports of the UDP entries left, sorted.
fn left(ct: &mut Conntrack) -> Vec<u16> {
    let udp = DumpFilter {
        proto: Some(17),
        ..Default::default()
    };
    let mut p: Vec<u16> = ct
        .list(Family::V4, &udp)
        .unwrap()
        .0
        .iter()
        .map(|f| f.orig.src_port)
        .collect();
    p.sort();
    p
}

/// Waits until the index holds `n` flows (its feed runs on its own thread).
fn settle(s: &Session, n: usize) {
    let x = s.cleaner.index().unwrap().clone();
    let start = Instant::now();
    while x.lock().unwrap().len() != n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "index holds {}",
            x.lock().unwrap().len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn flows_known_only_from_events_are_cleaned_without_a_dump() {
    let ns = Netns::new();
    let mut s = Session::new(ns.open());
    let (_, feed) = s.enable_index(Some(&ns.path()), 10_000, None).unwrap();
    let before = [
        dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.6", 5353),
        dnat("10.0.0.1", 1002, "203.0.113.9", 30053, "10.244.0.6", 5353),
    ];
    assert_eq!(s.ct.create(Family::V4, &before).unwrap().ok, 3);
    let both = matcher(&["10.244.0.5", "10.244.0.6"]);
    let r = pass(&mut s, &both);
    // The first pass is full (as without an index) and builds it.
    assert_eq!(
        (r.path, r.full_reason),
        (CleanPath::Full, Some(FullReason::First)),
        "{r:?}"
    );
    settle(&s, 3);

    // Created after the dump: the index knows them from NEW events only.
    let after = [
        dnat("10.0.0.2", 2000, "10.96.0.10", 53, "10.244.0.6", 5353),
        dnat("10.0.0.2", 2001, "10.96.0.10", 53, "10.244.0.5", 5353),
        dnat("10.0.0.2", 2002, "198.51.100.7", 30053, "10.244.0.6", 5353),
        // Unrelated: never stale.
        dnat("10.0.0.2", 2003, "203.0.113.10", 9999, "203.0.113.10", 9999),
    ];
    assert_eq!(s.ct.create(Family::V4, &after).unwrap().ok, 4);
    // One gone by itself: its DESTROY event takes it out of the index.
    assert_eq!(s.ct.delete(Family::V4, &before[..1]).unwrap().ok, 1);
    settle(&s, 6);

    let events = || feed.events.load(Ordering::Relaxed);
    let seen = events();
    let r = pass(&mut s, &matcher(&["10.244.0.5"]));
    assert_eq!(r.path, CleanPath::Indexed, "{r:?}");
    assert_eq!(
        (r.listed, r.stale, r.deleted, r.not_found, r.failed),
        (0, 4, 4, 0, 0),
        "{r:?}"
    );
    assert_eq!(r.pairs, 3, "VIP pair, two node-port pairs: {r:?}");
    assert_eq!(left(&mut s.ct), vec![2001, 2003]);
    // The pass left the DESTROY group while it deleted: the kernel sent no event for its own
    // deletes, and the group is joined again afterwards (an outside delete is seen).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(events(), seen, "DESTROY events of the pass's own deletes");
    assert_eq!(s.ct.delete(Family::V4, &after[1..2]).unwrap().ok, 1);
    settle(&s, 1);
    // Removed from the index at once, whether or not their events came yet.
    let r = pass(&mut s, &matcher(&["10.244.0.5"]));
    assert_eq!((r.path, r.stale), (CleanPath::Indexed, 0), "{r:?}");
}

#[test]
fn lost_events_make_the_next_pass_full_and_it_still_cleans() {
    let ns = Netns::new();
    let mut s = Session::new(ns.open());
    // The smallest buffer the kernel grants: a burst of events overflows it.
    s.enable_index(Some(&ns.path()), 100_000, Some(1)).unwrap();
    let both = matcher(&["10.244.0.5", "10.244.0.6"]);
    assert_eq!(pass(&mut s, &both).path, CleanPath::Full);
    let idx = s.cleaner.index().unwrap().clone();
    assert_eq!(idx.lock().unwrap().state(Family::V4), Ok(()));
    let flows: Vec<_> = (0..3000u16)
        .map(|i| {
            let b = if i % 2 == 0 {
                "10.244.0.5"
            } else {
                "10.244.0.6"
            };
            dnat("10.0.0.3", 10_000 + i, "10.96.0.10", 53, b, 5353)
        })
        .collect();
    assert_eq!(s.ct.create(Family::V4, &flows).unwrap().ok, 3000);
    let start = Instant::now();
    while idx.lock().unwrap().state(Family::V4) != Err(Resync::EventsLost) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no loss reported"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let r = pass(&mut s, &matcher(&["10.244.0.5"]));
    assert_eq!(
        (r.path, r.full_reason),
        (CleanPath::Full, Some(FullReason::IndexResync)),
        "{r:?}"
    );
    assert_eq!((r.stale, r.deleted), (1500, 1500), "{r:?}");
    assert_eq!(left(&mut s.ct).len(), 1500);
}

#[test]
fn an_index_is_refused_where_the_kernel_sends_no_events() {
    let ns = Netns::new();
    let set = |v: &str| {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &ns.name, "sysctl", "-qw"])
            .arg(format!("net.netfilter.nf_conntrack_events={v}"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let mut s = Session::new(ns.open());
    set("0");
    let e = s.enable_index(Some(&ns.path()), 10_000, None).unwrap_err();
    assert!(e.to_string().contains("nf_conntrack_events is 0"), "{e}");
    assert!(s.cleaner.index().is_none());
    set("1");
    s.enable_index(Some(&ns.path()), 10_000, None).unwrap();
}
