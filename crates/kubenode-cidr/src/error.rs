use thiserror::Error;

/// Why a text is not an address or a prefix. Messages follow Go's `net/netip` wording.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CidrError {
    #[error("ParseAddr({0:?}): unable to parse IP")]
    BadAddr(String),
    #[error("ParseAddr({0:?}): IPv6 zones are not supported here")]
    Zone(String),
    #[error("netip.ParsePrefix({0:?}): no '/'")]
    NoSlash(String),
    #[error("netip.ParsePrefix({0:?}): bad bits after slash")]
    BadBits(String),
    #[error("netip.ParsePrefix({0:?}): prefix length out of range")]
    BitsOutOfRange(String),
    #[error("netip.ParsePrefix({0:?}): IPv6 zones cannot be present in a prefix")]
    PrefixZone(String),
}
