//! Table stats against the real kernel and conntrack-tools, in a namespace of their own.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::{dns_flows, Netns};
use kubenode_conntrack::Family;

/// `conntrack -C` or `conntrack -S` in `ns`.
fn conntrack(ns: &Netns, arg: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.name, "conntrack", arg])
        .output()
        .expect("run conntrack");
    assert!(out.status.success(), "conntrack {arg}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `conntrack -S`: one map of `name=value` per line (`chaintoolong` is its spelling).
fn conntrack_s(ns: &Netns) -> Vec<HashMap<String, u64>> {
    conntrack(ns, "-S")
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.parse().expect("number")))
                .collect()
        })
        .collect()
}

#[test]
fn stats_match_conntrack_tools() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let r = ct.create(Family::V4, &dns_flows(1_000)).unwrap();
    assert_eq!(r.ok, 1_000);
    let s = ct.stats().unwrap();
    assert_eq!(s.count, 1_000);
    assert_eq!(conntrack(&ns, "-C").trim(), "1000");
    let max = std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_max").unwrap();
    assert_eq!(s.max.to_string(), max.trim());
    assert_eq!(ct.table_count().unwrap(), 1_000);

    let tools = conntrack_s(&ns);
    assert_eq!(s.per_cpu.len(), tools.len());
    let mut inserted = 0u64;
    for (mine, theirs) in s.per_cpu.iter().zip(&tools) {
        let pairs = [
            ("cpu", mine.cpu),
            ("found", mine.found),
            ("invalid", mine.invalid),
            ("insert", mine.insert),
            ("insert_failed", mine.insert_failed),
            ("drop", mine.drop),
            ("early_drop", mine.early_drop),
            ("error", mine.error),
            ("search_restart", mine.search_restart),
            ("clash_resolve", mine.clash_resolve),
            ("chaintoolong", mine.chain_toolong),
        ];
        for (name, v) in pairs {
            assert_eq!(
                theirs.get(name),
                Some(&u64::from(v)),
                "{name} of {theirs:?}"
            );
        }
        inserted += u64::from(mine.insert);
    }
    assert_eq!(s.total.insert, inserted as f64);
}
