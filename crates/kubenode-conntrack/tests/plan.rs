//! The decision of a cleanup pass on plain values: no kernel, no socket.

mod common;

use std::collections::HashMap;

use common::{dnat, ep, ip, svc};
use kubenode_conntrack::{
    plan, CleanOptions, CleanPath, CostModel, Costs, DumpFilter, DumpKind, Endpoint, Family,
    FlushSupport, FullReason, KubernetesVersion, LastPass, Plan, ServicePort, StaleMatcher,
    IPPROTO_UDP,
};

fn tables(services: &[ServicePort], eps: &[(&str, Vec<Endpoint>)]) -> StaleMatcher {
    let eps: HashMap<String, Vec<Endpoint>> = eps
        .iter()
        .map(|(n, e)| (n.to_string(), e.clone()))
        .collect();
    StaleMatcher::build(Family::V4, services, &eps, KubernetesVersion::NEWEST).unwrap()
}

/// dns (VIP and node port) served by `backends`.
fn dns(backends: &[&str]) -> StaleMatcher {
    let eps = backends.iter().map(|b| ep(b, 5353)).collect();
    tables(&[svc("dns", "10.96.0.10", 53, 30053)], &[("dns", eps)])
}

/// A walk of 1 µs per entry against a full pass of 1 ms per entry: targeted wins.
fn cheap_walks() -> CostModel {
    let mut m = CostModel::default();
    m.record_walk(1e-3, 1000);
    m.record_full(1.0, 1000);
    m
}

fn costs(model: &CostModel) -> Costs<'_> {
    Costs {
        flush_support: FlushSupport::Supported,
        model,
        pinned: None,
    }
}

fn decide<'a>(prev: &LastPass, now: &'a StaleMatcher, opts: CleanOptions) -> Plan<'a> {
    plan(prev, now, opts, costs(&cheap_walks()), || Some(1000))
}

fn full_of(p: &Plan<'_>) -> Option<FullReason> {
    (p.path == CleanPath::Full)
        .then_some(p.full_reason)
        .flatten()
}

const WHOLE: DumpFilter = DumpFilter {
    proto: Some(IPPROTO_UDP),
    orig_dst: None,
    orig_dst_port: None,
    reply_src: None,
    reply_src_port: None,
};

#[test]
fn a_full_pass_dumps_the_rules_protocol_once() {
    let now = dns(&["10.244.0.5"]);
    let opts = CleanOptions::default();
    let p = decide(&LastPass::None, &now, opts);
    assert_eq!(full_of(&p), Some(FullReason::First));
    assert_eq!(p.dumps, vec![(DumpKind::Table, WHOLE)]);
    assert_eq!(p.estimate, None);
    let done = LastPass::Done(now.clone());
    let asked = CleanOptions { full: true, ..opts };
    assert_eq!(
        full_of(&decide(&done, &now, asked)),
        Some(FullReason::Requested)
    );
    let dry = CleanOptions {
        dry_run: true,
        ..opts
    };
    assert_eq!(full_of(&decide(&done, &now, dry)), Some(FullReason::DryRun));
    let failed = LastPass::Incomplete(None);
    assert_eq!(
        full_of(&decide(&failed, &now, opts)),
        Some(FullReason::PreviousIncomplete)
    );
}

#[test]
fn nothing_changed_sends_no_request() {
    let now = dns(&["10.244.0.5"]);
    let p = plan(
        &LastPass::Done(now.clone()),
        &now,
        CleanOptions::default(),
        costs(&cheap_walks()),
        || unreachable!("an unchanged pass needs no entry count"),
    );
    assert_eq!((p.path, p.full_reason), (CleanPath::Unchanged, None));
    assert!(p.dumps.is_empty());
}

#[test]
fn a_removed_backend_is_one_pair_dump_per_frontend_key() {
    let prev = LastPass::Done(dns(&["10.244.0.5", "10.244.0.6"]));
    let now = dns(&["10.244.0.5"]);
    let p = decide(&prev, &now, CleanOptions::default());
    assert_eq!(p.path, CleanPath::Targeted);
    let gone = |orig_dst, port| DumpFilter {
        proto: Some(IPPROTO_UDP),
        orig_dst,
        orig_dst_port: Some(port),
        reply_src: Some(ip("10.244.0.6")),
        reply_src_port: Some(5353),
    };
    let mut dumps = p.dumps.clone();
    dumps.sort_by_key(|(_, f)| f.orig_dst.is_none());
    assert_eq!(
        dumps,
        vec![
            (DumpKind::Pair, gone(Some(ip("10.96.0.10")), 53)),
            (DumpKind::Pair, gone(None, 30053)),
        ]
    );
    let e = p.estimate.expect("a cost decision");
    assert!(e.targeted_seconds < e.full_seconds, "{e:?}");
    // The flows those dumps return are decided by the new tables.
    let to_gone = dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.6", 5353);
    let to_kept = dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.5", 5353);
    assert!(p.tables.is_stale(&to_gone) && !p.tables.is_stale(&to_kept));
}

