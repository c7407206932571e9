//! Against the real kernel, in a network namespace each test creates.

mod common;

use std::collections::HashMap;

use common::{dnat, dns_flows, ep, ip, svc, tcp, Netns};
use kubenode_conntrack::{
    CleanOptions, DumpFilter, Error, Family, Flow, KubernetesVersion, Progress, StaleFlowCleaner,
    StaleMatcher, MAX_DUMP_ATTEMPTS,
};

fn key(f: &Flow) -> (Option<std::net::IpAddr>, u16, Option<std::net::IpAddr>, u16) {
    (f.orig.src, f.orig.src_port, f.orig.dst, f.orig.dst_port)
}

fn sorted_keys(
    flows: &[Flow],
) -> Vec<(Option<std::net::IpAddr>, u16, Option<std::net::IpAddr>, u16)> {
    let mut k: Vec<_> = flows.iter().map(key).collect();
    k.sort();
    k
}

#[test]
fn create_list_delete_ipv4_and_ipv6() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let v4 = vec![
        dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1001, "10.96.0.10", 53, "10.244.0.6", 5353),
        tcp("10.0.0.1", 1002, "10.96.0.11", 80, "10.244.0.7", 8080),
    ];
    let v6 = vec![dnat("fd00::1", 2000, "fd00:96::a", 53, "fd00:244::5", 5353)];
    let r = ct.create(Family::V4, &v4).unwrap();
    assert_eq!((r.ok, r.failed), (3, 0), "{r:?}");
    assert_eq!(ct.create(Family::V6, &v6).unwrap().ok, 1);

    let (all4, s) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    assert_eq!(sorted_keys(&all4), sorted_keys(&v4));
    assert!(!s.partial && s.attempts == 1);
    assert!(all4.iter().all(|f| f.id.is_some() && f.timeout > 0));
    let (udp4, _) = ct
        .list(
            Family::V4,
            &DumpFilter {
                proto: Some(17),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(sorted_keys(&udp4), sorted_keys(&v4[..2]));
    let vip = DumpFilter {
        proto: Some(17),
        orig_dst: Some(ip("10.96.0.10")),
        orig_dst_port: Some(53),
        ..Default::default()
    };
    assert_eq!(ct.list(Family::V4, &vip).unwrap().0.len(), 2);
    let (all6, _) = ct.list(Family::V6, &DumpFilter::default()).unwrap();
    assert_eq!(sorted_keys(&all6), sorted_keys(&v6));
    assert_eq!(all6[0].reply.src, Some(ip("fd00:244::5")));

    // Deleting the listed flows (with their IDs) removes exactly them; a second delete is
    // ENOENT, counted as gone.
    let d = ct.delete(Family::V4, &udp4).unwrap();
    assert_eq!((d.ok, d.not_found, d.failed), (2, 0, 0), "{d:?}");
    let d = ct.delete(Family::V4, &udp4).unwrap();
    assert_eq!((d.ok, d.not_found, d.deleted()), (0, 2, 2));
    let (left, _) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    assert_eq!(sorted_keys(&left), sorted_keys(&v4[2..]));
    assert_eq!(ct.delete(Family::V6, &all6).unwrap().ok, 1);
    assert!(ns.conntrack_l("ipv6").is_empty());
}

#[test]
fn id_guard_protects_a_recycled_tuple() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let f = dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353);
    ct.create(Family::V4, &[f]).unwrap();
    let (mut listed, _) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    listed[0].id = listed[0].id.map(|i| i.wrapping_add(1));
    let d = ct.delete(Family::V4, &listed).unwrap();
    assert_eq!((d.ok, d.not_found), (0, 1));
    assert_eq!(
        ct.list(Family::V4, &DumpFilter::default()).unwrap().0.len(),
        1
    );
}

#[test]
fn failed_item_does_not_abort_the_batch() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let flows: Vec<Flow> = (0..10)
        .map(|i| dnat("10.0.0.1", 1000 + i, "10.96.0.10", 53, "10.244.0.5", 5353))
        .collect();
    ct.create(Family::V4, &flows).unwrap();
    let (mut listed, _) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    listed[3].orig.dst = None; // cannot be encoded
    listed[6].orig.src = Some(ip("fd00::1")); // wrong family
    let d = ct.delete(Family::V4, &listed).unwrap();
    assert_eq!((d.ok, d.failed), (8, 2), "{d:?}");
    assert!(d.first_error.is_some());
    assert_eq!(
        ct.list(Family::V4, &DumpFilter::default()).unwrap().0.len(),
        2
    );
}

