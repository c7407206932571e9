//! The host-flags byte a caller passes per pod to the batch and by-index admission paths.

/// Host-flag bits of a batch entry.
pub const HOST_NETWORK: u8 = 1;
pub const HOST_IPC: u8 = 2;
/// The pod has its own user namespace (`hostUsers: false`). Absent means the host's, as an unset
/// `hostUsers` does, so a caller that does not know fails closed on User sysctls.
pub const POD_USERNS: u8 = 4;

/// (hostNetwork, hostIPC, host users) of a flags byte.
#[inline]
pub fn host_flags(flags: u8) -> (bool, bool, bool) {
    (
        flags & HOST_NETWORK != 0,
        flags & HOST_IPC != 0,
        flags & POD_USERNS == 0,
    )
}
