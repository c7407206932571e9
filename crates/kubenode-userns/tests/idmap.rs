//! The idmapped-mount probe against this kernel: tmpfs has allowed idmapped mounts since
//! Linux 6.3, and the probe must leave the mount table as it was.

use std::path::PathBuf;

use kubenode_userns::probe_idmap_mounts;

fn kernel_at_least(major: u32, minor: u32) -> bool {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut it = r.trim().split(|c: char| !c.is_ascii_digit());
    let a: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let b: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    (a, b) >= (major, minor)
}

#[test]
fn tmpfs_and_a_tmpfs_directory_are_supported() {
    assert!(kernel_at_least(6, 3), "these tests need Linux >= 6.3");
    let before = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let r = probe_idmap_mounts(true, &[PathBuf::from("/dev/shm")]);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        (r[0].target.as_str(), r[0].status.as_str()),
        ("tmpfs", "supported"),
        "{r:?}"
    );
    assert_eq!(r[1].target, "/dev/shm");
    assert_eq!(r[1].fs_type.as_deref(), Some("tmpfs"));
    assert_eq!(r[1].status, "supported", "{r:?}");
    assert_eq!(
        std::fs::read_to_string("/proc/self/mountinfo").unwrap(),
        before
    );
}

#[test]
fn a_filesystem_without_idmap_is_unsupported() {
    // procfs has no FS_ALLOW_IDMAP: the kernel refuses with EINVAL.
    let r = probe_idmap_mounts(false, &[PathBuf::from("/proc/self")]);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, "unsupported", "{r:?}");
    assert_eq!(r[0].errno.as_deref(), Some("EINVAL"));
    assert!(
        r[0].detail.starts_with("mount_setattr(MOUNT_ATTR_IDMAP): "),
        "{r:?}"
    );
}

#[test]
fn a_missing_directory_cannot_be_probed() {
    let r = probe_idmap_mounts(false, &[PathBuf::from("/nonexistent/kubelet/pods")]);
    assert_eq!(r[0].status, "cannot-probe");
    assert_eq!(r[0].errno.as_deref(), Some("ENOENT"));
    assert!(r[0].detail.starts_with("stat: "), "{r:?}");
}
