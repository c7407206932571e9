//! The trie answers exactly what upstream's linear scan answers, including after removals.

use kubenode_cidr::{prefix_contains_ip, Addr, CidrIndex, DeleteCheck, OrphanScan, Prefix};
use proptest::prelude::*;

/// Upstream's scan, one entry per matching CIDR, names sorted and de-duplicated.
fn scan(objs: &[(String, Vec<String>)], keep: impl Fn(&Prefix) -> bool) -> Vec<String> {
    let mut out: Vec<String> = objs
        .iter()
        .filter(|(_, cidrs)| {
            cidrs
                .iter()
                .filter_map(|c| Prefix::parse(c).ok())
                .any(|p| keep(&p))
        })
        .map(|(n, _)| n.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn v4_prefix() -> impl Strategy<Value = String> {
    // A small address space so that overlaps and containment are frequent.
    (0u32..4, 0u32..256, 20u8..=32).prop_map(|(b, c, bits)| {
        let addr = (10u32 << 24) | (b << 16) | (c << 8);
        Prefix::new(Addr::V4(addr), bits)
            .map(|p| p.masked().to_string())
            .unwrap_or_default()
    })
}

fn v6_prefix() -> impl Strategy<Value = String> {
    (0u128..4, 0u128..65536, 100u8..=128).prop_map(|(b, c, bits)| {
        let addr = (0x2001_0db8u128 << 96) | (b << 20) | (c << 4);
        Prefix::new(Addr::V6(addr), bits)
            .map(|p| p.masked().to_string())
            .unwrap_or_default()
    })
}

fn object() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        v4_prefix().prop_map(|a| vec![a]),
        v6_prefix().prop_map(|a| vec![a]),
        (v4_prefix(), v6_prefix()).prop_map(|(a, b)| vec![a, b]),
        Just(vec!["garbage".to_string()]),
    ]
}

fn addr() -> impl Strategy<Value = Addr> {
    prop_oneof![
        (0u32..4, 0u32..65536).prop_map(|(b, c)| Addr::V4((10u32 << 24) | (b << 16) | c)),
        (0u128..4, 0u128..(1 << 20))
            .prop_map(|(b, c)| Addr::V6((0x2001_0db8u128 << 96) | (b << 20) | c)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn trie_equals_linear_scan(
        objs in proptest::collection::vec(object(), 1..40),
        removals in proptest::collection::vec(0usize..40, 0..10),
        probes in proptest::collection::vec(addr(), 1..30),
        prefixes in proptest::collection::vec(prop_oneof![v4_prefix(), v6_prefix()], 1..10),
    ) {
        let mut ix = CidrIndex::new();
        let mut live: Vec<(String, Vec<String>)> = Vec::new();
        for (i, cidrs) in objs.iter().enumerate() {
            let name = format!("sc-{i}");
            ix.upsert(&name, cidrs);
            live.push((name, cidrs.clone()));
        }
        for r in removals {
            let name = format!("sc-{r}");
            ix.remove(&name);
            live.retain(|(n, _)| *n != name);
        }
        for ip in probes {
            prop_assert_eq!(ix.containing(ip), scan(&live, |p| prefix_contains_ip(p, ip)), "ip {}", ip);
        }
        for q in prefixes {
            let q = Prefix::parse(&q).unwrap();
            prop_assert_eq!(ix.overlapping(&q), scan(&live, |p| p.overlaps(&q)), "overlap {}", q);
            prop_assert_eq!(ix.containing_prefix(&q), scan(&live, |p| p.encloses(&q)), "encloses {}", q);
        }
        // Removing everything prunes the tries back to their two roots.
        for (n, _) in &live {
            ix.remove(n);
        }
        prop_assert_eq!(ix.node_count(), 2);
        prop_assert!(ix.is_empty());
    }
}

#[test]
fn upsert_replaces_and_reports_skipped() {
    let mut ix = CidrIndex::new();
    assert!(ix.upsert("a", &["10.0.0.0/24", "bad"]) == ["bad"]);
    assert_eq!(ix.containing(Addr::parse("10.0.0.1").unwrap()), ["a"]);
    ix.upsert("a", &["10.1.0.0/24"]);
    assert!(ix.containing(Addr::parse("10.0.0.1").unwrap()).is_empty());
    assert_eq!(ix.containing(Addr::parse("10.1.0.1").unwrap()), ["a"]);
    assert!(ix.remove("a"));
    assert!(!ix.remove("a"));
}

fn ips<'a>(v: &'a [(&'a str, &'a str)]) -> Vec<OrphanScan<'a>> {
    v.iter()
        .map(|(n, f)| OrphanScan {
            name: n,
            family_label: Some(f),
        })
        .collect()
}

