//! The `userns` file format, encoded and decoded exactly like Go's `encoding/json` does for
//! upstream's `userNamespace` struct: compact output in field order, and on input Go's syntax
//! check (with its error texts), case-insensitive field names, unknown fields ignored, `null`
//! leaving a value unchanged, and numbers that do not fit a uint32 rejected.

#[cfg(feature = "napi")]
use napi_derive::napi;

mod decoder;
mod encode;
mod scanner;

pub use encode::encode;

/// One `idMapping` entry of the file (and of the CRI message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "napi", napi(object, js_name = "UsernsIdMapping"))]
pub struct IdMapping {
    /// First ID on the host.
    pub host_id: u32,
    /// First ID inside the container (0 for pod user namespaces).
    pub container_id: u32,
    /// Number of IDs mapped.
    pub length: u32,
}

/// Upstream's `userNamespace` struct.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "napi", napi(object, js_name = "UsernsNamespace"))]
pub struct UserNamespace {
    pub uid_mappings: Vec<IdMapping>,
    pub gid_mappings: Vec<IdMapping>,
}

impl UserNamespace {
    /// One identical UID and GID entry mapping container ID 0, as the manager writes it.
    pub fn single(host_id: u32, length: u32) -> Self {
        let m = IdMapping {
            host_id,
            container_id: 0,
            length,
        };
        Self {
            uid_mappings: vec![m],
            gid_mappings: vec![m],
        }
    }
}

/// `json.Unmarshal(data, &userNamespace{})`. The error is Go's text (`unexpected end of JSON
/// input`, `invalid character …`, `json: cannot unmarshal …`).
pub fn decode(data: &[u8]) -> Result<UserNamespace, String> {
    scanner::check_valid(data)?;
    decoder::decode_valid(data)
}
