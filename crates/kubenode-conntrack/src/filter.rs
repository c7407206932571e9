//! The general flow filter: which flows a list, delete, flush or event stream is about. One
//! type for every caller; [`FlowFilter::matches`] is the rule, and the kernel-side encoding
//! ([`encode_filter_attrs`]) only narrows what the kernel sends before that rule runs again
//! here, so a kernel that ignores part of it never changes a result.

use std::net::IpAddr;

use crate::attr::MsgBuf;
use crate::consts::*;
use crate::error::{Error, Result};
use crate::flow::{check_family, put_filter_flags, put_filter_tuple, DumpFilter, Family, Flow};
use crate::flow::{Tuple, TupleFilter};

/// An address or a CIDR (`prefix` bits of `addr` must match; a full-length prefix is one
/// address). Built with [`AddrMatch::new`] or [`AddrMatch::parse`], which check the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddrMatch {
    addr: IpAddr,
    prefix: u8,
}

fn max_prefix(ip: &IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

/// The address as a 128-bit number (IPv4 in the low 32 bits) and its bit width.
fn bits_of(ip: &IpAddr) -> (u128, u8) {
    match ip {
        IpAddr::V4(a) => (u128::from(u32::from(*a)), 32),
        IpAddr::V6(a) => (u128::from(*a), 128),
    }
}

impl AddrMatch {
    /// One address (a /32 or /128).
    pub fn host(addr: IpAddr) -> Self {
        Self {
            prefix: max_prefix(&addr),
            addr,
        }
    }

    /// `addr/prefix`; host bits set in `addr` are ignored, like the kernel's own masks.
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Self> {
        let max = max_prefix(&addr);
        if prefix > max {
            return Err(Error::OutOfRange(format!(
                "prefix length of {addr}/{prefix} must be in [0, {max}]"
            )));
        }
        Ok(Self { addr, prefix })
    }

    /// `"10.0.0.1"`, `"10.0.0.0/8"`, `"fd00::/64"`; `what` names the field in errors.
    pub fn parse(what: &str, s: &str) -> Result<Self> {
        let bad = || Error::InvalidArgument(format!("{what}: invalid IP address or CIDR {s:?}"));
        match s.split_once('/') {
            None => s.parse().map(Self::host).map_err(|_| bad()),
            Some((ip, len)) => {
                let addr: IpAddr = ip.parse().map_err(|_| bad())?;
                // Digits only: no sign, no spaces, no leading "0x".
                if len.is_empty() || len.len() > 3 || !len.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                let prefix: u8 = len.parse().map_err(|_| bad())?;
                Self::new(addr, prefix).map_err(|e| Error::OutOfRange(format!("{what}: {e}")))
            }
        }
    }

    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    pub fn family(&self) -> Family {
        Family::of(&self.addr)
    }

    /// A single address: the kernel can filter it exactly.
    pub fn is_host(&self) -> bool {
        self.prefix == max_prefix(&self.addr)
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        let ((want, width), (got, got_width)) = (bits_of(&self.addr), bits_of(ip));
        if width != got_width {
            return false;
        }
        if self.prefix == 0 {
            return true;
        }
        let shift = u32::from(width - self.prefix);
        (want >> shift) == (got >> shift)
    }
}

impl std::fmt::Display for AddrMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_host() {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.prefix)
        }
    }
}

/// The fields of one direction of a flow a filter can name; `None` matches anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DirectionFilter {
    pub src: Option<AddrMatch>,
    pub dst: Option<AddrMatch>,
    pub src_port: Option<u16>,
    pub dst_port: Option<u16>,
}

impl DirectionFilter {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    fn has_port(&self) -> bool {
        self.src_port.is_some() || self.dst_port.is_some()
    }

    pub fn matches(&self, t: &Tuple) -> bool {
        let addr = |m: &Option<AddrMatch>, ip: &Option<IpAddr>| match (m, ip) {
            (None, _) => true,
            (Some(m), Some(ip)) => m.contains(ip),
            (Some(_), None) => false,
        };
        addr(&self.src, &t.src)
            && addr(&self.dst, &t.dst)
            && self.src_port.is_none_or(|p| t.src_port == p)
            && self.dst_port.is_none_or(|p| t.dst_port == p)
    }

