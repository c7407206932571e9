//! Pre-flight check of an ID pool or `idsPerPod` against the pods already on disk, before a
//! kubelet (or manager) starts with it. Upstream finds out at start: the first pod whose file
//! does not fit the new layout fails the whole restore, and only that pod is named. This reads
//! every `<pods>/<uid>/userns` without locking or changing anything and names every pod that
//! would fail, with the reason the restore would give.

use std::collections::HashMap;
use std::path::Path;

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::config::Config;
use crate::error::Result;
use crate::manager::{check_shape, list_mappings, slot_in_pool};

/// One pod whose file a manager with the checked pool would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "UsernsMisfit"))]
pub struct Misfit {
    /// Pod UID (the directory name; bytes that are not UTF-8 shown as U+FFFD).
    pub pod: String,
    /// First host ID of the pod's range; `None` when the file could not be read or parsed.
    pub host_id: Option<u32>,
    /// Number of IDs in the range; `None` as for `host_id`.
    pub length: Option<u32>,
    /// Why it does not fit: the error the restore would report for it.
    pub reason: String,
}

/// What [`check_pool`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "UsernsPoolCheck"))]
pub struct PoolCheck {
    /// Every pod on disk fits: a manager with this pool restores them all.
    pub fits: bool,
    /// Pods with a `userns` file.
    pub pods: u32,
    /// Ranges the pool can hand out (the one with ID 4294967295 does not count).
    pub usable_slots: u32,
    /// Every pod that does not fit, sorted by UID.
    pub misfits: Vec<Misfit>,
}

/// Checks `config` against every pod file in `pods_dir`: upstream's configuration checks first
/// (an error, as at start), then each pod in the restore's order with the restore's checks.
/// A range that two pods claim is a misfit of the later one, as the restore would find it.
pub fn check_pool(pods_dir: &Path, config: Config) -> Result<PoolCheck> {
    let layout = config.layout()?;
    let listed = list_mappings(pods_dir)?;
    let mut taken: HashMap<u32, String> = HashMap::new();
    let mut misfits = Vec::new();
    for p in &listed {
        let pod = p.pod.to_string_lossy().into_owned();
        let (host_id, length, why) = match p.mapping {
            Err(ref e) => (None, None, Some(e.clone())),
            Ok((h, l)) => {
                let why = check_shape(&layout, h, l)
                    .and_then(|()| slot_in_pool(&layout, h))
                    .map(|slot| match taken.get(&slot) {
                        Some(first) => Some(format!(
                            "range picked for pod {:?} already taken by pod {first:?}",
                            p.pod
                        )),
                        None => {
                            taken.insert(slot, pod.clone());
                            None
                        }
                    })
                    .unwrap_or_else(|e| Some(e.to_string()));
                (Some(h), Some(l), why)
            }
        };
        if let Some(reason) = why {
            misfits.push(Misfit {
                pod,
                host_id,
                length,
                reason,
            });
        }
    }
    Ok(PoolCheck {
        fits: misfits.is_empty(),
        pods: u32::try_from(listed.len()).unwrap_or(u32::MAX),
        usable_slots: layout.usable_slots,
        misfits,
    })
}
