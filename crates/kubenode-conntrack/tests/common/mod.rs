//! Throwaway network namespaces for kernel tests (root required; no silent skip).
#![allow(dead_code)]

use std::net::IpAddr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use kubenode_conntrack::{Conntrack, Endpoint, Family, Flow, Protocol, ServicePort, Tuple};

static N: AtomicU32 = AtomicU32::new(0);

pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new() -> Self {
        let name = format!(
            "kn-ct-rs-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip");
        assert!(
            out.status.success(),
            "kernel tests need root and iproute2: ip netns add {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self { name }
    }

    pub fn path(&self) -> String {
        format!("/var/run/netns/{}", self.name)
    }

    pub fn open(&self) -> Conntrack {
        Conntrack::open_in_netns(&self.path()).expect("open conntrack in netns")
    }

    /// `conntrack -L` output lines in this namespace (conntrack-tools).
    pub fn conntrack_l(&self, family: &str) -> Vec<String> {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.name, "conntrack", "-L", "-f", family])
            .output()
            .expect("run conntrack");
        assert!(
            out.status.success(),
            "conntrack -L: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().expect("test IP")
}

/// A DNATed UDP flow: client:sport -> vip:vport, answered by backend:bport.
pub fn dnat(client: &str, sport: u16, vip: &str, vport: u16, backend: &str, bport: u16) -> Flow {
    Flow {
        orig: Tuple {
            src: Some(ip(client)),
            dst: Some(ip(vip)),
            proto: 17,
            src_port: sport,
            dst_port: vport,
        },
        reply: Tuple {
            src: Some(ip(backend)),
            dst: Some(ip(client)),
            proto: 17,
            src_port: bport,
            dst_port: sport,
        },
        timeout: 300,
        ..Default::default()
    }
}

/// `n` distinct DNATed UDP flows to 10.96.0.10:53, all answered by 10.244.0.5:5353 (50 source
/// ports per client from 10.1.0.0 up).
pub fn dns_flows(n: u32) -> Vec<Flow> {
    (0..n)
        .map(|i| {
            let client = std::net::Ipv4Addr::from(0x0a01_0000 + i / 50).to_string();
            let sport = 1000 + (i % 50) as u16;
            dnat(&client, sport, "10.96.0.10", 53, "10.244.0.5", 5353)
        })
        .collect()
}

pub fn tcp(client: &str, sport: u16, vip: &str, vport: u16, backend: &str, bport: u16) -> Flow {
    let mut f = dnat(client, sport, vip, vport, backend, bport);
    f.orig.proto = 6;
    f.reply.proto = 6;
    f
}

pub fn family_of(flows: &[Flow]) -> Family {
    flows
        .first()
        .and_then(|f| f.orig.src)
        .map(|a| Family::of(&a))
        .unwrap_or(Family::V4)
}

/// A UDP service port with a cluster IP and, unless 0, a node port.
pub fn svc(name: &str, vip: &str, port: u16, node_port: u16) -> ServicePort {
    ServicePort {
        name: name.into(),
        protocol: Protocol::Udp,
        cluster_ip: Some(ip(vip)),
        port,
        node_port,
        external_ips: vec![],
        load_balancer_ips: vec![],
    }
}

/// A serving endpoint.
pub fn ep(a: &str, port: u16) -> Endpoint {
    Endpoint {
        ip: ip(a),
        port,
        serving: true,
    }
}
