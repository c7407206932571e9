//! The ctnetlink event stream: a `NETLINK_NETFILTER` socket bound to the conntrack multicast
//! groups the caller chose (group membership is the kernel's filter by kind), with a socket
//! filter for the flow fields the kernel can check and the same matcher as a dump for the rest.
//!
//! The socket's receive buffer is the only buffer: events are read when the caller asks. When it
//! overflows the kernel drops events and the next read reports the loss (`ENOBUFS`) instead of
//! failing; the socket keeps working and the caller resyncs with a dump.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::attr::Msgs;
use crate::error::{from_io, Error, Result};
use crate::event::{EventKind, FlowEvent};
use crate::event_bpf::{program, Insn};
use crate::event_msg::parse_event;
use crate::filter::FlowFilter;
use crate::flow::Family;
use crate::group_membership::GroupMembership;
use crate::netns_open::open_in;
use crate::socket::{bind_groups, netfilter_socket, setopt, sol_socket_int, RECV_BUF};

/// `NFNLGRP_CONNTRACK_*` as `nl_groups` bits (group n is bit n-1).
const GROUP_NEW: u32 = 1 << 0;
const GROUP_UPDATE: u32 = 1 << 1;
const GROUP_DESTROY: u32 = 1 << 2;

/// The multicast groups to join: which kinds of events the kernel sends at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Groups {
    pub new: bool,
    pub update: bool,
    pub destroy: bool,
}

impl Groups {
    pub const ALL: Groups = Groups {
        new: true,
        update: true,
        destroy: true,
    };

    /// Groups by name (`new`, `update`, `destroy`); at least one.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self> {
        let mut g = Groups {
            new: false,
            update: false,
            destroy: false,
        };
        for (i, name) in names.iter().enumerate() {
            match name.as_ref() {
                "new" => g.new = true,
                "update" => g.update = true,
                "destroy" => g.destroy = true,
                other => {
                    return Err(Error::InvalidArgument(format!(
                    "groups[{i}]: unknown event group {other:?} (expected new, update or destroy)"
                )))
                }
            }
        }
        if g.mask() == 0 {
            return Err(no_groups());
        }
        Ok(g)
    }

    fn mask(self) -> u32 {
        let bit = |on: bool, b: u32| if on { b } else { 0 };
        bit(self.new, GROUP_NEW) | bit(self.update, GROUP_UPDATE) | bit(self.destroy, GROUP_DESTROY)
    }
}

/// What one [`EventSocket::read`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    /// Events appended to the caller's vector.
    pub events: usize,
    /// Events were lost before the next one this socket will return: the receive buffer
    /// overflowed (`ENOBUFS`) or the kernel sent an event this client cannot read. The appended
    /// events came before the loss.
    pub lost: bool,
    /// Receive buffer overflows since the socket was opened.
    pub overflows: u64,
    /// Unreadable event messages since the socket was opened.
    pub malformed: u64,
    /// The read ended early because [`EventWaker::wake`] was called.
    pub woken: bool,
}

/// Wakes a blocked [`EventSocket::read`] from another thread (to close the stream without
/// waiting out the read's timeout).
#[derive(Debug, Clone)]
pub struct EventWaker {
    fd: Arc<OwnedFd>,
}

impl EventWaker {
    fn new() -> Result<Self> {
        // SAFETY: plain syscall; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(from_io("create eventfd", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd: Arc::new(fd) })
    }

    /// Makes the current (or next) read return at once with `woken`.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from `one`. A full counter (EAGAIN) is already awake.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into `v`; EAGAIN (not woken) is fine.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }
}

fn no_groups() -> Error {
    Error::InvalidArgument(
        "an event stream needs at least one of the groups new, update and destroy".into(),
    )
}

/// A subscription to ctnetlink's conntrack events in one network namespace.
pub struct EventSocket {
    fd: OwnedFd,
    waker: EventWaker,
    buf: Vec<u8>,
    filter: FlowFilter,
    kernel_filter: bool,
    /// Events of a datagram beyond the `max` of the read that received it.
    pending: Vec<FlowEvent>,
    overflows: u64,
    malformed: u64,
}

/// The largest receive buffer accepted (the kernel takes an int and doubles it).
pub const MAX_RCVBUF: usize = 1 << 30;

fn open_socket(mask: u32, rcvbuf: Option<usize>) -> Result<OwnedFd> {
    let fd = netfilter_socket(libc::SOCK_NONBLOCK)?;
    let raw = fd.as_raw_fd();
    if let Some(n) = rcvbuf {
        // Checked by `open`, so it fits.
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        // FORCE needs CAP_NET_ADMIN; without it the size is capped by rmem_max.
        if setopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &n).is_err() {
            setopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &n)
                .map_err(|e| from_io("set SO_RCVBUF", e))?;
        }
    }
    bind_groups(raw, mask, "join conntrack event groups")?;
    Ok(fd)
}

