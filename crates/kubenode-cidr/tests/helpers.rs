//! Upstream `pkg/api/servicecidr` results on IPv4 and IPv6.

use kubenode_cidr::{
    broadcast_address, ip_to_addr, prefix_contains_ip, validate_cidr, Addr, CidrIndex, Prefix,
};

fn p(s: &str) -> Prefix {
    Prefix::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn a(s: &str) -> Addr {
    Addr::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn two() -> CidrIndex {
    let mut ix = CidrIndex::new();
    ix.upsert("kubernetes", &["10.0.0.0/24", "2001:db8::/96"]);
    ix.upsert("secondary", &["10.0.0.0/16", "2001:db8::/64"]);
    ix
}

#[test]
fn overlaps_prefix_matches_upstream_table() {
    let ix = two();
    for (q, want) in [
        ("10.0.0.0/24", vec!["kubernetes", "secondary"]),
        ("10.0.0.0/18", vec!["kubernetes", "secondary"]),
        ("10.0.0.0/8", vec!["kubernetes", "secondary"]),
        ("192.168.0.0/24", vec![]),
        ("2001:db8::/96", vec!["kubernetes", "secondary"]),
        ("2001:db8::/72", vec!["kubernetes", "secondary"]),
        ("2001:db8::/52", vec!["kubernetes", "secondary"]),
        ("2001:db2::/64", vec![]),
        ("0.0.0.0/0", vec!["kubernetes", "secondary"]),
        ("::/0", vec!["kubernetes", "secondary"]),
        ("10.1.0.0/16", vec![]),
    ] {
        assert_eq!(ix.overlapping(&p(q)), want, "overlapping {q}");
    }
}

#[test]
fn contains_prefix_matches_upstream_table() {
    let ix = two();
    for (q, want) in [
        ("10.0.0.0/24", vec!["kubernetes", "secondary"]),
        ("10.0.0.0/18", vec!["secondary"]),
        ("10.0.0.0/8", vec![]),
        ("192.168.0.0/24", vec![]),
        ("2001:db8::/96", vec!["kubernetes", "secondary"]),
        ("2001:db8::/72", vec!["secondary"]),
        ("2001:db8::/52", vec![]),
        ("2001:db2::/64", vec![]),
        ("10.0.0.0/28", vec!["kubernetes", "secondary"]),
    ] {
        assert_eq!(ix.containing_prefix(&p(q)), want, "containing_prefix {q}");
    }
}

#[test]
fn contains_address_excludes_network_and_ipv4_broadcast() {
    let ix = two();
    for (q, want) in [
        ("10.0.0.1", vec!["kubernetes", "secondary"]),
        ("10.0.0.255", vec!["secondary"]),
        ("10.0.0.0", vec![]),
        ("10.0.255.255", vec![]),
        ("10.0.1.0", vec!["secondary"]),
        ("192.0.0.1", vec![]),
        ("2001:db8::2:3", vec!["kubernetes", "secondary"]),
        // IPv6 has no broadcast: the last address is contained.
        ("2001:db8::ffff:ffff", vec!["kubernetes", "secondary"]),
        ("2001:db8::", vec![]),
        ("2001:db8::1:0:0", vec!["secondary"]),
        ("2001:db2::1", vec![]),
        // IPv4-mapped IPv6 is IPv6 to netip: it is in no IPv4 prefix.
        ("::ffff:10.0.0.1", vec![]),
    ] {
        assert_eq!(ix.containing(a(q)), want, "containing {q}");
    }
}

#[test]
fn tiny_prefixes_contain_nothing() {
    assert!(!prefix_contains_ip(&p("10.0.0.0/31"), a("10.0.0.1")));
    assert!(!prefix_contains_ip(&p("10.0.0.0/31"), a("10.0.0.0")));
    assert!(!prefix_contains_ip(&p("10.0.0.7/32"), a("10.0.0.7")));
    assert!(!prefix_contains_ip(&p("2001:db8::1/128"), a("2001:db8::1")));
    assert!(prefix_contains_ip(&p("2001:db8::/127"), a("2001:db8::1")));
    assert!(prefix_contains_ip(&p("10.0.0.0/30"), a("10.0.0.1")));
    // Host bits in the prefix are masked first.
    assert!(prefix_contains_ip(&p("10.0.0.5/24"), a("10.0.0.9")));
    assert!(!prefix_contains_ip(&p("10.0.0.5/24"), a("10.0.0.0")));
}

#[test]
fn broadcast_addresses() {
    for (q, want) in [
        ("192.168.0.0/24", "192.168.0.255"),
        ("192.168.0.0/23", "192.168.1.255"),
        ("192.168.0.0/31", "192.168.0.1"),
        ("192.168.0.0/32", "192.168.0.0"),
        ("0.0.0.0/0", "255.255.255.255"),
        ("fd00:1:2:3::/57", "fd00:1:2:7f:ffff:ffff:ffff:ffff"),
        ("fd00::/64", "fd00::ffff:ffff:ffff:ffff"),
        ("::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
    ] {
        assert_eq!(broadcast_address(&p(q)).to_string(), want, "broadcast {q}");
    }
}

#[test]
fn ip_to_addr_unmaps_ipv4() {
    assert_eq!(ip_to_addr("192.168.0.1"), Some(Addr::V4(0xc0a8_0001)));
    assert_eq!(
        ip_to_addr("::ffff:192.168.0.1"),
        Some(Addr::V4(0xc0a8_0001))
    );
    assert_eq!(
        ip_to_addr("2001:db8::1").map(|x| x.to_string()).as_deref(),
        Some("2001:db8::1")
    );
    assert_eq!(ip_to_addr("not-an-ip"), None);
    assert_eq!(ip_to_addr("192.168.0.01"), None);
}

#[test]
fn parse_prefix_like_netip() {
    for bad in [
        "10.0.0.0",
        "10.0.0.0/",
        "10.0.0.0/33",
        "10.0.0.0/024",
        "10.0.0.0/+8",
        "10.0.0.0/-1",
        "010.0.0.0/8",
        "2001:db8::/129",
        "fe80::%eth0/64",
        "",
        "/24",
        "10.0.0.0/24/24",
        "hello/8",
    ] {
        assert!(Prefix::parse(bad).is_err(), "{bad} should not parse");
    }
    // netip keeps host bits and 4in6 prefixes; validation rejects them separately.
    assert_eq!(p("10.0.0.5/24").to_string(), "10.0.0.5/24");
    assert_eq!(p("::ffff:10.0.0.0/104").bits(), 104);
    assert_eq!(p("10.0.0.0/0").bits(), 0);
}

#[test]
fn strict_validation_messages() {
    assert!(validate_cidr("10.0.0.0/24").is_empty());
    assert!(validate_cidr("2001:db8::/64").is_empty());
    assert_eq!(
        validate_cidr("10.0.0.1/24"),
        ["must not have bits set beyond the prefix length"]
    );
    assert_eq!(
        validate_cidr("::ffff:10.0.0.0/104"),
        ["must not have an IPv4-mapped IPv6 address"]
    );
    assert_eq!(
        validate_cidr("2001:DB8::/64"),
        [r#"must be in canonical form ("2001:db8::/64")"#]
    );
    assert_eq!(
        validate_cidr("nope"),
        ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    );
}
