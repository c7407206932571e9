//! Real namespaces (needs root): values land in the target's namespaces, the host's stay put.

use std::os::unix::fs::MetadataExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use kubenode_sysctl::{apply_sysctls, probe, ApplyError, NsTarget, ProbeOutcome};

struct Sandbox(Child);

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ino(p: &str) -> u64 {
    std::fs::metadata(p).map(|m| m.ino()).unwrap_or(0)
}

/// `unshare --net --ipc --uts sleep 60`, once its namespaces differ from ours.
fn sandbox() -> Sandbox {
    let child = Command::new("unshare")
        .args(["--net", "--ipc", "--uts", "sleep", "60"])
        .spawn()
        .expect("unshare(1) from util-linux is required (and root)");
    let pid = child.id();
    let sb = Sandbox(child);
    let deadline = Instant::now() + Duration::from_secs(5);
    while ino(&format!("/proc/{pid}/ns/ipc")) == ino("/proc/self/ns/ipc") {
        assert!(
            Instant::now() < deadline,
            "unshare did not create namespaces (are we root?)"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    sb
}

fn in_ns(pid: u32, path: &str) -> String {
    let out = Command::new("nsenter")
        .args(["-t", &pid.to_string(), "-n", "-i", "-u", "cat", path])
        .output()
        .expect("nsenter");
    assert!(
        out.status.success(),
        "nsenter cat {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn host(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

#[test]
fn apply_sets_values_only_in_the_target() {
    let sb = sandbox();
    let pid = sb.0.id();
    let paths = [
        "/proc/sys/net/ipv4/ip_local_port_range",
        "/proc/sys/kernel/shmmni",
        "/proc/sys/net/ipv4/tcp_keepalive_time",
        "/proc/sys/fs/mqueue/msg_max",
        "/proc/sys/kernel/domainname",
    ];
    let before: Vec<String> = paths.iter().map(|p| host(p)).collect();
    let set = apply_sysctls(
        &NsTarget::Pid(pid),
        &[
            ("net.ipv4.ip_local_port_range".into(), "20000 29999".into()),
            ("kernel/shmmni".into(), "1234".into()),
            ("net.ipv4.tcp_keepalive_time".into(), "321".into()),
            ("fs.mqueue.msg_max".into(), "42".into()),
            ("kernel.domainname".into(), "kubenode.test".into()),
        ],
    )
    .unwrap();
    assert_eq!(set.len(), 5);
    assert_eq!(set[1].name, "kernel.shmmni");
    assert_eq!(
        set[0].value.split_whitespace().collect::<Vec<_>>(),
        ["20000", "29999"]
    );
    assert_eq!(
        in_ns(pid, paths[0]).split_whitespace().collect::<Vec<_>>(),
        ["20000", "29999"]
    );
    assert_eq!(in_ns(pid, paths[1]), "1234");
    assert_eq!(in_ns(pid, paths[2]), "321");
    assert_eq!(in_ns(pid, paths[3]), "42");
    assert_eq!(in_ns(pid, paths[4]), "kubenode.test");
    let after: Vec<String> = paths.iter().map(|p| host(p)).collect();
    assert_eq!(before, after, "host values must not change");
}

#[test]
fn failed_write_rolls_back() {
    let sb = sandbox();
    let pid = sb.0.id();
    let before = in_ns(pid, "/proc/sys/net/ipv4/tcp_fin_timeout");
    let e = apply_sysctls(
        &NsTarget::Pid(pid),
        &[
            ("net.ipv4.tcp_fin_timeout".into(), "17".into()),
            ("net.ipv4.tcp_syncookies".into(), "banana".into()),
        ],
    )
    .unwrap_err();
    assert!(
        matches!(e, ApplyError::Io { ref name, .. } if name == "net.ipv4.tcp_syncookies"),
        "{e}"
    );
    assert_eq!(in_ns(pid, "/proc/sys/net/ipv4/tcp_fin_timeout"), before);
}

#[test]
fn netns_path_target() {
    let sb = sandbox();
    let pid = sb.0.id();
    let t = NsTarget::Paths {
        net: Some(format!("/proc/{pid}/ns/net").into()),
        ipc: None,
        uts: None,
    };
    let host_before = host("/proc/sys/net/ipv4/ip_unprivileged_port_start");
    apply_sysctls(
        &t,
        &[("net/ipv4/ip_unprivileged_port_start".into(), "77".into())],
    )
    .unwrap();
    assert_eq!(
        in_ns(pid, "/proc/sys/net/ipv4/ip_unprivileged_port_start"),
        "77"
    );
    assert_eq!(
        host("/proc/sys/net/ipv4/ip_unprivileged_port_start"),
        host_before
    );
}

#[test]
fn probe_finds_the_safe_list_isolated() {
    let names: Vec<String> = [
        "net.ipv4.tcp_rmem",
        "kernel.shm_rmid_forced",
        "fs.mqueue.queues_max",
        "kernel.shm",
        "kernel.domainname",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let before: Vec<String> = [
        "/proc/sys/net/ipv4/tcp_rmem",
        "/proc/sys/kernel/shm_rmid_forced",
        "/proc/sys/fs/mqueue/queues_max",
    ]
    .iter()
    .map(|p| host(p))
    .collect();
    let r = probe(&names).unwrap();
    assert_eq!(r[0].outcome, ProbeOutcome::Isolated, "{:?}", r[0]);
    assert_eq!(r[1].outcome, ProbeOutcome::Isolated, "{:?}", r[1]);
    assert_eq!(r[2].outcome, ProbeOutcome::Isolated, "{:?}", r[2]);
    assert_eq!(r[3].outcome, ProbeOutcome::Absent, "{:?}", r[3]);
    assert_eq!(r[4].outcome, ProbeOutcome::Isolated, "{:?}", r[4]);
    assert_ne!(r[0].probe_value, r[0].host_value);
    let after: Vec<String> = [
        "/proc/sys/net/ipv4/tcp_rmem",
        "/proc/sys/kernel/shm_rmid_forced",
        "/proc/sys/fs/mqueue/queues_max",
    ]
    .iter()
    .map(|p| host(p))
    .collect();
    assert_eq!(before, after);
}

#[test]
fn probe_never_writes_a_host_wide_sysctl() {
    // Outside the net/IPC/UTS tables the probe thread shares the host's value: not touched.
    let paths = [
        "/proc/sys/vm/stat_interval",
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/user/max_user_namespaces",
    ];
    let before: Vec<String> = paths.iter().map(|p| host(p)).collect();
    let names: Vec<String> = [
        "vm.stat_interval",
        "kernel/core_pattern",
        "user.max_user_namespaces",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = probe(&names).unwrap();
    for (res, want) in r.iter().zip([
        "sysctl \"vm.stat_interval\" is not in a separate kernel namespace",
        "sysctl \"kernel.core_pattern\" is not in a separate kernel namespace",
        "sysctl \"user.max_user_namespaces\" is in the User namespace",
    ]) {
        assert_eq!(res.outcome, ProbeOutcome::NotNamespaced, "{res:?}");
        assert_eq!(res.host_value, None, "{res:?}");
        assert!(
            res.detail.as_deref().unwrap_or("").starts_with(want),
            "{res:?}"
        );
    }
    assert_eq!(r[1].name, "kernel.core_pattern");
    let after: Vec<String> = paths.iter().map(|p| host(p)).collect();
    assert_eq!(before, after);
}

#[test]
fn probe_refuses_a_traversal_name_before_writing() {
    // A file the traversal would reach (`/proc/sys/net/../../../tmp/<dir>/f`): it must keep
    // its content. Only this scratch file could ever be touched.
    let dir = format!("/tmp/kubenode-probe-traversal-{}", std::process::id());
    std::fs::create_dir_all(&dir).unwrap();
    let file = format!("{dir}/f");
    std::fs::write(&file, "42\n").unwrap();
    let name = format!(
        "net.//.//.//.tmp.kubenode-probe-traversal-{}.f",
        std::process::id()
    );
    assert_eq!(
        kubenode_sysctl::proc_path(&name),
        format!("/proc/sys/net/../../..{file}")
    );
    let names = vec!["net.ipv4.tcp_rmem".to_string(), name.clone()];
    let r = probe(&names);
    let content = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(r, Err(ApplyError::InvalidName(name)));
    assert_eq!(content, "42\n");
}