/// Checks the filter's own rules; an event filter takes addresses of either family, but one
/// filter names one family.
fn check_filter(filter: &FlowFilter) -> Result<()> {
    let family = [
        filter.orig.src,
        filter.orig.dst,
        filter.reply.src,
        filter.reply.dst,
    ]
    .into_iter()
    .flatten()
    .next()
    .map_or(Family::V4, |m| m.family());
    filter.validate(family)
}

enum Recv {
    Datagram(usize),
    Empty,
    Overflow,
}

impl EventSocket {
    /// Opens a socket in the network namespace at `netns` (the caller's when `None`) subscribed
    /// to `groups`, with a receive buffer of `rcvbuf` bytes when given (the kernel doubles it
    /// for its bookkeeping; the system default otherwise).
    pub fn open(netns: Option<&str>, groups: Groups, rcvbuf: Option<usize>) -> Result<Self> {
        let mask = groups.mask();
        if mask == 0 {
            return Err(no_groups());
        }
        if let Some(n) = rcvbuf {
            if n == 0 || n > MAX_RCVBUF {
                return Err(Error::OutOfRange(format!(
                    "bufferSize {n} is out of range (1..={MAX_RCVBUF} bytes)"
                )));
            }
        }
        let fd = match netns {
            Some(path) => open_in(path, move || open_socket(mask, rcvbuf))?,
            None => open_socket(mask, rcvbuf)?,
        };
        Ok(Self {
            fd,
            waker: EventWaker::new()?,
            buf: vec![0u8; RECV_BUF],
            filter: FlowFilter::default(),
            kernel_filter: false,
            pending: Vec::new(),
            overflows: 0,
            malformed: 0,
        })
    }

    /// Only events whose flow matches `filter` are returned from now on. The fields the kernel
    /// can check go into a socket filter, so non-matching events never take receive buffer
    /// room; every event is matched again here.
    pub fn set_filter(&mut self, filter: FlowFilter) -> Result<()> {
        check_filter(&filter)?;
        let raw = self.fd.as_raw_fd();
        self.kernel_filter = false;
        match program(&filter) {
            Some(prog) => {
                let mut insns: Vec<libc::sock_filter> = prog.iter().map(to_sock_filter).collect();
                let fprog = libc::sock_fprog {
                    len: u16::try_from(insns.len()).unwrap_or(u16::MAX),
                    filter: insns.as_mut_ptr(),
                };
                // A kernel without the ancillary loads refuses the program: user space
                // filters alone then.
                self.kernel_filter =
                    setopt(raw, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog).is_ok();
            }
            None => {
                // ENOENT: there was no filter to detach.
                let _ = setopt(raw, libc::SOL_SOCKET, libc::SO_DETACH_FILTER, &0i32);
            }
        }
        self.filter = filter;
        Ok(())
    }

    /// Whether the kernel filters events by flow fields (a socket filter is attached).
    pub fn kernel_filter(&self) -> bool {
        self.kernel_filter
    }

    /// The receive buffer the kernel granted (twice the requested size).
    pub fn rcvbuf(&self) -> Option<usize> {
        sol_socket_int(self.fd.as_raw_fd(), libc::SO_RCVBUF).and_then(|v| usize::try_from(v).ok())
    }

