//! Keeps a [`FlowIndex`] current from ctnetlink events on a thread of its own: events are read
//! in batches and applied under the index's lock, never handed to JavaScript one by one. A
//! loss (receive buffer overflow) or a failed read marks the index for a resync, so the next
//! cleanup pass is full and rebuilds it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::event::FlowEvent;
use crate::events::{EventSocket, EventWaker, Groups};
use crate::filter::FlowFilter;
use crate::flow_index::FlowIndex;
use crate::netns_open::open_in;

/// Events read per batch (one lock of the index each).
const BATCH: usize = 1024;
/// How long a read waits before the thread checks whether it should stop (the waker ends a
/// wait at once; this only bounds a missed wake).
const READ_WAIT: Duration = Duration::from_secs(1);

/// NEW and DESTROY: a flow's tuples, NAT included, are fixed when it is confirmed, so the
/// UPDATE group (status and mark changes) would only cost events.
pub const INDEX_GROUPS: Groups = Groups {
    new: true,
    update: false,
    destroy: true,
};

/// Counters of a feed, readable while it runs.
#[derive(Debug, Default)]
pub struct FeedStats {
    pub events: AtomicU64,
    pub losses: AtomicU64,
}

/// A running feed; dropping it stops the thread without waiting for it.
#[derive(Debug)]
pub struct IndexFeed {
    stop: Arc<AtomicBool>,
    waker: EventWaker,
    stats: Arc<FeedStats>,
}

fn lock(x: &Mutex<FlowIndex>) -> std::sync::MutexGuard<'_, FlowIndex> {
    x.lock().unwrap_or_else(|p| p.into_inner())
}

impl IndexFeed {
    /// Feeds `index` from `sock` (opened on [`INDEX_GROUPS`] in the namespace of the handle
    /// whose cleaner uses the index). Only events of the index's protocol are let through,
    /// by a socket filter where the kernel takes one.
    pub fn start(mut sock: EventSocket, index: Arc<Mutex<FlowIndex>>) -> Result<Self> {
        let proto = lock(&index).proto();
        sock.set_filter(FlowFilter {
            proto: Some(proto),
            ..Default::default()
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(FeedStats::default());
        let waker = sock.waker();
        let (s, st) = (stop.clone(), stats.clone());
        std::thread::Builder::new()
            .name("kubenode-ct-index".into())
            .spawn(move || feed(sock, &index, &s, &st))
            .map_err(|e| Error::Io {
                op: "start the flow index feed",
                source: e,
            })?;
        Ok(IndexFeed { stop, waker, stats })
    }

    pub fn stats(&self) -> Arc<FeedStats> {
        self.stats.clone()
    }
}

impl Drop for IndexFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.waker.wake();
    }
}

fn feed(mut sock: EventSocket, index: &Mutex<FlowIndex>, stop: &AtomicBool, stats: &FeedStats) {
    let mut out: Vec<FlowEvent> = Vec::with_capacity(BATCH);
    while !stop.load(Ordering::Acquire) {
        out.clear();
        match sock.read(&mut out, BATCH, READ_WAIT) {
            Ok(o) => {
                let mut x = lock(index);
                for ev in &out {
                    x.apply(ev);
                }
                stats.events.fetch_add(out.len() as u64, Ordering::Relaxed);
                if o.lost {
                    x.lost();
                    stats.losses.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(_) => break,
        }
    }
    // No more events: whatever the index holds from now on would go stale unseen.
    lock(index).unfed();
}

/// The namespace's `net.netfilter.nf_conntrack_events` (per namespace; read where the socket
/// lives).
const EVENTS_SYSCTL: &str = "/proc/sys/net/netfilter/nf_conntrack_events";

/// Refuses an index where the kernel sends no conntrack events (`nf_conntrack_events` = 0): it
/// would miss every new flow without any loss to report. An unreadable setting is let through
/// (the socket's own errors then speak).
pub fn check_events_enabled(netns: Option<&str>) -> Result<()> {
    let read = || -> Result<Option<String>> { Ok(std::fs::read_to_string(EVENTS_SYSCTL).ok()) };
    let value = match netns {
        Some(path) => open_in(path, read)?,
        None => read()?,
    };
    if value.as_deref().map(str::trim) == Some("0") {
        return Err(Error::Unsupported {
            op: "enable the event-fed flow index",
            detail: "net.netfilter.nf_conntrack_events is 0 in this network namespace, so the \
                     kernel sends no conntrack events"
                .into(),
        });
    }
    Ok(())
}
