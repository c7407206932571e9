//! Admitting many pods in one call: names as [`NameTable`] indexes with per-pod name counts and
//! host flags. A caller crossing from another runtime makes one call per batch; messages are
//! built only for rejected pods.

#[cfg(feature = "napi")]
use napi_derive::napi;
use thiserror::Error;

use crate::allowlist::AdmitError;
use crate::interned::{NameTable, UnknownName};

/// Why a batch could not be read; no pod of it was admitted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BatchError {
    #[error("counts and flags must have the same length")]
    LengthMismatch,
    #[error("counts add up to more than the ids given")]
    TooFewIds,
    #[error(transparent)]
    UnknownName(#[from] UnknownName),
}

/// A rejected pod of a batch: its position and upstream's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub index: u32,
    pub error: AdmitError,
}

/// A batch's rejections as JavaScript reads them: two parallel lists, so a batch with few
/// rejections crosses as two short arrays rather than an object per pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "SysctlRejections"))]
pub struct Rejections {
    /// Indexes of rejected pods, ascending.
    pub indexes: Vec<u32>,
    /// `forbidden sysctl: …` for each rejected pod.
    pub messages: Vec<String>,
}

impl From<Vec<Rejection>> for Rejections {
    fn from(v: Vec<Rejection>) -> Self {
        let (indexes, messages) = v.into_iter().map(|r| (r.index, r.error.message())).unzip();
        Rejections { indexes, messages }
    }
}

impl NameTable {
    /// `Admit` of many pods: pod i has the next `counts[i]` indexes of `ids` and host flags
    /// `flags[i]` ([`HOST_NETWORK`], [`HOST_IPC`], [`POD_USERNS`]). Returns the rejected pods in
    /// order. Ids past the last pod are ignored (callers pass a reusable buffer).
    pub fn admit_batch(
        &self,
        ids: &[u32],
        counts: &[u32],
        flags: &[u8],
    ) -> Result<Vec<Rejection>, BatchError> {
        if counts.len() != flags.len() {
            return Err(BatchError::LengthMismatch);
        }
        let mut out = Vec::new();
        let mut rest = ids;
        for (i, (&c, &f)) in counts.iter().zip(flags).enumerate() {
            let (pod, next) = rest
                .split_at_checked(c as usize)
                .ok_or(BatchError::TooFewIds)?;
            rest = next;
            if let Err(error) = self.admit(pod, f)? {
                out.push(Rejection {
                    index: i as u32,
                    error,
                });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allowlist::Allowlist;
    use crate::host_flags::{host_flags, HOST_IPC, HOST_NETWORK, POD_USERNS};

    fn allow() -> Allowlist {
        Allowlist::new(&["kernel.sem", "net.*", "kernel.msg*", "user.*"]).unwrap()
    }

    const PODS: &[(&[&str], u8)] = &[
        (&["kernel.sem", "net.core.somaxconn"], 0),
        (&["vm.swappiness", "kernel.sem"], 0),
        (&[], HOST_NETWORK | HOST_IPC),
        (&["net/ipv4/conf/eth0.100/rp_filter"], HOST_NETWORK),
        (&["kernel.msgmax", "net.x"], HOST_IPC),
        (&["kernel.sem"], HOST_NETWORK),
        (
            &["user.max_user_namespaces"],
            HOST_NETWORK | HOST_IPC | POD_USERNS,
        ),
        (&["kernel.sem", "user.max_user_namespaces"], 0),
    ];

    /// What `admit` says pod by pod.
    fn expected(a: &Allowlist) -> Vec<Rejection> {
        PODS.iter()
            .enumerate()
            .filter_map(|(i, (names, f))| {
                let (hn, hi, hu) = host_flags(*f);
                a.admit(names.iter().copied(), hn, hi, hu)
                    .err()
                    .map(|error| Rejection {
                        index: i as u32,
                        error,
                    })
            })
            .collect()
    }

    #[test]
    fn rejections_cross_as_parallel_lists() {
        let a = allow();
        let r = Rejections::from(expected(&a));
        assert_eq!(r.indexes, [1, 3, 4, 7]);
        assert_eq!(r.messages.len(), 4);
        assert_eq!(
            r.messages[0],
            "forbidden sysctl: \"vm.swappiness\" not allowlisted"
        );
        assert_eq!(Rejections::from(Vec::new()), Rejections::default());
    }

    #[test]
    fn id_batch_agrees_with_admit() {
        let a = allow();
        let mut t = NameTable::new();
        let mut ids = Vec::new();
        for (names, _) in PODS {
            for n in *names {
                ids.push(t.intern(&a, n));
            }
        }
        let counts: Vec<u32> = PODS.iter().map(|(n, _)| n.len() as u32).collect();
        let flags: Vec<u8> = PODS.iter().map(|(_, f)| *f).collect();
        // Spare ids after the last pod are ignored.
        ids.push(0);
        let got = t.admit_batch(&ids, &counts, &flags).unwrap();
        assert_eq!(got, expected(&a));
        assert_eq!(
            got.iter().map(|r| r.index).collect::<Vec<_>>(),
            vec![1, 3, 4, 7]
        );
        assert_eq!(
            got[1].error.message(),
            "forbidden sysctl: \"net.ipv4.conf.eth0/100.rp_filter\" not allowed with host Net enabled"
        );
        assert_eq!(t.admit_batch(&[], &[], &[]), Ok(vec![]));
        assert_eq!(
            t.admit_batch(&ids[..2], &[3], &[0]),
            Err(BatchError::TooFewIds)
        );
        assert_eq!(
            t.admit_batch(&[99], &[1], &[0]),
            Err(BatchError::UnknownName(UnknownName(99)))
        );
        assert_eq!(
            t.admit_batch(&ids, &[1], &[]),
            Err(BatchError::LengthMismatch)
        );
    }
}
