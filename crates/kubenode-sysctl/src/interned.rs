//! Admission by name index. A node admits pods that carry the same few sysctl names over and
//! over; a caller registers each distinct name once (it is classified against the allowlist
//! then) and afterwards passes small integers, so admitting a pod is one table read per sysctl
//! plus the host check. Results and messages are exactly those of [`Allowlist::admit`].

use thiserror::Error;

use crate::allowlist::{AdmitError, Allowlist, Verdict};
use crate::host_flags::host_flags;
use crate::namespace::Namespace;

/// An index that was never returned by [`NameTable::intern`] (or was dropped by `clear`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("unknown sysctl name index {0}")]
pub struct UnknownName(pub u32);

#[derive(Debug, Clone, Default)]
pub struct NameTable {
    /// Raw names, as given: messages normalise them exactly as `Admit` does.
    names: Vec<Box<str>>,
    /// The allowlist entry each name falls under; `None`: not allowlisted.
    classes: Vec<Option<Namespace>>,
}

impl NameTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `name` (classified against `allow`) and returns its index. Does not
    /// deduplicate: the caller keeps the name → index map.
    pub fn intern(&mut self, allow: &Allowlist, name: &str) -> u32 {
        self.names.push(name.into());
        self.classes.push(allow.classify(name));
        (self.names.len() - 1) as u32
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Forgets every name (bounds memory when names keep changing).
    pub fn clear(&mut self) {
        self.names.clear();
        self.classes.clear();
    }

    /// `Admit` of a pod whose sysctls are the names `ids`, in spec order, with host `flags`
    /// (`HOST_NETWORK`, `HOST_IPC`, `POD_USERNS`): the first forbidden one rejects the pod; its
    /// error is built only then.
    #[inline]
    pub fn admit(&self, ids: &[u32], flags: u8) -> Result<Result<(), AdmitError>, UnknownName> {
        match self.first_rejection(ids.iter().copied(), flags)? {
            None => Ok(Ok(())),
            Some((i, v)) => {
                // `first_rejection` checked every id up to `i`.
                let id = ids.get(i).copied().unwrap_or(u32::MAX);
                let name = self.names.get(id as usize).ok_or(UnknownName(id))?;
                Ok(v.into_result(name))
            }
        }
    }

    /// The position and verdict of the first forbidden name among `ids` (spec order), without
    /// building a message; `None` admits the pod. Ids after the first rejection are not read.
    #[inline]
    pub fn first_rejection(
        &self,
        ids: impl IntoIterator<Item = u32>,
        flags: u8,
    ) -> Result<Option<(usize, Verdict)>, UnknownName> {
        let (host_net, host_ipc, host_users) = host_flags(flags);
        for (i, id) in ids.into_iter().enumerate() {
            let class = *self.classes.get(id as usize).ok_or(UnknownName(id))?;
            let v = Verdict::of(class, host_net, host_ipc, host_users);
            if v != Verdict::Allowed {
                return Ok(Some((i, v)));
            }
        }
        Ok(None)
    }

    /// The raw name registered under `id`.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(|n| &**n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_admit() {
        let allow = Allowlist::new(&["kernel.sem", "net.*", "kernel.msg*", "user.*"]).unwrap();
        let names = [
            "kernel.sem",
            "kernel/sem",
            "net.core.somaxconn",
            "net/ipv4/conf/eth0.100/rp_filter",
            "kernel.msgmax",
            "vm.swappiness",
            "",
            "k\u{16b}ernel.sem",
            "user.max_user_namespaces",
        ];
        let mut t = NameTable::new();
        let ids: Vec<u32> = names.iter().map(|n| t.intern(&allow, n)).collect();
        for (i, n) in names.iter().enumerate() {
            for flags in 0..8u8 {
                let (hn, hi, hu) = host_flags(flags);
                let pod = [ids[0], ids[i], ids[2]];
                let want = allow.admit([names[0], n, names[2]], hn, hi, hu);
                assert_eq!(t.admit(&pod, flags), Ok(want), "{n:?} {flags}");
            }
        }
        assert_eq!(t.admit(&[], 3), Ok(Ok(())));
        let pod = [ids[0], ids[2], ids[5], ids[6]];
        assert_eq!(
            t.first_rejection(pod, 4),
            Ok(Some((2, Verdict::NotAllowlisted)))
        );
        assert_eq!(
            t.first_rejection([ids[0], ids[2]], 5),
            Ok(Some((1, Verdict::HostNet)))
        );
        assert_eq!(
            t.first_rejection([ids[0], ids[2]], 6),
            Ok(Some((0, Verdict::HostIpc)))
        );
        assert_eq!(t.first_rejection([ids[0], ids[2]], 4), Ok(None));
        assert_eq!(
            t.first_rejection([ids[5], 99], 4),
            Ok(Some((0, Verdict::NotAllowlisted)))
        );
        assert_eq!(t.first_rejection([ids[0], 99], 4), Err(UnknownName(99)));
        let user = [ids[0], ids[8]];
        assert_eq!(t.first_rejection(user, 0), Ok(Some((1, Verdict::HostUser))));
        assert_eq!(
            t.first_rejection(user, crate::host_flags::POD_USERNS),
            Ok(None)
        );
        assert_eq!(t.name(ids[1]), Some("kernel/sem"));
        assert_eq!(t.admit(&[99], 0), Err(UnknownName(99)));
        t.clear();
        assert_eq!(t.admit(&[0], 0), Err(UnknownName(0)));
    }
}