    /// A handle that makes a blocked read return from another thread.
    /// A handle on one group of this socket, to leave and re-join it from another thread.
    pub fn membership(&self, kind: EventKind) -> Result<GroupMembership> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| from_io("duplicate the event socket", e))?;
        Ok(GroupMembership::new(fd, kind))
    }

    pub fn waker(&self) -> EventWaker {
        self.waker.clone()
    }

    /// Appends up to `max` events to `out`. Waits up to `timeout` for the first one, then takes
    /// what is queued without waiting. Returns early, with `lost`, at a receive buffer overflow
    /// or an unreadable event (the events before it are appended; the next read continues
    /// after it), and with `woken` when the waker was called.
    pub fn read(
        &mut self,
        out: &mut Vec<FlowEvent>,
        max: usize,
        timeout: Duration,
    ) -> Result<ReadOutcome> {
        let start = out.len();
        let mut outcome = ReadOutcome::default();
        let take = self.pending.len().min(max);
        out.extend(self.pending.drain(..take));
        let deadline = Instant::now().checked_add(timeout);
        while out.len() - start < max {
            match self.recv()? {
                Recv::Datagram(n) => {
                    if self.parse(n, out, start + max) {
                        outcome.lost = true;
                        break;
                    }
                }
                Recv::Overflow => {
                    self.overflows += 1;
                    outcome.lost = true;
                    break;
                }
                Recv::Empty => {
                    if out.len() > start {
                        break;
                    }
                    let left = deadline.map_or(Duration::MAX, |d| {
                        d.saturating_duration_since(Instant::now())
                    });
                    if left.is_zero() {
                        break;
                    }
                    if self.wait(left)? {
                        self.waker.clear();
                        outcome.woken = true;
                        break;
                    }
                }
            }
        }
        outcome.events = out.len() - start;
        outcome.overflows = self.overflows;
        outcome.malformed = self.malformed;
        Ok(outcome)
    }

    /// Parses the datagram in `self.buf[..n]` into `out` (up to `limit` entries, the rest
    /// pending); returns whether a message could not be read.
    fn parse(&mut self, n: usize, out: &mut Vec<FlowEvent>, limit: usize) -> bool {
        let mut bad = false;
        for m in Msgs::new(self.buf.get(..n).unwrap_or(&[])) {
            let event = match m.and_then(|m| parse_event(&m)) {
                Ok(Some(e)) => e,
                Ok(None) => continue,
                Err(_) => {
                    bad = true;
                    break;
                }
            };
            if !self.filter.matches(&event.flow) {
                continue;
            }
            if out.len() < limit {
                out.push(event);
            } else {
                self.pending.push(event);
            }
        }
        if bad {
            self.malformed += 1;
        }
        bad
    }

    fn recv(&mut self) -> Result<Recv> {
        loop {
            // SAFETY: `buf` is writable for its length.
            let r = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                )
            };
            if r >= 0 {
                let n = r as usize;
                if n > self.buf.len() {
                    // One event never comes near 64 KiB; should one, it is a loss, not an error.
                    self.malformed += 1;
                    return Ok(Recv::Overflow);
                }
                return Ok(Recv::Datagram(n));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => return Ok(Recv::Empty),
                Some(libc::ENOBUFS) => return Ok(Recv::Overflow),
                _ => return Err(from_io("receive conntrack events", e)),
            }
        }
    }

    /// Waits until the socket is readable (or has an error to report) or `left` passes;
    /// returns whether the waker was called.
    fn wait(&self, left: Duration) -> Result<bool> {
        let mut fds = [
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.waker.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        // SAFETY: `fds` is a valid array of two pollfds.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(from_io("wait for conntrack events", e));
        }
        Ok(fds[1].revents != 0)
    }
}

fn to_sock_filter(i: &Insn) -> libc::sock_filter {
    libc::sock_filter {
        code: i.code,
        jt: i.jt,
        jf: i.jf,
        k: i.k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{AddrMatch, DirectionFilter};

    #[test]
    fn groups_are_nl_groups_bits() {
        assert_eq!(Groups::ALL.mask(), 0b111);
        let destroy = Groups {
            new: false,
            update: false,
            destroy: true,
        };
        assert_eq!(destroy.mask(), 4);
        assert_eq!(Groups::parse(&["destroy", "destroy"]).unwrap(), destroy);
        assert_eq!(
            Groups::parse(&["new", "update", "destroy"]).unwrap(),
            Groups::ALL
        );
        let e = Groups::parse(&["new", "NEW"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "groups[1]: unknown event group \"NEW\" (expected new, update or destroy)"
        );
        let e = Groups::parse::<&str>(&[]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }

    #[test]
    fn open_refuses_no_groups_and_a_bad_buffer_size() {
        let none = Groups {
            new: false,
            update: false,
            destroy: false,
        };
        let e = EventSocket::open(None, none, None).err().unwrap();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        for n in [0, MAX_RCVBUF + 1] {
            let e = EventSocket::open(None, Groups::ALL, Some(n)).err().unwrap();
            assert!(matches!(e, Error::OutOfRange(_)), "{e}");
        }
    }

    #[test]
    fn a_filter_names_one_family_and_ports_need_a_protocol() {
        let addr = |s| Some(AddrMatch::parse("test", s).unwrap());
        let mixed = FlowFilter {
            proto: Some(17),
            orig: DirectionFilter {
                dst: addr("10.0.0.1"),
                ..Default::default()
            },
            reply: DirectionFilter {
                src: addr("fd00::1"),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(matches!(
            check_filter(&mixed),
            Err(Error::FamilyMismatch(_))
        ));
        let v6_only = FlowFilter {
            reply: DirectionFilter {
                src: addr("fd00::/64"),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(check_filter(&v6_only).is_ok());
        let port = FlowFilter {
            orig: DirectionFilter {
                dst_port: Some(53),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(matches!(
            check_filter(&port),
            Err(Error::InvalidArgument(_))
        ));
    }
}
