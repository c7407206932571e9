//! Fault injection for tests: makes the socket and the dump behave as if the kernel had
//! interrupted a syscall, flagged a dump as inconsistent, dropped acks or truncated a datagram,
//! so every recovery path runs against the real kernel.

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
    /// Pins the targeted-vs-full choice of `clean_stale` (`Some(true)`: targeted whenever the
    /// handle may take it), so tests exercise a path whatever this machine measures.
    pub cost_choice: Option<bool>,
    /// Counters of what was injected, for assertions.
    pub injected: u32,
}

fn take(n: &mut u32, injected: &mut u32) -> bool {
    if *n > 0 {
        *n -= 1;
        *injected += 1;
        true
    } else {
        false
    }
}

impl Faults {
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
