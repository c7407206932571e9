//! The manager's configuration and upstream's checks on it (`MakeUserNsManager`, in order).

use crate::error::{Error, ErrorKind, Result};

/// `userNsUnitLength`: ranges are whole multiples of 65536 IDs.
pub const UNIT_LENGTH: u32 = 65536;
/// Kubelet default for `userNamespaces.idsPerPod`.
pub const DEFAULT_IDS_PER_POD: u32 = 65536;
/// Kubelet default for `maxPods`.
pub const DEFAULT_MAX_PODS: u32 = 110;
/// `mapReInitializeThreshold`: releases after which the pod map is rebuilt.
pub const REINIT_THRESHOLD: u64 = 1000;

/// Inputs of `MakeUserNsManager` once the kubelet's mapping pool is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub ids_per_pod: u32,
    /// First host ID of the pool (`kubeletMappingID`).
    pub first_id: u32,
    /// Number of IDs in the pool (`kubeletMappingLen`).
    pub length: u32,
    pub max_pods: u32,
}

/// The pool cut into slots: slot `i` maps host IDs from `(i + off) * ids_per_pod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub ids_per_pod: u32,
    pub off: u32,
    pub slots: u32,
}

impl Config {
    /// Upstream's checks in upstream's order, with upstream's texts.
    pub fn layout(&self) -> Result<Layout> {
        let l = self.ids_per_pod;
        let s = self.first_id;
        let n = self.length;
        let bad = |m: String| Err(Error::new(ErrorKind::Config, m));
        // Also rejects 0, which upstream's config validation refuses before the manager runs
        // (and which would divide by zero below).
        if !l.is_multiple_of(UNIT_LENGTH) || l == 0 {
            return bad(format!(
                "kubelet user namespace length {l} is not a multiple of {UNIT_LENGTH}"
            ));
        }
        if !s.is_multiple_of(l) {
            return bad(format!(
                "kubelet user assigned ID {s} is not a multiple of {l}"
            ));
        }
        if s < l {
            return bad(format!(
                "kubelet user assigned ID {s} must be greater or equal to {l}"
            ));
        }
        if !n.is_multiple_of(l) {
            return bad(format!(
                "kubelet user assigned IDs length {n} is not a multiple of {l}"
            ));
        }
        if n / l < self.max_pods {
            return bad(format!(
                "kubelet user assigned IDs are not enough to support {} pods",
                self.max_pods
            ));
        }
        Ok(Layout {
            ids_per_pod: l,
            off: s / l,
            slots: n / l,
        })
    }
}

impl Layout {
    /// First host ID of slot `i`, computed in 32 bits as upstream does
    /// (`uint32(firstZero + off) * userNsLength`), wrap-around included.
    pub fn first_id(&self, slot: u32) -> u32 {
        slot.wrapping_add(self.off).wrapping_mul(self.ids_per_pod)
    }

    /// Slot of a host ID (`int(id / L) - off`), or `None` outside `[0, slots)`.
    pub fn slot_of(&self, host_id: u32) -> Option<u32> {
        let index = i64::from(host_id / self.ids_per_pod) - i64::from(self.off);
        if index < 0 || index >= i64::from(self.slots) {
            return None;
        }
        u32::try_from(index).ok()
    }
}

/// The kubelet's default pool when there is no `kubelet` account: `[L, 2^32)`.
pub fn default_pool(ids_per_pod: u32) -> (u32, u32) {
    let len = (1u64 << 32).saturating_sub(u64::from(ids_per_pod));
    (ids_per_pod, len as u32)
}

/// Kubelet configuration validation of `userNamespaces.idsPerPod` (Linux), in order.
pub fn validate_ids_per_pod(v: i64) -> Result<u32> {
    let bad = |m: &str| {
        Err(Error::new(
            ErrorKind::Config,
            format!("invalid configuration: userNamespaces.idsPerPod {m}"),
        ))
    };
    if v < i64::from(UNIT_LENGTH) {
        return bad("must not be less than 65536");
    }
    if v % i64::from(UNIT_LENGTH) != 0 {
        return bad("must be a multiple of 65536");
    }
    if v > i64::from(u32::MAX) {
        return bad("must not be more than 4294967295");
    }
    Ok(v as u32)
}
