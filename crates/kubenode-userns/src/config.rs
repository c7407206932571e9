//! The manager's configuration and upstream's checks on it (`MakeUserNsManager`, in order).

use std::path::PathBuf;

use crate::error::{Error, ErrorKind, Result};
#[cfg(feature = "napi")]
use napi_derive::napi;

/// `userNsUnitLength`: ranges are whole multiples of 65536 IDs.
pub const UNIT_LENGTH: u32 = 65536;
/// Kubelet default for `userNamespaces.idsPerPod`.
pub const DEFAULT_IDS_PER_POD: u32 = 65536;
/// Kubelet default for `maxPods`.
pub const DEFAULT_MAX_PODS: u32 = 110;
/// `mapReInitializeThreshold`: releases after which the pod map is rebuilt.
pub const REINIT_THRESHOLD: u64 = 1000;
/// IDs are 32-bit: a pool may end at 2^32 (exclusive) and no further.
pub const ID_SPACE: u64 = 1 << 32;
/// `(uid_t)-1`: the kernel refuses any map extent that reaches it, so a pod given the range
/// that holds it never starts.
pub const UNMAPPABLE_ID: u32 = u32::MAX;

/// Inputs of `MakeUserNsManager` once the kubelet's mapping pool is known (the binding takes
/// them from JS as doubles and checks each before building one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub ids_per_pod: u32,
    /// First host ID of the pool (`kubeletMappingID`).
    pub first_id: u32,
    /// Number of IDs in the pool (`kubeletMappingLen`).
    pub length: u32,
    pub max_pods: u32,
}

/// A manager's pods directory and configuration as a caller outside Rust gives them, in one
/// object (the binding's `UsernsCore.open`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "UsernsConfig"))]
pub struct PodsConfig {
    /// The kubelet's pods directory (`<root-dir>/pods`).
    pub pods_dir: String,
    pub ids_per_pod: u32,
    pub first_id: u32,
    pub length: u32,
    pub max_pods: u32,
}

impl PodsConfig {
    pub fn pods_dir(&self) -> PathBuf {
        PathBuf::from(&self.pods_dir)
    }

    /// The numbers, as upstream's configuration (checked by [`Config::layout`]).
    pub fn config(&self) -> Config {
        Config {
            ids_per_pod: self.ids_per_pod,
            first_id: self.first_id,
            length: self.length,
            max_pods: self.max_pods,
        }
    }
}

/// The pool cut into slots: slot `i` maps host IDs from `(i + off) * ids_per_pod`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "UsernsLayout"))]
pub struct Layout {
    /// IDs per pod, as given.
    pub ids_per_pod: u32,
    /// The pool's first ID divided by the IDs per pod.
    pub off: u32,
    /// The pool's length divided by the IDs per pod: the number of slots.
    pub slots: u32,
    /// Slots that can be handed out: all but the one whose range holds ID 4294967295
    /// ([`Layout::reserved_slot`]).
    pub usable_slots: u32,
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
        // Not in upstream, which computes slot IDs in uint32 and would wrap past 2^32 onto
        // host IDs from 0 (root) up.
        if u64::from(s) + u64::from(n) > ID_SPACE {
            return bad(format!(
                "kubelet user assigned IDs from {s} with length {n} go past the largest ID {}",
                ID_SPACE - 1
            ));
        }
        let mut layout = Layout {
            ids_per_pod: l,
            off: s / l,
            slots: n / l,
            usable_slots: n / l,
        };
        layout.usable_slots -= u32::from(layout.reserved_slot().is_some());
        // Not in upstream, which counts the range with ID 4294967295 as usable.
        if layout.usable_slots < self.max_pods {
            return bad(format!(
                "kubelet user assigned IDs are not enough to support {} pods: the range with ID {UNMAPPABLE_ID} is never handed out",
                self.max_pods
            ));
        }
        Ok(layout)
    }
}

impl Layout {
    /// First host ID of slot `i` (upstream's `uint32(firstZero + off) * userNsLength`), in 64
    /// bits: `None` when the slot's range would not end within the 32-bit ID space, which a
    /// layout from [`Config::layout`] never allows for `slot < slots`.
    pub fn first_id(&self, slot: u32) -> Option<u32> {
        let l = u64::from(self.ids_per_pod);
        let first = u64::from(slot)
            .checked_add(u64::from(self.off))?
            .checked_mul(l)?;
        if first.checked_add(l)? > ID_SPACE {
            return None;
        }
        u32::try_from(first).ok()
    }