#[test]
fn can_delete_follows_upstream() {
    let mut bad = Vec::new();
    // Alone with an IP inside: blocked.
    let mut ix = CidrIndex::new();
    ix.upsert("kubernetes", &["192.168.0.0/24", "2001:db8::/64"]);
    let v = [("192.168.0.24", "IPv4")];
    assert_eq!(
        ix.can_delete(
            "kubernetes",
            &["192.168.0.0/24", "2001:db8::/64"],
            &ips(&v),
            &mut bad
        ),
        DeleteCheck::BlockedBy {
            ip: "192.168.0.24".into()
        }
    );
    // Network address and IPv4 broadcast never block; the IPv6 last address does.
    let v = [
        ("192.168.0.0", "IPv4"),
        ("192.168.0.255", "IPv4"),
        ("2001:db8::", "IPv6"),
    ];
    assert_eq!(
        ix.can_delete(
            "kubernetes",
            &["192.168.0.0/24", "2001:db8::/64"],
            &ips(&v),
            &mut bad
        ),
        DeleteCheck::NoOrphans
    );
    let v = [("2001:db8::ffff:ffff:ffff:ffff", "IPv6")];
    assert!(matches!(
        ix.can_delete(
            "kubernetes",
            &["192.168.0.0/24", "2001:db8::/64"],
            &ips(&v),
            &mut bad
        ),
        DeleteCheck::BlockedBy { .. }
    ));
    // A wrong family label hides the IP from its own family's loop (upstream quirk).
    let v = [("192.168.0.24", "IPv6")];
    assert!(matches!(
        ix.can_delete(
            "kubernetes",
            &["192.168.0.0/24", "2001:db8::/64"],
            &ips(&v),
            &mut bad
        ),
        DeleteCheck::BlockedBy { .. }
    ));
    assert_eq!(
        ix.can_delete("kubernetes", &["192.168.0.0/24"], &ips(&v), &mut bad),
        DeleteCheck::NoOrphans
    );
    // A second, overlapping ServiceCIDR holding the IP unblocks it.
    ix.upsert("overlapping", &["192.168.0.0/26"]);
    let v = [("192.168.0.24", "IPv4")];
    assert_eq!(
        ix.can_delete(
            "kubernetes",
            &["192.168.0.0/24", "2001:db8::/64"],
            &ips(&v),
            &mut bad
        ),
        DeleteCheck::NoOrphans
    );
    // A parent for every CIDR: deletable without looking at IPs.
    ix.upsert("parent", &["192.168.0.0/16", "2001:db8::/48"]);
    assert_eq!(
        ix.can_delete(
            "kubernetes",
            &["192.168.0.0/24", "2001:db8::/64"],
            &ips(&v),
            &mut bad
        ),
        DeleteCheck::ContainedInOther
    );
    // A same-prefix twin counts as a parent, even if it is itself being deleted.
    let mut ix = CidrIndex::new();
    ix.upsert("a", &["10.0.0.0/24"]);
    ix.upsert("b", &["10.0.0.0/24"]);
    assert_eq!(
        ix.can_delete("a", &["10.0.0.0/24"], &[], &mut bad),
        DeleteCheck::ContainedInOther
    );
    // Unparsable IPAddress names are reported and skipped.
    ix.remove("b");
    let v = [("not-an-ip", "IPv4"), ("10.0.0.9", "IPv4")];
    assert!(matches!(
        ix.can_delete("a", &["10.0.0.0/24"], &ips(&v), &mut bad),
        DeleteCheck::BlockedBy { .. }
    ));
    assert_eq!(bad, ["not-an-ip"]);
    // No parsable CIDR: upstream's hasParent stays true.
    assert_eq!(
        ix.can_delete("x", &["junk"], &ips(&v), &mut Vec::new()),
        DeleteCheck::ContainedInOther
    );
}

