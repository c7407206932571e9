//! Conversions between the JavaScript shapes and the core's types. Numbers are checked to be
//! integers of the target width here; every other rule and message is the core's.

use std::collections::HashMap;
use std::net::IpAddr;

use kubenode_conntrack::{
    parse_ip, protocol_number, DumpFilter, EndpointEntry, Error as CtError, ErrorKind as CoreKind,
    Flow, ServiceEntry, Tuple,
};
use napi::bindgen_prelude::Either;

use super::types::*;
use crate::convert;
use crate::errors::{native_error_from, NativeError, Result};

native_error_from! {
    CtError => Conntrack,
    CoreKind: InvalidArgument | Family | OutOfRange | Busy | Permission | Unavailable
        | Parse | Closed | Io
}

/// For `map_err` on argument conversion, which throws.
pub fn to_js(e: CtError) -> NativeError {
    NativeError::from(&e)
}

/// Converts every item of a list with `f`, which names the item by its index in messages.
pub fn each<T, U>(items: &[T], f: impl Fn(usize, &T) -> Result<U>) -> Result<Vec<U>> {
    items.iter().enumerate().map(|(i, x)| f(i, x)).collect()
}

fn port(what: &str, v: f64) -> Result<u16> {
    Ok(convert::index(what, v, 65535)? as u16)
}

pub fn u32_of(what: &str, v: f64) -> Result<u32> {
    Ok(convert::index(what, v, u32::MAX.into())? as u32)
}

fn ip(what: &str, s: &str) -> Result<IpAddr> {
    parse_ip(what, s).map_err(to_js)
}

fn tuple_out(t: &Tuple) -> ConntrackTuple {
    ConntrackTuple {
        src_ip: t.src.map(|a| a.to_string()),
        dst_ip: t.dst.map(|a| a.to_string()),
        src_port: t.src_port.into(),
        dst_port: t.dst_port.into(),
    }
}

pub fn flow_out(f: &Flow) -> ConntrackFlow {
    ConntrackFlow {
        protocol: f.orig.proto.into(),
        forward: tuple_out(&f.orig),
        reverse: tuple_out(&f.reply),
        zone: f.zone.into(),
        id: f.id.map(f64::from),
        mark: f.mark.into(),
        status: f.status.into(),
        timeout: f.timeout.into(),
    }
}

fn tuple_in(what: &str, t: &ConntrackTuple, proto: u8) -> Result<Tuple> {
    let addr = |name: &str, v: &Option<String>| -> Result<Option<IpAddr>> {
        v.as_deref()
            .map(|s| ip(&format!("{what}.{name}"), s))
            .transpose()
    };
    Ok(Tuple {
        src: addr("srcIP", &t.src_ip)?,
        dst: addr("dstIP", &t.dst_ip)?,
        proto,
        src_port: port(&format!("{what}.srcPort"), t.src_port)?,
        dst_port: port(&format!("{what}.dstPort"), t.dst_port)?,
    })
}

pub fn flow_in(i: usize, f: &ConntrackFlow) -> Result<Flow> {
    let what = |field: &str| format!("flows[{i}].{field}");
    let proto = convert::index(&what("protocol"), f.protocol, 255)? as u8;
    Ok(Flow {
        orig: tuple_in(&what("forward"), &f.forward, proto)?,
        reply: tuple_in(&what("reverse"), &f.reverse, proto)?,
        zone: convert::index(&what("zone"), f.zone, 65535)? as u16,
        id: f.id.map(|v| u32_of(&what("id"), v)).transpose()?,
        mark: u32_of(&what("mark"), f.mark)?,
        status: u32_of(&what("status"), f.status)?,
        timeout: u32_of(&what("timeout"), f.timeout)?,
        labels: 0,
    })
}

pub fn filter_in(x: ConntrackListFilter) -> Result<DumpFilter> {
    let proto = match x.protocol {
        None => None,
        Some(Either::A(name)) => Some(protocol_number(&name).map_err(to_js)?),
        Some(Either::B(n)) => Some(convert::index("protocol", n, 255)? as u8),
    };
    Ok(DumpFilter {
        proto,
        orig_dst: x.dst_ip.as_deref().map(|s| ip("dstIP", s)).transpose()?,
        orig_dst_port: x.dst_port.map(|p| port("dstPort", p)).transpose()?,
        ..Default::default()
    })
}

pub fn service_in(i: usize, s: &ConntrackService) -> Result<ServiceEntry> {
    let what = |field: &str| format!("services[{i}] ({}).{field}", s.name);
    Ok(ServiceEntry {
        port: port(&what("port"), s.port)?,
        node_port: s
            .node_port
            .map(|p| port(&what("nodePort"), p))
            .transpose()?
            .unwrap_or(0),
        name: s.name.clone(),
        protocol: s.protocol.clone(),
        cluster_ip: s.cluster_ip.clone(),
        external_ips: s.external_ips.clone().unwrap_or_default(),
        load_balancer_ips: s.load_balancer_ips.clone().unwrap_or_default(),
    })
}

pub fn endpoints_in(
    endpoints: &HashMap<String, Vec<ConntrackEndpoint>>,
) -> Result<HashMap<String, Vec<EndpointEntry>>> {
    let mut eps = HashMap::with_capacity(endpoints.len());
    for (name, list) in endpoints {
        let endpoint = |j: usize, e: &ConntrackEndpoint| {
            Ok(EndpointEntry {
                port: port(&format!("endpoints[{name:?}][{j}].port"), e.port)?,
                ip: e.ip.clone(),
                serving: e.serving,
            })
        };
        eps.insert(name.clone(), each(list, endpoint)?);
    }
    Ok(eps)
}