    /// The slot whose range holds ID 4294967295 (the last one of a pool that ends at 2^32):
    /// kept allocated and never handed out, since the kernel would refuse its mapping.
    pub fn reserved_slot(&self) -> Option<u32> {
        let end = (u64::from(self.off) + u64::from(self.slots)) * u64::from(self.ids_per_pod);
        (self.slots > 0 && end == ID_SPACE).then(|| self.slots - 1)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pods_config_splits_into_the_directory_and_upstreams_configuration() {
        let c = PodsConfig {
            pods_dir: "/var/lib/kubelet/pods".into(),
            ids_per_pod: UNIT_LENGTH,
            first_id: 2 * UNIT_LENGTH,
            length: 300 * UNIT_LENGTH,
            max_pods: DEFAULT_MAX_PODS,
        };
        assert_eq!(c.pods_dir(), PathBuf::from("/var/lib/kubelet/pods"));
        let config = c.config();
        assert_eq!(
            config,
            Config {
                ids_per_pod: UNIT_LENGTH,
                first_id: 2 * UNIT_LENGTH,
                length: 300 * UNIT_LENGTH,
                max_pods: DEFAULT_MAX_PODS,
            }
        );
        assert_eq!(config.layout().map(|l| (l.off, l.slots)), Ok((2, 300)));
    }

    #[test]
    fn the_range_with_the_unmappable_id_is_reserved() {
        // The kubelet's default pool [L, 2^32): 65535 ranges, 65534 usable.
        let (first_id, length) = default_pool(UNIT_LENGTH);
        let c = Config {
            ids_per_pod: UNIT_LENGTH,
            first_id,
            length,
            max_pods: DEFAULT_MAX_PODS,
        };
        let l = c.layout().unwrap();
        assert_eq!(
            (l.slots, l.usable_slots, l.reserved_slot()),
            (65535, 65534, Some(65534))
        );
        assert_eq!(l.first_id(65534), Some(UNMAPPABLE_ID - (UNIT_LENGTH - 1)));
        // A pool that ends below 2^32 keeps every range.
        let l = Config {
            length: 2000 * UNIT_LENGTH,
            ..c
        }
        .layout()
        .unwrap();
        assert_eq!((l.usable_slots, l.reserved_slot()), (2000, None));
    }

    proptest! {
        /// Over random pools (valid and not): a layout exists exactly when upstream's checks
        /// pass and the pool ends by 2^32, and then every slot's range is inside the pool, at
        /// or above idsPerPod, and next to its neighbours without overlap.
        #[test]
        fn slot_ids_never_wrap(k in 1u32..=8, s in any::<u32>(), n in any::<u32>(), snap in any::<bool>(), p in 1u32..=200, probe in any::<u32>()) {
            let l = k * UNIT_LENGTH;
            // Half the cases on multiples of l, so that upstream's checks pass often.
            let (s, n) = if snap { (s / l * l, n / l * l) } else { (s, n) };
            let c = Config { ids_per_pod: l, first_id: s, length: n, max_pods: p };
            let upstream_ok = s % l == 0 && s >= l && n % l == 0 && n / l >= p;
            // The range with 4294967295 (last of a pool ending at 2^32) does not count.
            let reserved = u32::from(u64::from(s) + u64::from(n) == ID_SPACE && n > 0);
            let fits = u64::from(s) + u64::from(n) <= ID_SPACE && n / l - reserved >= p;
            match c.layout() {
                Err(e) => {
                    prop_assert!(!(upstream_ok && fits), "refused a valid pool: {}", e);
                    prop_assert_eq!(e.kind(), ErrorKind::Config);
                }
                Ok(layout) => {
                    prop_assert!(upstream_ok && fits);
                    for slot in [0, layout.slots - 1, probe % layout.slots] {
                        let first = layout.first_id(slot).map(u64::from);
                        prop_assert_eq!(first, Some(u64::from(s) + u64::from(slot) * u64::from(l)));
                        let first = first.unwrap_or(0);
                        prop_assert!(first >= u64::from(l));
                        prop_assert!(first + u64::from(l) <= u64::from(s) + u64::from(n));
                        prop_assert_eq!(layout.slot_of(first as u32), Some(slot));
                    }
                }
            }
        }
    }
}