#[test]
fn can_delete_absent_family_label_never_matches() {
    // An unparsable CIDR has the empty family; upstream's `ip-family=` selector still needs the
    // label to be present, so an IPAddress without it is not looked at.
    let mut ix = CidrIndex::new();
    ix.upsert("a", &["junk", "10.0.0.0/24"]);
    let absent = [OrphanScan {
        name: "10.0.0.9",
        family_label: None,
    }];
    assert_eq!(
        ix.can_delete("a", &["junk", "10.0.0.0/24"], &absent, &mut Vec::new()),
        DeleteCheck::NoOrphans
    );
    // A label present with the empty value does match the empty family, as upstream.
    let empty = [OrphanScan {
        name: "10.0.0.9",
        family_label: Some(""),
    }];
    assert_eq!(
        ix.can_delete("a", &["junk", "10.0.0.0/24"], &empty, &mut Vec::new()),
        DeleteCheck::BlockedBy {
            ip: "10.0.0.9".into()
        }
    );
}

#[test]
fn holders_lists_every_ip_inside_with_its_taker() {
    let mut bad = Vec::new();
    let mut ix = CidrIndex::new();
    let cidrs = ["10.0.0.0/24", "2001:db8::/64"];
    ix.upsert("gone", &cidrs);
    ix.upsert("small", &["10.0.0.0/28"]);
    ix.upsert("other", &["10.0.0.0/26"]);
    let v = [
        ("10.0.0.5", "IPv4"),   // inside small and other
        ("10.1.0.5", "IPv4"),   // outside: not a holder
        ("10.0.0.100", "IPv4"), // only in gone
        ("2001:db8::7", "IPv6"),
        // Wrong label: seen by the IPv6 CIDR's loop, as canDelete sees it.
        ("10.0.0.200", "IPv6"),
        ("not-an-ip", "IPv4"),
    ];
    let h = ix.holders("gone", &cidrs, &ips(&v), &mut bad);
    let got: Vec<(usize, &str, Vec<String>)> = h
        .iter()
        .map(|h| (h.index, h.ip.as_str(), h.taken_over_by.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                0,
                "10.0.0.5",
                vec!["other".to_string(), "small".to_string()]
            ),
            (2, "10.0.0.100", vec![]),
            (3, "2001:db8::7", vec![]),
            (4, "10.0.0.200", vec![]),
        ]
    );
    assert_eq!(bad, ["not-an-ip"]);
    // The first holder no other ServiceCIDR takes is canDelete's blocker.
    assert_eq!(
        ix.can_delete("gone", &cidrs, &ips(&v), &mut Vec::new()),
        DeleteCheck::BlockedBy {
            ip: "10.0.0.100".into()
        }
    );
    // Single-stack, the wrongly labelled address is out of sight, for both.
    let v4 = ["10.0.0.0/24"];
    let h = ix.holders("gone", &v4, &ips(&v[4..5]), &mut Vec::new());
    assert!(h.is_empty());
    assert_eq!(
        ix.can_delete("gone", &v4, &ips(&v[4..5]), &mut Vec::new()),
        DeleteCheck::NoOrphans
    );
    // A name not in the index holds nothing.
    assert!(ix
        .holders("absent", &cidrs, &ips(&v), &mut Vec::new())
        .is_empty());
}