#[test]
fn large_batches_span_many_sendmsgs() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let flows = dns_flows(30_000);
    let r = ct.create(Family::V4, &flows).unwrap();
    assert_eq!(r.ok, 30_000, "{r:?}");
    assert!(r.sendmsgs > 1);
    let (listed, s) = ct
        .list(
            Family::V4,
            &DumpFilter {
                proto: Some(17),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(listed.len(), 30_000);
    assert!(s.recvs > 10);
    let d = ct.delete(Family::V4, &listed).unwrap();
    assert_eq!(d.ok, 30_000);
    assert_eq!(ns.conntrack_l("ipv4").len(), 0);
}

#[test]
fn dump_interrupted_is_retried_then_partial() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let flows: Vec<Flow> = (0..50)
        .map(|i| dnat("10.0.0.1", 1000 + i, "10.96.0.10", 53, "10.244.0.5", 5353))
        .collect();
    ct.create(Family::V4, &flows).unwrap();

    ct.faults_mut().dump_intr = 2;
    let mut attempts_seen = vec![];
    let mut n = 0;
    let s = ct
        .dump(Family::V4, &DumpFilter::default(), |ev| match ev {
            kubenode_conntrack::DumpEvent::Attempt(a) => {
                attempts_seen.push(a);
                n = 0;
            }
            kubenode_conntrack::DumpEvent::Flow(_) => n += 1,
        })
        .unwrap();
    assert_eq!((s.attempts, s.partial, n), (3, false, 50));
    assert_eq!(attempts_seen, vec![1, 2, 3]);

    ct.faults_mut().dump_intr = 100;
    let (listed, s) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    assert_eq!(
        (s.attempts, s.partial, listed.len()),
        (MAX_DUMP_ATTEMPTS, true, 50)
    );
    ct.faults_mut().dump_intr = 0;
}

#[test]
fn eintr_truncation_and_enobufs_are_handled() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let flows: Vec<Flow> = (0..500)
        .map(|i| dnat("10.0.0.1", 1000 + i, "10.96.0.10", 53, "10.244.0.5", 5353))
        .collect();
    // Dropped acks on a create batch: the EEXIST of a re-sent create is its first send's success.
    ct.faults_mut().recv_enobufs = 1;
    let c = ct.create(Family::V4, &flows).unwrap();
    assert!(c.resent > 0, "{c:?}");
    assert_eq!(
        (c.ok, c.failed, c.first_error.as_deref()),
        (500, 0, None),
        "{c:?}"
    );
    ct.faults_mut().injected = 0;

    // EINTR on the receive syscall: retried transparently.
    ct.faults_mut().recv_eintr = 3;
    let (listed, s) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    assert_eq!((listed.len(), s.attempts), (500, 1));
    assert_eq!(ct.faults_mut().injected, 3);

    // A truncated datagram: an error, and the socket is usable afterwards.
    ct.faults_mut().trunc = 1;
    assert!(matches!(
        ct.list(Family::V4, &DumpFilter::default()),
        Err(Error::Truncated(_))
    ));
    assert_eq!(
        ct.list(Family::V4, &DumpFilter::default()).unwrap().0.len(),
        500
    );

    // Dropped acks on a delete batch: the unknown requests are re-sent; the ENOENT of a re-sent
    // delete is the success of its first send, not a flow that was already gone.
    ct.faults_mut().recv_enobufs = 1;
    let d = ct.delete(Family::V4, &listed).unwrap();
    assert!(d.resent > 0, "{d:?}");
    assert_eq!((d.ok, d.not_found, d.failed), (500, 0, 0), "{d:?}");
    assert!(ct
        .list(Family::V4, &DumpFilter::default())
        .unwrap()
        .0
        .is_empty());
}

#[test]
fn without_cap_net_admin_is_a_permission_error() {
    let ns = Netns::new();
    let path = ns.path();
    let r = std::thread::spawn(move || {
        drop_net_admin();
        let mut ct = kubenode_conntrack::Conntrack::open_in_netns(&path)?;
        ct.list(Family::V4, &DumpFilter::default()).map(|_| ())
    })
    .join()
    .unwrap();
    match r {
        Err(Error::Permission { .. }) => {}
        other => panic!("expected a permission error, got {other:?}"),
    }
}

