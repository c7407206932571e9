//! The JavaScript shapes of conntrack values and task outcomes.

use napi::bindgen_prelude::{BigInt, Either};
use napi_derive::napi;

// The core's reports are the JS shapes (its `napi` feature); imported under their JS names so
// the generated typings refer to them by those names.
pub use kubenode_conntrack::ProgressReport as ConntrackProgress;

#[napi(object)]
pub struct ConntrackTuple {
    pub src_ip: Option<String>,
    pub dst_ip: Option<String>,
    pub src_port: f64,
    pub dst_port: f64,
}

#[napi(object)]
pub struct ConntrackFlow {
    pub protocol: f64,
    pub forward: ConntrackTuple,
    pub reverse: ConntrackTuple,
    pub zone: f64,
    pub id: Option<f64>,
    pub mark: f64,
    pub status: f64,
    pub timeout: f64,
    /// Connection labels, bit n for label n; absent when the flow has none.
    pub labels: Option<BigInt>,
}

#[napi(object)]
pub struct ConntrackService {
    pub name: String,
    pub protocol: String,
    /// Empty or "None" for headless services.
    pub cluster_ip: String,
    pub port: f64,
    pub node_port: Option<f64>,
    pub external_ips: Option<Vec<String>>,
    pub load_balancer_ips: Option<Vec<String>>,
}

#[napi(object)]
pub struct ConntrackEndpoint {
    pub ip: String,
    pub port: f64,
    pub serving: bool,
}

/// The fields of one direction a filter names: addresses are an IP or a CIDR.
#[napi(object)]
pub struct ConntrackDirectionFilter {
    pub src: Option<String>,
    pub dst: Option<String>,
    pub src_port: Option<f64>,
    pub dst_port: Option<f64>,
}

/// `field & mask == value`; the mask defaults to every bit.
#[napi(object)]
pub struct ConntrackMarkFilter {
    pub value: f64,
    pub mask: Option<f64>,
}

#[napi(object)]
pub struct ConntrackLabelsFilter {
    pub value: BigInt,
    pub mask: Option<BigInt>,
}

#[napi(object)]
pub struct ConntrackListFilter {
    /// A protocol name (udp, tcp, sctp, any case) or number.
    pub protocol: Option<Either<String, f64>>,
    /// Original destination IP: the older spelling of `orig.dst`.
    pub dst_ip: Option<String>,
    /// Original destination port: the older spelling of `orig.dstPort`.
    pub dst_port: Option<f64>,
    pub orig: Option<ConntrackDirectionFilter>,
    pub reply: Option<ConntrackDirectionFilter>,
    pub zone: Option<f64>,
    pub mark: Option<ConntrackMarkFilter>,
    pub labels: Option<ConntrackLabelsFilter>,
}

/// What a list found: the flows, and whether the dump was cut short (interrupted too often).
#[napi(object, object_from_js = false)]
pub struct ConntrackListReport {
    pub flows: Vec<ConntrackFlow>,
    pub partial: bool,
    pub attempts: u32,
}

/// The event-fed flow index of a handle: what it holds and whether it can answer a pass.
#[napi(object, object_from_js = false)]
pub struct ConntrackIndexStats {
    /// Flows held, both families.
    pub flows: f64,
    /// Bytes its maps hold (capacity).
    pub bytes: f64,
    /// Interned (frontend, endpoint) pairs, both families.
    pub pairs: f64,
    /// Per family: `valid`, or why the next pass is full (`notBuilt`, `eventsLost`, `cap`).
    pub ipv4: String,
    pub ipv6: String,
    /// Events applied, and receive buffer overflows reported, since it was enabled.
    pub events: f64,
    pub losses: f64,
}
