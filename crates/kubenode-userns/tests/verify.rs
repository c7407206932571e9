//! The kernel check for real: a process in a new user namespace with a pod's mapping.

use kubenode_userns::verify_mapping;

#[test]
fn uid_zero_inside_is_host_id_outside() {
    for (host, len) in [
        (131072u32, 65536u32),
        (4294836224, 65536),
        (65536 * 7, 65536 * 2),
    ] {
        let r = verify_mapping(host, len)
            .unwrap_or_else(|e| panic!("user namespaces must work here (root): {e}"));
        assert_eq!((r.inside_uid, r.inside_gid), (0, 0), "{r:?}");
        assert_eq!((r.outside_uid, r.outside_gid), (host, host), "{r:?}");
        assert_eq!((r.file_uid, r.file_gid), (host, host), "{r:?}");
        assert_eq!(r.uid_map, format!("0 {host} {len}"));
        assert_eq!(r.gid_map, format!("0 {host} {len}"));
        assert!(r.ok);
    }
}

#[test]
fn the_last_range_cannot_be_mapped() {
    // Upstream's default pool ends at 2^32, so its last slot includes 4294967295, which the
    // kernel refuses (kubernetes/kubernetes#139916): the check shows it.
    let e = verify_mapping(4294901760, 65536).unwrap_err();
    assert!(e.to_string().contains("uid_map: invalid argument"), "{e}");
    assert!(e.to_string().contains("4294967295"), "{e}");
}

#[test]
fn impossible_mappings_are_refused() {
    assert!(verify_mapping(4294901760, 131072).is_err());
    assert!(verify_mapping(65536, 0).is_err());
}