    /// The part the kernel's `CTA_FILTER` can match exactly: ports, and addresses that are
    /// single hosts. The kernel compares whole addresses, so a CIDR other than /32 or /128 is
    /// left to [`FlowFilter::matches`].
    fn kernel_part(&self) -> TupleFilter {
        let host = |m: &Option<AddrMatch>| m.filter(AddrMatch::is_host).map(|m| m.addr);
        TupleFilter {
            src: host(&self.src),
            dst: host(&self.dst),
            src_port: self.src_port,
            dst_port: self.dst_port,
        }
    }

    fn validate(&self, family: Family, dir: &str) -> Result<()> {
        for (m, end) in [(&self.src, "source"), (&self.dst, "destination")] {
            if let Some(m) = m {
                check_family(family, &m.addr, || format!("{dir} {end} filter"))?;
            }
        }
        Ok(())
    }
}

/// A value compared under a mask: a flow matches when `field & mask == value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Masked<T> {
    pub value: T,
    pub mask: T,
}

/// Protocols whose flows carry ports (`nf_ct_port_nlattr_to_tuple` in the kernel).
fn has_ports(proto: u8) -> bool {
    // TCP, UDP, DCCP, SCTP, UDP-Lite.
    matches!(proto, 6 | 17 | 33 | 132 | 136)
}

/// Which flows an operation is about. Every set field must match (AND); an empty filter
/// matches every flow of the family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FlowFilter {
    /// IP protocol number of the original direction.
    pub proto: Option<u8>,
    pub orig: DirectionFilter,
    pub reply: DirectionFilter,
    pub zone: Option<u16>,
    pub mark: Option<Masked<u32>>,
    /// Label bit n is bit n of the number (`conntrack -l n`).
    pub labels: Option<Masked<u128>>,
}

impl FlowFilter {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The rule every path ends with: what the kernel filtered is checked again here.
    pub fn matches(&self, f: &Flow) -> bool {
        self.proto.is_none_or(|p| f.orig.proto == p)
            && self.orig.matches(&f.orig)
            && self.reply.matches(&f.reply)
            && self.zone.is_none_or(|z| f.zone == z)
            && self.mark.is_none_or(|m| f.mark & m.mask == m.value)
            && self.labels.is_none_or(|l| f.labels & l.mask == l.value)
    }

    /// Checks the filter against the table's family; messages name the field at fault.
    pub fn validate(&self, family: Family) -> Result<()> {
        self.orig.validate(family, "original")?;
        self.reply.validate(family, "reply")?;
        if self.orig.has_port() || self.reply.has_port() {
            match self.proto {
                None => {
                    return Err(Error::InvalidArgument(
                        "a port filter needs a protocol filter as well".into(),
                    ))
                }
                Some(p) if !has_ports(p) => {
                    return Err(Error::InvalidArgument(format!(
                        "a port filter needs a protocol with ports (tcp, udp, sctp, dccp, \
                         udplite), got protocol {p}"
                    )))
                }
                Some(_) => {}
            }
        }
        if let Some(m) = self.mark {
            if m.value & !m.mask != 0 {
                return Err(Error::InvalidArgument(format!(
                    "mark value {:#x} has bits outside its mask {:#x}",
                    m.value, m.mask
                )));
            }
        }
        if let Some(l) = self.labels {
            if l.value & !l.mask != 0 {
                return Err(Error::InvalidArgument(format!(
                    "labels value {:#x} has bits outside its mask {:#x}",
                    l.value, l.mask
                )));
            }
        }
        Ok(())
    }

    /// Whether the kernel is asked to narrow a dump with `CTA_FILTER` (protocol, ports, host
    /// addresses).
    fn kernel_tuples(&self) -> Option<(TupleFilter, Option<TupleFilter>)> {
        let orig = self.orig.kernel_part();
        let reply = self.reply.kernel_part();
        let empty = TupleFilter::default();
        if self.proto.is_none() && orig == empty && reply == empty {
            return None;
        }
        Some((orig, (reply != empty).then_some(reply)))
    }
}

