//! `ConntrackEvents`: the core's event socket. Each `read` is an AsyncTask that waits (up to its
//! timeout) off the JS thread and returns one batch, so events are read only when JavaScript asks
//! and the socket's receive buffer is the only buffer. `close` wakes a waiting read; nothing
//! stays queued on the event loop while no read is pending, so an idle stream never keeps the
//! process alive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

use kubenode_conntrack::{
    Error as CtError, EventKind, EventSocket, EventWaker, Groups, MAX_RCVBUF,
};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use super::convert::{filter_in, flow_out, to_js};
use super::types::{ConntrackFlow, ConntrackListFilter};
use crate::convert;
use crate::errors::{Outcome, Result};

/// One event: `type` is `new`, `update` or `destroy`.
#[napi(object, object_from_js = false)]
pub struct ConntrackEvent {
    #[napi(js_name = "type", ts_type = "'new' | 'update' | 'destroy'")]
    pub kind: String,
    pub flow: ConntrackFlow,
}

/// What one read returned: events in order, then whether events were lost after them.
#[napi(object, object_from_js = false)]
pub struct ConntrackEventBatch {
    pub events: Vec<ConntrackEvent>,
    /// The kernel dropped events after these (receive buffer overflow) or sent one that could
    /// not be read: the caller must resync with a dump.
    pub lost: bool,
    /// Overflows and unreadable events since the stream was opened.
    pub lost_total: f64,
    /// The stream was closed: no more events.
    pub closed: bool,
}

fn kind_name(k: EventKind) -> &'static str {
    match k {
        EventKind::New => "new",
        EventKind::Update => "update",
        EventKind::Destroy => "destroy",
    }
}

struct Shared {
    socket: Mutex<Option<EventSocket>>,
    waker: EventWaker,
    closed: AtomicBool,
    /// Set at open, when the filter is attached, and never changed: read without the socket's
    /// lock, which a waiting read holds.
    kernel_filter: bool,
}

impl Shared {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.waker.wake();
        // A running read drops the socket when it returns.
        if let Ok(mut s) = self.socket.try_lock() {
            s.take();
        }
    }
}

#[napi(js_name = "ConntrackEvents")]
pub struct JsConntrackEvents {
    shared: Arc<Shared>,
}

#[napi]
impl JsConntrackEvents {
    /// Opens an event socket (in `netns` if given) joined to `groups` (`new`, `update`,
    /// `destroy`), filtered by `filter`, with a receive buffer of `bufferSize` bytes.
    #[napi(ts_return_type = "Promise<Outcome<ConntrackEvents>>")]
    pub fn open(
        netns: Option<String>,
        groups: Vec<String>,
        filter: Option<ConntrackListFilter>,
        buffer_size: Option<f64>,
    ) -> AsyncTask<OpenEvents> {
        AsyncTask::new(OpenEvents {
            netns,
            groups,
            filter,
            buffer_size,
        })
    }

    /// Reads up to `max` events, waiting up to `timeoutMs` for the first (less when closed).
    #[napi(ts_return_type = "Promise<Outcome<ConntrackEventBatch>>")]
    pub fn read(&self, max: f64, timeout_ms: f64) -> AsyncTask<ReadEvents> {
        AsyncTask::new(ReadEvents {
            shared: self.shared.clone(),
            max,
            timeout_ms,
        })
    }

    /// Closes the socket; a waiting read returns at once with `closed`.
    #[napi]
    pub fn close(&self) {
        self.shared.close();
    }

    /// Whether the kernel filters the stream's flow fields (a socket filter is attached).
    #[napi(getter)]
    pub fn kernel_filter(&self) -> bool {
        self.shared.kernel_filter && !self.shared.closed.load(Ordering::SeqCst)
    }
}

pub struct OpenEvents {
    netns: Option<String>,
    groups: Vec<String>,
    filter: Option<ConntrackListFilter>,
    buffer_size: Option<f64>,
}

impl OpenEvents {
    fn open(&mut self) -> Result<EventSocket> {
        let groups = Groups::parse(&self.groups).map_err(to_js)?;
        let rcvbuf = self
            .buffer_size
            .map(|n| convert::index("bufferSize", n, MAX_RCVBUF as u64))
            .transpose()?
            .map(|n| n as usize);
        let filter = self
            .filter
            .take()
            .map(filter_in)
            .transpose()?
            .unwrap_or_default();
        let mut s = EventSocket::open(self.netns.as_deref(), groups, rcvbuf).map_err(to_js)?;
        s.set_filter(filter).map_err(to_js)?;
        Ok(s)
    }
}

impl Task for OpenEvents {
    type Output = Result<EventSocket>;
    type JsValue = Outcome<JsConntrackEvents>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.open())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(s) => {
                let shared = Shared {
                    waker: s.waker(),
                    kernel_filter: s.kernel_filter(),
                    socket: Mutex::new(Some(s)),
                    closed: AtomicBool::new(false),
                };
                let js = JsConntrackEvents {
                    shared: Arc::new(shared),
                };
                Outcome::new(Some(js), None)
            }
            Err(e) => Outcome::new(None, Some(e)),
        })
    }
}

pub struct ReadEvents {
    shared: Arc<Shared>,
    max: f64,
    timeout_ms: f64,
}

/// Events one read may return (each becomes a JS object).
const MAX_BATCH: u64 = 65_536;
/// The longest wait one read may ask for.
const MAX_TIMEOUT_MS: u64 = 3_600_000;

impl ReadEvents {
    fn read(&self) -> Result<ConntrackEventBatch> {
        let max = convert::ranged("max", self.max, 1, MAX_BATCH)? as usize;
        let timeout = convert::index("timeoutMs", self.timeout_ms, MAX_TIMEOUT_MS)?;
        let closed = || ConntrackEventBatch {
            events: Vec::new(),
            lost: false,
            lost_total: 0.0,
            closed: true,
        };
        let mut guard = match self.shared.socket.try_lock() {
            Ok(g) => g,
            Err(TryLockError::WouldBlock) => return Err(to_js(CtError::Busy)),
            Err(TryLockError::Poisoned(_)) => return Ok(closed()),
        };
        if self.shared.closed.load(Ordering::SeqCst) {
            guard.take();
        }
        let Some(sock) = guard.as_mut() else {
            return Ok(closed());
        };
        let mut out = Vec::new();
        let r = sock
            .read(&mut out, max, Duration::from_millis(timeout))
            .map_err(to_js)?;
        let done = self.shared.closed.load(Ordering::SeqCst);
        if done {
            guard.take();
        }
        Ok(ConntrackEventBatch {
            events: out
                .iter()
                .map(|e| ConntrackEvent {
                    kind: kind_name(e.kind).to_owned(),
                    flow: flow_out(&e.flow),
                })
                .collect(),
            lost: r.lost,
            lost_total: (r.overflows + r.malformed) as f64,
            closed: done && out.is_empty(),
        })
    }
}

impl Task for ReadEvents {
    type Output = Result<ConntrackEventBatch>;
    type JsValue = Outcome<ConntrackEventBatch>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.read())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(b) => Outcome::new(Some(b), None),
            Err(e) => Outcome::new(None, Some(e)),
        })
    }
}
