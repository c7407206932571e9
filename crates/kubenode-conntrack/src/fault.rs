//! Fault injection for tests: makes the socket and the dump behave as if the kernel had
//! interrupted a syscall, flagged a dump as inconsistent, dropped acks or truncated a datagram,
//! so every recovery path runs against the real kernel. Only with the `test-hooks` feature;
//! without it `Faults` is empty and its checks are constant `false`, so release builds carry
//! neither the counters nor a way to arm them.

#[cfg(all(feature = "napi", feature = "test-hooks"))]
use napi_derive::napi;

/// One kind of fault `Faults` can inject.
#[cfg(feature = "test-hooks")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "camelCase", js_name = "ConntrackFault"))]
pub enum Fault {
    /// A receive syscall fails with EINTR before reaching the kernel.
    RecvEintr,
    /// A receive reports ENOBUFS (acks dropped) before reaching the kernel.
    RecvEnobufs,
    /// A dump attempt is treated as carrying `NLM_F_DUMP_INTR`.
    DumpIntr,
    /// A received datagram is reported as truncated (`MSG_TRUNC`).
    Trunc,
}

#[cfg(feature = "test-hooks")]
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The next N receive syscalls fail with EINTR before reaching the kernel.
    pub recv_eintr: u32,
    /// The next N receives report ENOBUFS (acks dropped), before reaching the kernel.
    pub recv_enobufs: u32,
    /// The next N dump attempts are treated as carrying `NLM_F_DUMP_INTR`.
    pub dump_intr: u32,
    /// The next N received datagrams are reported as truncated (`MSG_TRUNC`).
    pub trunc: u32,
    /// Counters of what was injected, for assertions.
    pub injected: u32,
}

#[cfg(feature = "test-hooks")]
fn take(n: &mut u32, injected: &mut u32) -> bool {
    if *n > 0 {
        *n -= 1;
        *injected += 1;
        true
    } else {
        false
    }
}

#[cfg(feature = "test-hooks")]
impl Faults {
    /// Arms the next `n` occurrences of `kind` (0 disarms it), replacing what was armed.
    pub fn set(&mut self, kind: Fault, n: u32) {
        *match kind {
            Fault::RecvEintr => &mut self.recv_eintr,
            Fault::RecvEnobufs => &mut self.recv_enobufs,
            Fault::DumpIntr => &mut self.dump_intr,
            Fault::Trunc => &mut self.trunc,
        } = n;
    }

    pub(crate) fn take_recv_eintr(&mut self) -> bool {
        take(&mut self.recv_eintr, &mut self.injected)
    }
    pub(crate) fn take_recv_enobufs(&mut self) -> bool {
        take(&mut self.recv_enobufs, &mut self.injected)
    }
    pub(crate) fn take_dump_intr(&mut self) -> bool {
        take(&mut self.dump_intr, &mut self.injected)
    }
    pub(crate) fn take_trunc(&mut self) -> bool {
        take(&mut self.trunc, &mut self.injected)
    }
}

/// Without `test-hooks`: nothing to arm, nothing injected.
#[cfg(not(feature = "test-hooks"))]
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {}

#[cfg(not(feature = "test-hooks"))]
impl Faults {
    #[inline(always)]
    pub(crate) fn take_recv_eintr(&mut self) -> bool {
        false
    }
    #[inline(always)]
    pub(crate) fn take_recv_enobufs(&mut self) -> bool {
        false
    }
    #[inline(always)]
    pub(crate) fn take_dump_intr(&mut self) -> bool {
        false
    }
    #[inline(always)]
    pub(crate) fn take_trunc(&mut self) -> bool {
        false
    }
}

#[cfg(all(test, feature = "test-hooks"))]
mod tests {
    use super::*;

    #[test]
    fn set_arms_one_kind_and_replaces_its_count() {
        let mut f = Faults::default();
        f.set(Fault::DumpIntr, 2);
        f.set(Fault::Trunc, 1);
        assert_eq!(
            (f.recv_eintr, f.recv_enobufs, f.dump_intr, f.trunc),
            (0, 0, 2, 1)
        );
        f.set(Fault::DumpIntr, 0);
        assert!(!f.take_dump_intr());
        assert!(f.take_trunc() && !f.take_trunc());
        f.set(Fault::RecvEintr, 1);
        f.set(Fault::RecvEnobufs, 1);
        assert!(f.take_recv_eintr() && f.take_recv_enobufs());
        assert_eq!(f.injected, 3);
    }
}