impl From<DumpFilter> for FlowFilter {
    fn from(d: DumpFilter) -> Self {
        FlowFilter {
            proto: d.proto,
            orig: DirectionFilter {
                dst: d.orig_dst.map(AddrMatch::host),
                dst_port: d.orig_dst_port,
                ..Default::default()
            },
            reply: DirectionFilter {
                src: d.reply_src.map(AddrMatch::host),
                src_port: d.reply_src_port,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

impl From<&DumpFilter> for FlowFilter {
    fn from(d: &DumpFilter) -> Self {
        FlowFilter::from(*d)
    }
}

impl From<&FlowFilter> for FlowFilter {
    fn from(f: &FlowFilter) -> Self {
        *f
    }
}

/// Appends the attributes that let the kernel narrow a dump (or, on kernels that take them, a
/// flush) by `filter`:
/// - `CTA_FILTER` with the original/reply tuples (Linux ≥ 5.8) for protocol, ports and host
///   addresses; CIDRs wider than one host cannot be expressed and stay in Rust;
/// - `CTA_MARK` + `CTA_MARK_MASK`: the kernel keeps flows with `mark & mask == value`;
/// - `CTA_ZONE`: read by kernels with `CTA_FILTER` (zone 0 there means "any zone", which only
///   widens the result).
///
/// Labels have no kernel-side filter. Kernels without a part of this ignore it, which only
/// widens what they send.
pub fn encode_filter_attrs(b: &mut MsgBuf, filter: &FlowFilter) {
    if let Some((orig, reply)) = filter.kernel_tuples() {
        // The kernel refuses port flags without a protocol; validation guarantees one then.
        let (proto, with_proto) = match filter.proto {
            Some(p) => (p, true),
            None => (0, false),
        };
        let orig_flags = put_kernel_tuple(b, CTA_TUPLE_ORIG, proto, with_proto, &orig);
        let reply_flags = match reply {
            Some(r) => put_kernel_tuple(b, CTA_TUPLE_REPLY, proto, with_proto, &r),
            None => 0,
        };
        put_filter_flags(b, orig_flags, reply_flags);
        if let Some(z) = filter.zone {
            b.attr(CTA_ZONE, &z.to_be_bytes());
        }
    }
    if let Some(m) = filter.mark {
        b.attr(CTA_MARK, &m.value.to_be_bytes());
        b.attr(CTA_MARK_MASK, &m.mask.to_be_bytes());
    }
}

/// One `CTA_FILTER` tuple. Without a protocol the tuple carries addresses only (the kernel
/// matches them across protocols).
fn put_kernel_tuple(
    b: &mut MsgBuf,
    nest: u16,
    proto: u8,
    with_proto: bool,
    t: &TupleFilter,
) -> u32 {
    if with_proto {
        return put_filter_tuple(b, nest, proto, t);
    }
    let mut flags = 0;
    let n = b.begin_nest(nest);
    if t.src.is_some() || t.dst.is_some() {
        flags = crate::flow::put_filter_ips(b, t);
    }
    b.end_nest(n);
    flags
}

/// Encodes a dump request (GET + DUMP) for `family` with the kernel-side part of `filter`.
pub fn encode_filtered_dump(b: &mut MsgBuf, family: Family, filter: &FlowFilter, seq: u32) {
    let m = b.begin_msg(
        ct_type(IPCTNL_MSG_CT_GET),
        NLM_F_REQUEST | NLM_F_DUMP,
        seq,
        family.af(),
    );
    encode_filter_attrs(b, filter);
    b.end_msg(m);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn flow() -> Flow {
        Flow {
            orig: Tuple {
                src: Some(ip("10.1.0.5")),
                dst: Some(ip("10.96.0.10")),
                proto: IPPROTO_UDP,
                src_port: 40000,
                dst_port: 53,
            },
            reply: Tuple {
                src: Some(ip("10.2.0.7")),
                dst: Some(ip("10.1.0.5")),
                proto: IPPROTO_UDP,
                src_port: 5353,
                dst_port: 40000,
            },
            zone: 3,
            mark: 0x1234,
            labels: 1 << 5 | 1 << 100,
            ..Default::default()
        }
    }

    #[test]
    fn cidrs_parse_and_contain() {
        let m = AddrMatch::parse("src", "10.1.0.0/16").unwrap();
        assert!(m.contains(&ip("10.1.255.1")));
        assert!(!m.contains(&ip("10.2.0.1")));
        assert!(!m.contains(&ip("::a01:1")), "families never mix");
        assert_eq!(m.to_string(), "10.1.0.0/16");
        assert!(AddrMatch::parse("src", "0.0.0.0/0")
            .unwrap()
            .contains(&ip("1.2.3.4")));
        assert!(AddrMatch::parse("src", "fd00::/8")
            .unwrap()
            .contains(&ip("fd12::1")));
        assert!(AddrMatch::parse("src", "10.0.0.1").unwrap().is_host());
        assert!(AddrMatch::parse("src", "10.0.0.1/32").unwrap().is_host());
        assert!(!AddrMatch::parse("src", "::/127").unwrap().is_host());
        assert_eq!(
            AddrMatch::parse("orig src", "10.0.0.0/33")
                .unwrap_err()
                .to_string(),
            "orig src: prefix length of 10.0.0.0/33 must be in [0, 32]"
        );
        assert!(AddrMatch::parse("x", "::/129").is_err());
        for bad in [
            "",
            "10.0.0.0/",
            "10.0.0.0/+8",
            "10.0.0.0/ 8",
            "10.0.0/8",
            "x/8",
            "10.0.0.0/1000",
        ] {
            let e = AddrMatch::parse("orig src", bad).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("orig src: invalid IP address or CIDR"),
                "{bad}: {e}"
            );
        }
        assert!(AddrMatch::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 128).is_ok());
        assert!(AddrMatch::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 33).is_err());
    }

    #[test]
    fn each_field_selects() {
        let f = flow();
        let cidr = |s: &str| Some(AddrMatch::parse("t", s).unwrap());
        let yes = [
            FlowFilter::default(),
            FlowFilter {
                proto: Some(IPPROTO_UDP),
                ..Default::default()
            },
            FlowFilter {
                orig: DirectionFilter {
                    src: cidr("10.1.0.0/24"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                orig: DirectionFilter {
                    dst: cidr("10.96.0.10"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                reply: DirectionFilter {
                    src: cidr("10.2.0.7/32"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                reply: DirectionFilter {
                    dst: cidr("10.0.0.0/8"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                proto: Some(17),
                orig: DirectionFilter {
                    src_port: Some(40000),
                    dst_port: Some(53),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                proto: Some(17),
                reply: DirectionFilter {
                    src_port: Some(5353),
                    dst_port: Some(40000),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                zone: Some(3),
                ..Default::default()
            },
            FlowFilter {
                mark: Some(Masked {
                    value: 0x34,
                    mask: 0xff,
                }),
                ..Default::default()
            },
            FlowFilter {
                labels: Some(Masked {
                    value: 1 << 100,
                    mask: 1 << 100,
                }),
                ..Default::default()
            },
            FlowFilter {
                labels: Some(Masked {
                    value: 1 << 5,
                    mask: 1 << 5 | 1 << 6,
                }),
                ..Default::default()
            },
        ];
        for (i, filter) in yes.iter().enumerate() {
            assert!(filter.matches(&f), "yes[{i}]: {filter:?}");
            filter.validate(Family::V4).unwrap();
        }
        let no = [
            FlowFilter {
                proto: Some(IPPROTO_TCP),
                ..Default::default()
            },
            FlowFilter {
                orig: DirectionFilter {
                    src: cidr("10.1.1.0/24"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                orig: DirectionFilter {
                    dst: cidr("10.96.0.11"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                reply: DirectionFilter {
                    src: cidr("10.96.0.10"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                reply: DirectionFilter {
                    dst: cidr("11.0.0.0/8"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                proto: Some(17),
                orig: DirectionFilter {
                    src_port: Some(40001),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                proto: Some(17),
                orig: DirectionFilter {
                    dst_port: Some(54),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                proto: Some(17),
                reply: DirectionFilter {
                    src_port: Some(53),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                proto: Some(17),
                reply: DirectionFilter {
                    dst_port: Some(1),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                zone: Some(0),
                ..Default::default()
            },
            FlowFilter {
                mark: Some(Masked {
                    value: 0x1234,
                    mask: 0xff,
                }),
                ..Default::default()
            }
            .with_valid_mark(),
            FlowFilter {
                mark: Some(Masked {
                    value: 0,
                    mask: u32::MAX,
                }),
                ..Default::default()
            },
            FlowFilter {
                labels: Some(Masked {
                    value: 1 << 6,
                    mask: 1 << 6,
                }),
                ..Default::default()
            },
        ];
        for (i, filter) in no.iter().enumerate() {
            assert!(!filter.matches(&f), "no[{i}]: {filter:?}");
        }
        // An address filter never matches a flow whose address the kernel did not send.
        let mut bare = f;
        bare.reply.src = None;
        assert!(!yes[4].matches(&bare));
    }

    impl FlowFilter {
        fn with_valid_mark(mut self) -> Self {
            if let Some(m) = &mut self.mark {
                m.value &= m.mask;
                m.mask |= 0xff00;
            }
            self
        }
    }

    #[test]
    fn validation_names_the_field() {
        let host = |s: &str| Some(AddrMatch::parse("t", s).unwrap());
        let msg = |f: FlowFilter, fam| f.validate(fam).unwrap_err().to_string();
        assert_eq!(
            msg(
                FlowFilter {
                    orig: DirectionFilter {
                        src: host("fd00::1"),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                Family::V4
            ),
            "original source filter: fd00::1 is not an IPv4 address (family mismatch)"
        );
        assert_eq!(
            msg(
                FlowFilter {
                    reply: DirectionFilter {
                        dst: host("10.0.0.0/8"),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                Family::V6
            ),
            "reply destination filter: 10.0.0.0 is not an IPv6 address (family mismatch)"
        );
        assert_eq!(
            msg(
                FlowFilter {
                    orig: DirectionFilter {
                        dst_port: Some(53),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                Family::V4
            ),
            "a port filter needs a protocol filter as well"
        );
        assert_eq!(
            msg(FlowFilter { proto: Some(1), reply: DirectionFilter { src_port: Some(1), ..Default::default() }, ..Default::default() }, Family::V4),
            "a port filter needs a protocol with ports (tcp, udp, sctp, dccp, udplite), got protocol 1"
        );
        assert_eq!(
            msg(
                FlowFilter {
                    mark: Some(Masked {
                        value: 0x100,
                        mask: 0xff
                    }),
                    ..Default::default()
                },
                Family::V4
            ),
            "mark value 0x100 has bits outside its mask 0xff"
        );
        assert_eq!(
            msg(
                FlowFilter {
                    labels: Some(Masked { value: 3, mask: 1 }),
                    ..Default::default()
                },
                Family::V4
            ),
            "labels value 0x3 has bits outside its mask 0x1"
        );
        let e = FlowFilter {
            orig: DirectionFilter {
                src: host("fd00::1"),
                ..Default::default()
            },
            ..Default::default()
        }
        .validate(Family::V4)
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Family);
    }

    #[test]
    fn dump_filters_convert() {
        let d = DumpFilter {
            proto: Some(17),
            orig_dst: Some(ip("10.96.0.10")),
            orig_dst_port: Some(53),
            reply_src: Some(ip("10.2.0.7")),
            reply_src_port: Some(5353),
        };
        let f = FlowFilter::from(d);
        assert!(f.matches(&flow()) && d.matches(&flow()));
        let mut other = flow();
        other.reply.src = Some(ip("10.2.0.8"));
        assert!(!f.matches(&other) && !d.matches(&other));
    }
}
