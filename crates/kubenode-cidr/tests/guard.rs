//! The ServiceCIDR guard's rules and its file checks.

use kubenode_cidr::guard::DEFAULT_PROTECTED_MESSAGE;
use kubenode_cidr::{validate_spec_cidrs, Guard, GuardRequest, Operation};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn guard() -> Guard {
    Guard::new(
        &s(&["10.96.0.0/12", "172.16.0.0/12"]),
        &s(&["fd00:10:96::/48"]),
        &s(&["172.20.0.0/16"]),
        true,
    )
    .unwrap()
}

fn decide(
    g: &Guard,
    op: Operation,
    name: &str,
    cidrs: &[&str],
    old: &[&str],
    user: &str,
) -> Option<String> {
    g.decide(&GuardRequest {
        operation: op,
        name,
        cidrs: &s(cidrs),
        old_cidrs: &s(old),
        username: user,
    })
}

#[test]
fn allowed_prefixes_per_family() {
    let g = guard();
    let c = |cidrs: &[&str]| decide(&g, Operation::Create, "x", cidrs, &[], "admin");
    assert_eq!(c(&["10.96.0.0/24"]), None);
    assert_eq!(c(&["10.96.0.0/12"]), None, "equal to an allowed prefix");
    assert_eq!(c(&["10.96.0.0/24", "fd00:10:96::/64"]), None);
    assert_eq!(
        c(&["10.0.0.0/24"]).as_deref(),
        Some("ServiceCIDR 10.0.0.0/24 is not inside an allowed IPv4 prefix (10.96.0.0/12, 172.16.0.0/12)")
    );
    assert_eq!(
        c(&["10.96.0.0/11"]).as_deref(),
        Some("ServiceCIDR 10.96.0.0/11 is not inside an allowed IPv4 prefix (10.96.0.0/12, 172.16.0.0/12)"),
        "a parent of an allowed prefix is not inside it"
    );
    assert_eq!(
        c(&["10.96.0.0/24", "2001:db8::/64"]).as_deref(),
        Some("ServiceCIDR 2001:db8::/64 is not inside an allowed IPv6 prefix (fd00:10:96::/48)")
    );
    // Forbidden overlaps, either way round.
    assert_eq!(
        c(&["172.20.1.0/24"]).as_deref(),
        Some("ServiceCIDR 172.20.1.0/24 overlaps the forbidden prefix 172.20.0.0/16")
    );
    assert_eq!(
        c(&["172.16.0.0/12"]).as_deref(),
        Some("ServiceCIDR 172.16.0.0/12 overlaps the forbidden prefix 172.20.0.0/16")
    );
    assert_eq!(c(&["172.21.0.0/16"]), None);
}

#[test]
fn updates_only_when_the_cidrs_change_and_deletes_only_of_the_default() {
    let g = guard();
    assert_eq!(
        decide(
            &g,
            Operation::Update,
            "x",
            &["10.0.0.0/24"],
            &["10.0.0.0/24"],
            "admin"
        ),
        None
    );
    assert!(decide(
        &g,
        Operation::Update,
        "x",
        &["10.0.0.0/24", "2001:db8::/64"],
        &["10.0.0.0/24"],
        "admin"
    )
    .is_some());
    assert_eq!(
        decide(&g, Operation::Delete, "x", &[], &["10.0.0.0/24"], "admin"),
        None
    );
}

#[test]
fn the_default_is_the_api_servers() {
    let g = guard();
    let d = Some(DEFAULT_PROTECTED_MESSAGE.to_string());
    assert_eq!(
        decide(
            &g,
            Operation::Delete,
            "kubernetes",
            &[],
            &["10.96.0.0/28"],
            "admin"
        ),
        d
    );
    assert_eq!(
        decide(
            &g,
            Operation::Create,
            "kubernetes",
            &["10.96.0.0/28"],
            &[],
            "admin"
        ),
        d
    );
    assert_eq!(
        decide(
            &g,
            Operation::Update,
            "kubernetes",
            &["10.96.0.0/28", "fd00:10:96::/112"],
            &["10.96.0.0/28"],
            "admin"
        ),
        d
    );
    // Labels may change; the API server may do anything, even outside the allowed prefixes.
    assert_eq!(
        decide(
            &g,
            Operation::Update,
            "kubernetes",
            &["10.96.0.0/28"],
            &["10.96.0.0/28"],
            "admin"
        ),
        None
    );
    assert_eq!(
        decide(
            &g,
            Operation::Create,
            "kubernetes",
            &["192.168.0.0/24"],
            &[],
            "system:apiserver"
        ),
        None
    );
    assert_eq!(
        decide(
            &g,
            Operation::Create,
            "x",
            &["192.168.0.0/24"],
            &[],
            "system:apiserver"
        ),
        None
    );
    let open = Guard::new(&s(&["0.0.0.0/0"]), &s(&[]), &s(&[]), false).unwrap();
    assert_eq!(
        decide(
            &open,
            Operation::Delete,
            "kubernetes",
            &[],
            &["10.96.0.0/28"],
            "admin"
        ),
        None
    );
    assert!(
        decide(&open, Operation::Create, "x", &["fd00::/64"], &[], "admin")
            .unwrap()
            .ends_with("allowed IPv6 prefix (none)")
    );
}

#[test]
fn the_file_is_checked_entry_by_entry() {
    let e = |a: &[&str], b: &[&str], f: &[&str]| Guard::new(&s(a), &s(b), &s(f), true).unwrap_err();
    assert_eq!(
        e(&["10.0.0.1/8"], &[], &[]),
        "allowed.ipv4[0]: \"10.0.0.1/8\" must not have bits set beyond the prefix length"
    );
    assert_eq!(
        e(&["10.0.0.0/8", "fd00::/8"], &[], &[]),
        "allowed.ipv4[1]: fd00::/8 is not an IPv4 prefix"
    );
    assert_eq!(
        e(&[], &["10.0.0.0/8"], &[]),
        "allowed.ipv6[0]: 10.0.0.0/8 is not an IPv6 prefix"
    );
    assert!(e(&["10.0.0.0/8"], &[], &["nonsense"])
        .starts_with("forbidden[0]: \"nonsense\" must be a valid CIDR"));
    assert_eq!(
        e(&[], &[], &[]),
        "allowed: give at least one prefix (allowed.ipv4 or allowed.ipv6)"
    );
}

#[test]
fn spec_validation_follows_the_api_server() {
    assert!(validate_spec_cidrs(&["10.0.0.0/24", "fd00::/64"]).is_empty());
    assert_eq!(
        validate_spec_cidrs::<&str>(&[]),
        ["spec.cidrs: Required value: at least one CIDR required"]
    );
    assert_eq!(
        validate_spec_cidrs(&["10.0.0.0/24", "10.1.0.0/24"]),
        ["spec.cidrs: Invalid value: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
    );
    assert_eq!(
        validate_spec_cidrs(&["a", "b", "c"]),
        ["spec.cidrs: Invalid value: may only hold up to 2 values"]
    );
    assert_eq!(
        validate_spec_cidrs(&["10.0.0.1/24"]),
        ["spec.cidrs[0]: Invalid value: \"10.0.0.1/24\": must not have bits set beyond the prefix length"]
    );
}
