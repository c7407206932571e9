//! Leaving and re-joining one multicast group of an event socket while its reader goes on.
//! The kernel builds an event for a flow only while its group has a listener in the namespace
//! (`nfnetlink_has_listeners`), so a cleanup that deletes flows the index already knows are
//! going can spare the kernel a DESTROY event per delete by leaving the group for the batch.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::consts::SOL_NETLINK;
use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::socket::setopt;

const NETLINK_ADD_MEMBERSHIP: i32 = 1;
const NETLINK_DROP_MEMBERSHIP: i32 = 2;

/// One group of one event socket, through a duplicate of its descriptor (the same socket).
#[derive(Debug)]
pub struct GroupMembership {
    fd: OwnedFd,
    group: u32,
}

/// `NFNLGRP_CONNTRACK_*`: the group number of an event kind.
fn group_of(kind: EventKind) -> u32 {
    match kind {
        EventKind::New => 1,
        EventKind::Update => 2,
        EventKind::Destroy => 3,
    }
}

impl GroupMembership {
    pub(crate) fn new(fd: OwnedFd, kind: EventKind) -> Self {
        GroupMembership {
            fd,
            group: group_of(kind),
        }
    }

    fn set(&self, name: i32, op: &'static str) -> Result<()> {
        setopt(self.fd.as_raw_fd(), SOL_NETLINK, name, &self.group)
            .map_err(|source| Error::Io { op, source })
    }

    /// Stops the group's events until the returned guard is dropped (which re-joins it).
    /// Events the group would have carried meanwhile are not delivered, and not reported lost.
    pub fn pause(&self) -> Result<Paused<'_>> {
        self.set(NETLINK_DROP_MEMBERSHIP, "leave an event group")?;
        Ok(Paused {
            membership: self,
            resumed: false,
        })
    }
}

/// The group left by [`GroupMembership::pause`]; joined again by `resume`, or when dropped.
#[derive(Debug)]
pub struct Paused<'a> {
    membership: &'a GroupMembership,
    resumed: bool,
}

impl Paused<'_> {
    /// Joins the group again; an error means its events stay off.
    pub fn resume(mut self) -> Result<()> {
        self.resumed = true;
        self.membership
            .set(NETLINK_ADD_MEMBERSHIP, "join an event group")
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        if !self.resumed {
            let _ = self
                .membership
                .set(NETLINK_ADD_MEMBERSHIP, "join an event group");
        }
    }
}
