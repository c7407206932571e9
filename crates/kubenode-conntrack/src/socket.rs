//! The raw `AF_NETLINK`/`NETLINK_NETFILTER` socket: one per handle, bound once, reused for
//! every dump and delete batch.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::consts::*;
use crate::error::{from_io, Error, Result};
use crate::fault::Faults;

/// Receive buffer size: at least the kernel's 32 KiB dump skb, with room to spare.
pub const RECV_BUF: usize = 64 * 1024;
/// An integer `SOL_SOCKET` option of `fd` (`SO_RCVBUF`, `SO_SNDBUF`); None if the call fails.
pub(crate) fn sol_socket_int(fd: RawFd, name: i32) -> Option<i32> {
    let mut v: i32 = 0;
    let mut len = size_of::<i32>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid out-pointers of the right size.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&mut v as *mut i32).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v)
}

/// The error of a failed [`NlSocket::recv`] that ends a request: a datagram that did not fit
/// the receive buffer is [`Error::Truncated`], anything else an I/O error of `op`.
pub(crate) fn recv_failure(op: &'static str, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::InvalidData {
        return Error::Truncated(RECV_BUF);
    }
    from_io(op, e)
}

/// Socket buffer we ask for, so acks of a large delete batch are not dropped.
const SOCK_BUF: i32 = 8 * 1024 * 1024;

pub struct NlSocket {
    fd: OwnedFd,
    pub(crate) faults: Faults,
}

/// `setsockopt` with a value of any plain type.
pub(crate) fn setopt<T>(fd: RawFd, level: i32, name: i32, val: &T) -> io::Result<()> {
    // SAFETY: `val` outlives the call and the length matches its type.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (val as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A new `NETLINK_NETFILTER` socket in the calling thread's network namespace (`flags` beyond
/// `SOCK_RAW | SOCK_CLOEXEC`, e.g. `SOCK_NONBLOCK`).
pub(crate) fn netfilter_socket(flags: i32) -> Result<OwnedFd> {
    // SAFETY: plain syscall; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | flags,
            NETLINK_NETFILTER,
        )
    };
    if fd < 0 {
        return Err(from_io("open netlink socket", io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds `fd` to any port id, joining the multicast `groups` (an `nl_groups` bit mask).
pub(crate) fn bind_groups(fd: RawFd, groups: u32, op: &'static str) -> Result<()> {
    // SAFETY: a zeroed sockaddr_nl is a valid "any pid, no groups" address.
    let mut sa: libc::sockaddr_nl = unsafe { zeroed() };
    sa.nl_family = libc::AF_NETLINK as u16;
    sa.nl_groups = groups;
    // SAFETY: `sa` is a valid sockaddr_nl of the given length.
    let r = unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_nl).cast(),
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(from_io(op, io::Error::last_os_error()));
    }
    Ok(())
}

impl NlSocket {
    /// Opens and binds a socket in the calling thread's network namespace.
    pub fn open() -> Result<Self> {
        let fd = netfilter_socket(0)?;
        let raw = fd.as_raw_fd();
        bind_groups(raw, 0, "bind netlink socket")?;
        // Error acks echo only the request header; extended acks carry the kernel's reason.
        setopt(raw, SOL_NETLINK, NETLINK_CAP_ACK, &1i32)
            .map_err(|e| from_io("set NETLINK_CAP_ACK", e))?;
        let _ = setopt(raw, SOL_NETLINK, NETLINK_EXT_ACK, &1i32);
        // FORCE needs CAP_NET_ADMIN; fall back to the capped variant without it.
        if setopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &SOCK_BUF).is_err() {
            let _ = setopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &SOCK_BUF);
        }
        if setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &SOCK_BUF).is_err() {
            let _ = setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, &SOCK_BUF);
        }
        // A lost reply must not hang a caller forever.
        let tv = libc::timeval {
            tv_sec: 30,
            tv_usec: 0,
        };
        // SAFETY: `tv` outlives the call and the length matches.
        unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
        Ok(Self {
            fd,
            faults: Faults::default(),
        })
    }

    fn getopt(&self, name: i32) -> Option<usize> {
        sol_socket_int(self.fd.as_raw_fd(), name)
            .filter(|&v| v > 0)
            .map(|v| v as usize)
    }

    /// Bytes one `sendmsg` may carry. The kernel doubles the requested buffer for its
    /// bookkeeping; stay well below it.
    pub fn send_limit(&self) -> usize {
        self.getopt(libc::SO_SNDBUF)
            .map_or(64 * 1024, |v| (v / 2).clamp(16 * 1024, 1024 * 1024))
    }

    /// How many error acks can queue before the kernel drops them (an ack costs about 1 KiB
    /// of receive buffer).
    pub fn ack_capacity(&self) -> usize {
        self.getopt(libc::SO_RCVBUF)
            .map_or(128, |v| (v / 1024).max(64))
    }

    /// Sends one buffer of requests to the kernel in one `sendmsg`.
    pub fn send(&mut self, buf: &[u8]) -> Result<()> {
        // SAFETY: a zeroed sockaddr_nl addresses the kernel (pid 0).
        let mut sa: libc::sockaddr_nl = unsafe { zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        loop {
            // SAFETY: `buf` and `sa` are valid for the given lengths.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    0,
                    (&sa as *const libc::sockaddr_nl).cast(),
                    size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            if r >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(from_io("send netlink request", e));
            }
        }
    }

    /// Receives one datagram into `buf`. Interrupted syscalls are retried; a datagram larger
    /// than `buf` is an error rather than silently lost data. `nonblock` returns `Ok(None)` when
    /// nothing is queued.
    pub fn recv(&mut self, buf: &mut [u8], nonblock: bool) -> io::Result<Option<usize>> {
        loop {
            if self.faults.take_recv_eintr() {
                continue; // what the kernel would have made us do: try again
            }
            if self.faults.take_recv_enobufs() {
                return Err(io::Error::from_raw_os_error(libc::ENOBUFS));
            }
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: a zeroed msghdr is valid; we point it at one iovec over `buf`.
            let mut mh: libc::msghdr = unsafe { zeroed() };
            mh.msg_iov = &mut iov;
            mh.msg_iovlen = 1;
            let flags = if nonblock { libc::MSG_DONTWAIT } else { 0 };
            // SAFETY: `mh` describes writable memory owned by `buf`.
            let r = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut mh, flags) };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) if nonblock => return Ok(None),
                    _ => return Err(e),
                }
            }
            if mh.msg_flags & libc::MSG_TRUNC != 0 || self.faults.take_trunc() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "MSG_TRUNC"));
            }
            return Ok(Some(r as usize));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_datagram_and_other_receive_failures() {
        let trunc = io::Error::new(io::ErrorKind::InvalidData, "MSG_TRUNC");
        assert!(matches!(
            recv_failure("recv", trunc),
            Error::Truncated(RECV_BUF)
        ));
        let perm = recv_failure("recv", io::Error::from_raw_os_error(libc::EPERM));
        assert!(matches!(perm, Error::Permission { op: "recv" }));
        let other = recv_failure("recv", io::Error::from_raw_os_error(libc::EBADF));
        assert!(matches!(other, Error::Io { op: "recv", .. }));
    }
}
