//! Opening a socket inside another network namespace. A netlink socket stays bound to the
//! namespace it was created in, so it is created on a short-lived thread that joined the
//! namespace and then used from any thread.

use std::io;

use crate::error::{Error, Result};

/// Runs `open` on a thread that joined the network namespace at `path` and returns its result.
pub(crate) fn open_in<T: Send + 'static>(
    path: &str,
    open: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    // Opened (and checked to be a network namespace) here, so a FIFO or any other
    // non-namespace file is refused without blocking.
    let ns = kubenode_netns::open(std::path::Path::new(path), kubenode_netns::Kind::Net)?;
    let spawned = std::thread::Builder::new()
        .name("kubenode-ct-netns".into())
        .spawn(move || -> Result<T> {
            if let Err(e) = ns.join() {
                if e.raw_os_error() == Some(libc::EPERM) {
                    return Err(Error::Permission {
                        op: "join network namespace",
                    });
                }
                return Err(Error::Netns {
                    path: ns.path().to_owned(),
                    source: e,
                });
            }
            open()
        });
    // Thread creation can fail (EAGAIN under limits): an error, not a panic.
    let handle = spawned.map_err(|e| Error::Netns {
        path: path.to_owned(),
        source: e,
    })?;
    match handle.join() {
        Ok(r) => r,
        Err(_) => Err(Error::Netns {
            path: path.to_owned(),
            source: io::Error::other("namespace thread failed"),
        }),
    }
}
