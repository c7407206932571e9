//! Admitting one pod whose names are NUL-joined, or many pods in one call: names NUL-joined (or
//! as [`NameTable`] indexes) with per-pod name counts and host flags. A caller crossing from
//! another runtime makes one call per batch; messages are built only for rejected pods.

#[cfg(feature = "napi")]
use napi_derive::napi;
use thiserror::Error;

use crate::allowlist::{AdmitError, Allowlist, Verdict};
use crate::host_flags::host_flags;
use crate::interned::{NameTable, UnknownName};

/// Why a batch could not be read; no pod of it was admitted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BatchError {
    #[error("counts and flags must have the same length")]
    LengthMismatch,
    /// The joined string holds a different number of names than the counts say: a name
    /// contained the separator.
    #[error("a sysctl name contains the NUL separator")]
    Separator,
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

/// Splits at NUL; like `str::split('\0')`, minus the generic char searcher.
struct NulSplit<'a>(Option<&'a str>);

impl<'a> Iterator for NulSplit<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let rest = self.0?;
        match rest.bytes().position(|b| b == 0) {
            Some(i) => {
                self.0 = rest.get(i + 1..);
                rest.get(..i)
            }
            None => {
                self.0 = None;
                Some(rest)
            }
        }
    }
}

impl Allowlist {
    /// `Admit` of one pod whose `count` (≥ 1) names are NUL-joined in `joined`, with host
    /// `flags` (bits read by [`host_flags`]); every name is counted, so a
    /// name containing NUL is reported rather than misread.
    pub fn admit_joined(
        &self,
        joined: &str,
        count: u64,
        flags: u8,
    ) -> Result<Result<(), AdmitError>, BatchError> {
        let (host_net, host_ipc, host_users) = host_flags(flags);
        let mut seen = 0u64;
        let mut first = None;
        for n in NulSplit(Some(joined)) {
            seen += 1;
            if first.is_none() {
                let v = self.check(n, host_net, host_ipc, host_users);
                if v != Verdict::Allowed {
                    first = Some((n, v));
                }
            }
        }
        if seen != count {
            return Err(BatchError::Separator);
        }
        Ok(first.map_or(Ok(()), |(n, v)| v.into_result(n)))
    }

    /// `Admit` of many pods: pod i has the next `counts[i]` names of the NUL-joined `joined` and
    /// host flags `flags[i]` (bits read by [`host_flags`]). Returns the rejected pods in order.
    pub fn admit_batch(
        &self,
        joined: &str,
        counts: &[u32],
        flags: &[u8],
    ) -> Result<Vec<Rejection>, BatchError> {
        if counts.len() != flags.len() {
            return Err(BatchError::LengthMismatch);
        }
        let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let mut names = NulSplit(Some(joined));
        if total == 0 {
            // No names: the joined string must be empty, which splits into one empty piece.
            if !joined.is_empty() {
                return Err(BatchError::Separator);
            }
            names.next();
        }
        let mut seen = 0u64;
        let mut out = Vec::new();
        for (i, (&c, &f)) in counts.iter().zip(flags).enumerate() {
            let (host_net, host_ipc, host_users) = host_flags(f);
            let mut pod = names.by_ref().take(c as usize).inspect(|_| seen += 1);
            let first = self.admit_first(pod.by_ref(), host_net, host_ipc, host_users);
            // Skip the rest of a rejected pod's names, so the next pod starts at its own.
            pod.for_each(drop);
            if let Some((name, v)) = first {
                if let Err(error) = v.into_result(name) {
                    out.push(Rejection {
                        index: i as u32,
                        error,
                    });
                }
            }
        }
        if seen != total || names.next().is_some() {
            return Err(BatchError::Separator);
        }
        Ok(out)
    }
}

impl NameTable {
    /// [`Allowlist::admit_batch`] by name index: pod i has the next `counts[i]` indexes of `ids`.
    /// Ids past the last pod are ignored (callers pass a reusable buffer).
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
    use crate::host_flags::{HOST_IPC, HOST_NETWORK, POD_USERNS};

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
    fn joined_batch_agrees_with_admit() {
        let a = allow();
        let joined = PODS
            .iter()
            .flat_map(|(n, _)| n.iter().copied())
            .collect::<Vec<_>>()
            .join("\0");
        let counts: Vec<u32> = PODS.iter().map(|(n, _)| n.len() as u32).collect();
        let flags: Vec<u8> = PODS.iter().map(|(_, f)| *f).collect();
        let got = a.admit_batch(&joined, &counts, &flags).unwrap();
        assert_eq!(got, expected(&a));
        assert_eq!(
            got.iter().map(|r| r.index).collect::<Vec<_>>(),
            vec![1, 3, 4, 7]
        );
        assert_eq!(
            got[0].error.message(),
            "forbidden sysctl: \"vm.swappiness\" not allowlisted"
        );
        assert_eq!(
            got[1].error.message(),
            "forbidden sysctl: \"net.ipv4.conf.eth0/100.rp_filter\" not allowed with host Net enabled"
        );
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
    fn joined_batch_refuses_miscounted_input() {
        let a = allow();
        assert_eq!(
            a.admit_batch("", &[0], &[]),
            Err(BatchError::LengthMismatch)
        );
        assert_eq!(a.admit_batch("", &[], &[]), Ok(vec![]));
        assert_eq!(a.admit_batch("", &[0, 0], &[0, 0]), Ok(vec![]));
        // A name containing NUL reads as two names.
        assert_eq!(
            a.admit_batch("kernel.sem\0x", &[1], &[0]),
            Err(BatchError::Separator)
        );
        assert_eq!(
            a.admit_batch("kernel.sem", &[0], &[0]),
            Err(BatchError::Separator)
        );
        assert_eq!(
            a.admit_batch("kernel.sem", &[2], &[0]),
            Err(BatchError::Separator)
        );
        // An empty name is a name (not allowlisted), distinct from no names.
        assert_eq!(a.admit_batch("", &[1], &[0]).unwrap().len(), 1);
    }

    #[test]
    fn joined_pod() {
        let a = allow();
        assert_eq!(a.admit_joined("kernel.sem\0net.a", 2, 0), Ok(Ok(())));
        assert_eq!(
            a.admit_joined("kernel.sem\0net.a", 2, HOST_NETWORK),
            Ok(a.admit(["kernel.sem", "net.a"], true, false, true))
        );
        assert!(matches!(
            a.admit_joined("vm.x\0kernel.sem", 2, 0),
            Ok(Err(AdmitError::NotAllowlisted(_)))
        ));
        assert_eq!(
            a.admit_joined("kernel.sem\0net.a", 1, 0),
            Err(BatchError::Separator)
        );
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
        assert_eq!(t.admit_batch(&ids, &counts, &flags), Ok(expected(&a)));
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