#[test]
fn a_netns_that_is_not_a_network_namespace_is_refused_without_blocking() {
    let dir = std::env::temp_dir().join(format!("kubenode-ct-nsfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let regular = dir.join("regular");
    std::fs::write(&regular, b"net").unwrap();
    // A FIFO used to block this call forever (no writer ever comes).
    let (tx, rx) = std::sync::mpsc::channel();
    let paths = [
        fifo.to_str().unwrap().to_string(),
        regular.to_str().unwrap().to_string(),
        "/dev/null".to_string(),
        "/proc/self/ns/uts".to_string(),
    ];
    std::thread::spawn(move || {
        for p in paths {
            let r = kubenode_conntrack::Conntrack::open_in_netns(&p).map(|_| ());
            tx.send((p, r)).unwrap();
        }
    });
    for _ in 0..4 {
        let (p, r) = rx
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("open_in_netns blocked");
        match r {
            Err(Error::Namespace(e)) if e.is_wrong_file() => {
                assert!(e.to_string().starts_with(&p), "{e}")
            }
            other => panic!("{p}: expected a namespace error, got {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Clears CAP_NET_ADMIN and CAP_SYS_ADMIN from this thread's effective set (capabilities are
/// per thread, so the rest of the test process keeps them).
fn drop_net_admin() {
    #[repr(C)]
    struct Hdr {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut h = Hdr {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget/capset with a version-3 header read and write exactly two `Data` structs,
    // which `d` holds; both pointers outlive the calls.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &mut h as *mut Hdr, d.as_mut_ptr()),
            0
        );
        d[0].effective &= !((1 << 12) | (1 << 21));
        assert_eq!(
            libc::syscall(libc::SYS_capset, &mut h as *mut Hdr, d.as_ptr()),
            0
        );
    }
}

#[test]
fn clean_stale_deletes_exactly_the_stale_flows() {
    let ns = Netns::new();
    let mut ct = ns.open();
    let keep = vec![
        dnat("10.0.0.1", 1000, "10.96.0.10", 53, "10.244.0.5", 5353),
        dnat("10.0.0.1", 1001, "192.168.1.1", 30053, "10.244.0.5", 5353),
        tcp("10.0.0.1", 1002, "10.96.0.10", 53, "10.244.0.9", 5353),
        dnat("10.0.0.1", 1003, "10.96.0.99", 53, "10.244.0.9", 5353),
    ];
    let stale = vec![
        dnat("10.0.0.1", 2000, "10.96.0.10", 53, "10.244.0.9", 5353),
        dnat("10.0.0.1", 2001, "10.96.0.10", 53, "10.244.0.5", 6000),
        dnat("10.0.0.1", 2002, "203.0.113.7", 30053, "10.244.0.9", 5353),
        // Not DNATed: created while the service had no rule.
        dnat("10.0.0.1", 2003, "10.96.0.10", 53, "10.96.0.10", 53),
    ];
    ct.create(Family::V4, &keep).unwrap();
    ct.create(Family::V4, &stale).unwrap();
    let services = vec![svc("ns/dns:dns", "10.96.0.10", 53, 30053)];
    let eps = HashMap::from([("ns/dns:dns".to_string(), vec![ep("10.244.0.5", 5353)])]);
    let m = StaleMatcher::build(Family::V4, &services, &eps, KubernetesVersion::NEWEST).unwrap();
    let progress = Progress::default();
    let mut cleaner = StaleFlowCleaner::new();

    let dry = cleaner
        .clean(
            &mut ct,
            Family::V4,
            &m,
            CleanOptions {
                dry_run: true,
                ..Default::default()
            },
            &progress,
        )
        .unwrap();
    assert_eq!((dry.listed, dry.stale, dry.deleted), (7, 4, 0));
    let r = cleaner
        .clean(&mut ct, Family::V4, &m, CleanOptions::default(), &progress)
        .unwrap();
    assert_eq!(
        (r.listed, r.stale, r.deleted, r.failed, r.partial),
        (7, 4, 4, 0, false),
        "{r:?}"
    );
    let (left, _) = ct.list(Family::V4, &DumpFilter::default()).unwrap();
    assert_eq!(sorted_keys(&left), sorted_keys(&keep));
    assert_eq!(ns.conntrack_l("ipv4").len(), keep.len());
}
