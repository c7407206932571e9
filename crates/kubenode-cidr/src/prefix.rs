use std::fmt;

use crate::{Addr, CidrError, Family};

/// A prefix as Go's `netip.Prefix`: the address keeps any host bits as written; comparisons
/// that upstream makes on masked forms use [`Prefix::masked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    addr: Addr,
    bits: u8,
}

impl Prefix {
    /// `netip.ParsePrefix`: `addr/bits`, bits in decimal without sign or leading zero, at most
    /// 32 for IPv4 and 128 for IPv6 (including IPv4-mapped IPv6), no zone.
    pub fn parse(s: &str) -> Result<Prefix, CidrError> {
        let Some((a, b)) = s.rsplit_once('/') else {
            return Err(CidrError::NoSlash(s.to_string()));
        };
        if a.contains('%') {
            return Err(CidrError::PrefixZone(s.to_string()));
        }
        let addr = Addr::parse(a).map_err(|_| CidrError::BadAddr(s.to_string()))?;
        let digits_ok = !b.is_empty() && b.len() <= 3 && b.bytes().all(|c| c.is_ascii_digit());
        if !digits_ok || (b.len() > 1 && b.starts_with('0')) {
            return Err(CidrError::BadBits(s.to_string()));
        }
        let bits: u16 = b.parse().map_err(|_| CidrError::BadBits(s.to_string()))?;
        if bits > u16::from(addr.family().bit_len()) {
            return Err(CidrError::BitsOutOfRange(s.to_string()));
        }
        Ok(Prefix {
            addr,
            bits: bits as u8,
        })
    }

    pub fn new(addr: Addr, bits: u8) -> Option<Prefix> {
        (bits <= addr.family().bit_len()).then_some(Prefix { addr, bits })
    }

    pub fn addr(&self) -> Addr {
        self.addr
    }

    pub fn bits(&self) -> u8 {
        self.bits
    }

    pub fn family(&self) -> Family {
        self.addr.family()
    }

    /// The prefix with host bits cleared (`Prefix.Masked`).
    pub fn masked(&self) -> Prefix {
        let addr = match self.addr {
            Addr::V4(v) => Addr::V4(if self.bits == 0 {
                0
            } else {
                v & (u32::MAX << (32 - u32::from(self.bits)))
            }),
            Addr::V6(v) => Addr::V6(if self.bits == 0 {
                0
            } else {
                v & (u128::MAX << (128 - u32::from(self.bits)))
            }),
        };
        Prefix {
            addr,
            bits: self.bits,
        }
    }

    /// `Prefix.Overlaps`: same family and equal on the shorter prefix length.
    pub fn overlaps(&self, o: &Prefix) -> bool {
        if self.family() != o.family() {
            return false;
        }
        let min = self.bits.min(o.bits);
        if min == 0 {
            return true;
        }
        let m = |p: &Prefix| {
            Prefix {
                addr: p.addr,
                bits: min,
            }
            .masked()
            .addr
        };
        m(self) == m(o)
    }

    /// `Prefix.Contains`: plain containment, same family only.
    pub fn contains(&self, ip: Addr) -> bool {
        if self.family() != ip.family() {
            return false;
        }
        Prefix {
            addr: ip,
            bits: self.bits,
        }
        .masked()
        .addr
            == self.masked().addr
    }

    /// Upstream `ContainsPrefix` test for one CIDR: this prefix equals or encloses `o`.
    pub fn encloses(&self, o: &Prefix) -> bool {
        self.overlaps(o) && self.bits <= o.bits
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Upstream `broadcastAddress`: all host bits of the masked address set to 1. Upstream fails
/// only for the invalid zero prefix, which this type cannot hold.
pub fn broadcast_address(p: &Prefix) -> Addr {
    let host = u32::from(p.family().bit_len() - p.bits());
    match p.masked().addr() {
        Addr::V4(v) => Addr::V4(if host >= 32 {
            u32::MAX
        } else {
            v | ((1u32 << host) - 1)
        }),
        Addr::V6(v) => Addr::V6(if host >= 128 {
            u128::MAX
        } else {
            v | ((1u128 << host) - 1)
        }),
    }
}

/// Upstream `PrefixContainsIP`: contained, but not the network address, and for IPv4 not the
/// broadcast address either (a ServiceCIDR never allocates those).
pub fn prefix_contains_ip(p: &Prefix, ip: Addr) -> bool {
    if p.masked().addr() == ip {
        return false;
    }
    if let Addr::V4(_) = ip {
        if broadcast_address(p) == ip {
            return false;
        }
    }
    p.contains(ip)
}
