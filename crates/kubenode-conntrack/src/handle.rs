//! A handle shared by queued operations: they run one at a time, and `close` returns at once
//! even while one runs (the value is then released when that operation ends), so closing
//! never blocks a caller's event loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::cleaner::StaleFlowCleaner;
use crate::conntrack::Conntrack;
use crate::consts::IPPROTO_UDP;
use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::events::EventSocket;
use crate::flow_index::FlowIndex;
use crate::index_feed::{check_events_enabled, FeedStats, IndexFeed, INDEX_GROUPS};

/// What one shared handle holds: its persistent ctnetlink socket and the cleanup that uses it,
/// and the feed of the cleaner's flow index when one is enabled.
pub struct Session {
    pub ct: Conntrack,
    pub cleaner: StaleFlowCleaner,
    pub feed: Option<IndexFeed>,
}

impl Session {
    /// `ct` with a cleaner that has run no pass yet.
    pub fn new(ct: Conntrack) -> Self {
        Session {
            ct,
            cleaner: StaleFlowCleaner::new(),
            feed: None,
        }
    }

    /// Enables the cleaner's event-fed flow index: opens an event socket in `netns` (the
    /// namespace this handle's socket is in; the caller's when `None`) with a receive buffer
    /// of `rcvbuf` bytes, and starts its feed. The index holds at most `max_flows` flows. The
    /// socket is open before this returns, so the next pass, full, builds it from a dump that
    /// misses no flow created meanwhile.
    pub fn enable_index(
        &mut self,
        netns: Option<&str>,
        max_flows: usize,
        rcvbuf: Option<usize>,
    ) -> Result<(Arc<Mutex<FlowIndex>>, Arc<FeedStats>)> {
        check_events_enabled(netns)?;
        let sock = EventSocket::open(netns, INDEX_GROUPS, rcvbuf)?;
        let destroy = sock.membership(EventKind::Destroy)?;
        let index = Arc::new(Mutex::new(FlowIndex::new(IPPROTO_UDP, max_flows)));
        let feed = IndexFeed::start(sock, index.clone())?;
        let stats = feed.stats();
        // The old feed (if any) stops when dropped.
        self.feed = Some(feed);
        self.cleaner.set_index(Some(index.clone()));
        self.cleaner.set_destroy_group(Some(Arc::new(destroy)));
        Ok((index, stats))
    }
}

/// The handle callers share.
pub type ConntrackHandle = Handle<Session>;

#[derive(Debug)]
pub struct Handle<T> {
    value: Mutex<Option<T>>,
    closed: AtomicBool,
}

impl<T> Handle<T> {
    pub fn new(value: T) -> Self {
        Handle {
            value: Mutex::new(Some(value)),
            closed: AtomicBool::new(false),
        }
    }

    /// Runs `f` on the value, after any operation already running. Fails with
    /// [`Error::Closed`] once [`close`](Self::close) was called, even if it came while this
    /// call waited.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> Result<R>) -> Result<R> {
        // A panic in an earlier operation poisons the lock; the value is still usable.
        let guard = self.value.lock().unwrap_or_else(|p| p.into_inner());
        self.run(guard, f)
    }

    /// Like [`with`](Self::with), but fails with [`Error::Busy`] instead of waiting for a
    /// running operation.
    pub fn try_with<R>(&self, f: impl FnOnce(&mut T) -> Result<R>) -> Result<R> {
        let guard = match self.value.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(Error::Busy),
        };
        self.run(guard, f)
    }

    fn run<R>(
        &self,
        mut guard: MutexGuard<'_, Option<T>>,
        f: impl FnOnce(&mut T) -> Result<R>,
    ) -> Result<R> {
        if self.is_closed() {
            *guard = None;
            return Err(Error::Closed);
        }
        let r = match guard.as_mut() {
            Some(v) => f(v),
            None => Err(Error::Closed),
        };
        // Closed while `f` ran: release the value now rather than at the last reference.
        if self.is_closed() {
            *guard = None;
        }
        r
    }

    /// Marks the handle closed and releases the value unless an operation holds it (that
    /// operation releases it when done). Never waits.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        match self.value.try_lock() {
            Ok(mut g) => *g = None,
            Err(TryLockError::Poisoned(p)) => *p.into_inner() = None,
            Err(TryLockError::WouldBlock) => {}
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{mpsc, Arc};
    use std::thread;

    /// Counts drops, to see when the handle releases its value.
    struct Probe(Arc<AtomicUsize>);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn probe() -> (Handle<Probe>, Arc<AtomicUsize>) {
        let drops = Arc::new(AtomicUsize::new(0));
        (Handle::new(Probe(drops.clone())), drops)
    }

    /// Starts an operation on another thread that holds the handle until `finish` is sent;
    /// returns once it runs.
    fn hold(
        h: &Arc<Handle<Probe>>,
    ) -> (thread::JoinHandle<Result<&'static str>>, mpsc::Sender<()>) {
        let (started_tx, started) = mpsc::channel();
        let (finish, finish_rx) = mpsc::channel::<()>();
        let h = h.clone();
        let running = thread::spawn(move || {
            h.with(|_| {
                started_tx.send(()).unwrap();
                finish_rx.recv().unwrap();
                Ok("done")
            })
        });
        started.recv().unwrap();
        (running, finish)
    }

    #[test]
    fn operations_run_until_closed_and_close_releases_at_once() {
        let (h, drops) = probe();
        assert_eq!(h.with(|_| Ok(7)).unwrap(), 7);
        assert!(h.with(|_| Err::<(), _>(Error::Busy)).is_err());
        assert!(!h.is_closed());
        h.close();
        assert!(h.is_closed());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(matches!(h.with(|_| Ok(())), Err(Error::Closed)));
        assert!(matches!(h.try_with(|_| Ok(())), Err(Error::Closed)));
        h.close();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn close_during_an_operation_returns_and_the_operation_releases_the_value() {
        let (h, drops) = probe();
        let h = Arc::new(h);
        let (running, finish) = hold(&h);
        // Never waits for the running operation.
        assert!(matches!(h.try_with(|_| Ok(())), Err(Error::Busy)));
        h.close();
        assert_eq!(drops.load(Ordering::SeqCst), 0, "still in use");
        finish.send(()).unwrap();
        assert_eq!(running.join().unwrap().unwrap(), "done");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "released by the operation");
        assert!(matches!(h.with(|_| Ok(())), Err(Error::Closed)));
    }

    #[test]
    fn an_operation_queued_behind_a_close_fails_closed() {
        let (h, _) = probe();
        let h = Arc::new(h);
        let (first, finish) = hold(&h);
        let queued = {
            let h = h.clone();
            thread::spawn(move || h.with(|_| Ok(())))
        };
        h.close();
        finish.send(()).unwrap();
        assert!(first.join().unwrap().is_ok());
        assert!(matches!(queued.join().unwrap(), Err(Error::Closed)));
    }

    #[test]
    fn a_panicking_operation_leaves_the_handle_usable() {
        let (h, _) = probe();
        let h = Arc::new(h);
        let h2 = h.clone();
        let _ = thread::spawn(move || h2.with(|_| -> Result<()> { panic!("boom") })).join();
        assert!(h.with(|_| Ok(())).is_ok());
        assert!(h.try_with(|_| Ok(())).is_ok());
    }
}
