use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::CidrError;

/// IP family as Kubernetes labels it (`ipaddress.kubernetes.io/ip-family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn bit_len(self) -> u8 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }

    /// The label value: `IPv4` or `IPv6`.
    pub fn label(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

/// An address as Go's `netip.Addr` sees it: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
/// stays IPv6, so it never matches an IPv4 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    V4(u32),
    V6(u128),
}

impl Addr {
    /// `netip.ParseAddr`, except that zoned IPv6 addresses are refused (a zoned address is
    /// contained in no prefix upstream, so refusing it gives the same answers).
    pub fn parse(s: &str) -> Result<Addr, CidrError> {
        if s.contains('%') {
            return Err(CidrError::Zone(s.to_string()));
        }
        if s.contains(':') {
            return s
                .parse::<Ipv6Addr>()
                .map(|a| Addr::V6(u128::from(a)))
                .map_err(|_| CidrError::BadAddr(s.to_string()));
        }
        // std refuses leading zeros in IPv4 octets, as netip does.
        s.parse::<Ipv4Addr>()
            .map(|a| Addr::V4(u32::from(a)))
            .map_err(|_| CidrError::BadAddr(s.to_string()))
    }

    pub fn family(self) -> Family {
        match self {
            Addr::V4(_) => Family::V4,
            Addr::V6(_) => Family::V6,
        }
    }

    /// The address as a left-aligned 128-bit value (IPv4 in the top 32 bits), for the trie.
    pub fn bits128(self) -> u128 {
        match self {
            Addr::V4(v) => u128::from(v) << 96,
            Addr::V6(v) => v,
        }
    }

    /// Bit `i` counted from the most significant bit (0-based).
    pub fn bit(self, i: u8) -> usize {
        ((self.bits128() >> (127 - u32::from(i))) & 1) as usize
    }

    /// Go's `Addr.Is4In6`.
    pub fn is_4in6(self) -> bool {
        matches!(self, Addr::V6(v) if v >> 32 == 0xffff)
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Addr::V4(v) => write!(f, "{}", Ipv4Addr::from(v)),
            Addr::V6(v) => {
                let a = Ipv6Addr::from(v);
                // netip prints 4in6 as ::ffff:a.b.c.d, as std does.
                write!(f, "{a}")
            }
        }
    }
}

/// Upstream `IPToAddr(net.ParseIP(s))`: IPv4 (including IPv4-mapped IPv6) comes back as plain
/// IPv4; anything unparsable gives `None` (upstream's zero `Addr`).
pub fn ip_to_addr(s: &str) -> Option<Addr> {
    match Addr::parse(s).ok()? {
        a @ Addr::V4(_) => Some(a),
        a @ Addr::V6(v) if a.is_4in6() => Some(Addr::V4(v as u32)),
        a => Some(a),
    }
}