#[test]
fn costs_kernel_support_and_a_pin_choose_the_path() {
    let prev = LastPass::Done(dns(&["10.244.0.5", "10.244.0.6"]));
    let now = dns(&["10.244.0.5"]);
    let opts = CleanOptions::default();
    let cheap = cheap_walks();
    let mut dear = CostModel::default();
    dear.record_walk(1.0, 1000);
    dear.record_full(1e-3, 1000);
    let with = |model, flush_support, pinned, table| {
        let c = Costs {
            flush_support,
            model,
            pinned,
        };
        let p = plan(&prev, &now, opts, c, || table);
        (p.path, p.full_reason, p.estimate.is_some())
    };
    let (yes, no) = (FlushSupport::Supported, FlushSupport::Unsupported);
    let full = |r| (CleanPath::Full, Some(r), false);
    let targeted = (CleanPath::Targeted, None, true);
    assert_eq!(with(&cheap, yes, None, Some(1000)), targeted);
    assert_eq!(
        with(&dear, yes, None, Some(1000)),
        (CleanPath::Full, Some(FullReason::Cost), true)
    );
    // Nothing measured yet, or no entry count: full.
    let none = CostModel::default();
    assert_eq!(with(&none, yes, None, Some(1000)), full(FullReason::Cost));
    assert_eq!(with(&cheap, yes, None, None), full(FullReason::Cost));
    assert_eq!(
        with(&cheap, no, None, Some(1000)),
        full(FullReason::Unsupported)
    );
    // A pin overrides the measures, never the kernel or the previous pass.
    assert_eq!(with(&dear, yes, Some(true), Some(1000)), targeted);
    assert_eq!(
        with(&cheap, yes, Some(false), Some(1000)),
        (CleanPath::Full, Some(FullReason::Cost), true)
    );
    assert_eq!(
        with(&cheap, no, Some(true), Some(1000)),
        full(FullReason::Unsupported)
    );
}

#[test]
fn a_new_frontend_needs_no_filtered_delete_support() {
    let prev = LastPass::Done(dns(&["10.244.0.5"]));
    let mut services = vec![svc("dns", "10.96.0.10", 53, 30053)];
    services.push(svc("ntp", "10.96.0.20", 123, 0));
    let now = tables(
        &services,
        &[
            ("dns", vec![ep("10.244.0.5", 5353)]),
            ("ntp", vec![ep("10.244.0.8", 123)]),
        ],
    );
    let model = cheap_walks();
    let c = Costs {
        flush_support: FlushSupport::Unsupported,
        ..costs(&model)
    };
    let p = plan(&prev, &now, CleanOptions::default(), c, || Some(1000));
    assert_eq!(p.path, CleanPath::Targeted);
    let frontend = DumpFilter {
        proto: Some(IPPROTO_UDP),
        orig_dst: Some(ip("10.96.0.20")),
        orig_dst_port: Some(123),
        ..Default::default()
    };
    assert_eq!(p.dumps, vec![(DumpKind::Frontend, frontend)]);
}

/// From v1.37 the frontends of a deleted service are in the pass's tables, with no backend,
/// whichever path it takes; after an incomplete pass they come from that pass's tables.
#[test]
fn the_tables_of_a_pass_carry_the_deleted_frontends() {
    let old = dns(&["10.244.0.5"]);
    let now = tables(&[], &[]);
    let to_old_vip = dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353);
    assert!(!now.is_stale(&to_old_vip));
    for prev in [
        LastPass::Done(old.clone()),
        LastPass::Incomplete(Some(old.clone())),
    ] {
        for full in [false, true] {
            let opts = CleanOptions {
                full,
                ..Default::default()
            };
            let p = decide(&prev, &now, opts);
            assert!(p.tables.is_stale(&to_old_vip), "{prev:?} full={full}");
        }
    }
    let p = decide(&LastPass::Done(old), &now, CleanOptions::default());
    let frontend = DumpFilter {
        proto: Some(IPPROTO_UDP),
        orig_dst: Some(ip("10.96.0.10")),
        orig_dst_port: Some(53),
        ..Default::default()
    };
    assert_eq!(p.path, CleanPath::Targeted);
    assert_eq!(
        p.dumps,
        vec![(
            DumpKind::Pair,
            DumpFilter {
                reply_src: Some(ip("10.244.0.5")),
                reply_src_port: Some(5353),
                ..frontend
            }
        ),],
        "a known key whose backend went: its pair"
    );
}
