//! The `Conntrack` class: queues tasks on the core's shared handle; the tasks convert the
//! arguments, so a bad one is reported like any other failure, as the outcome's `error`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use kubenode_conntrack::{
    CleanOptions, Conntrack, ConntrackHandle, Family, FeedStats, FlowIndex, Progress, Resync,
    Session,
};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use super::tasks::{Batch, Clean, FilterDelete, FilterOp, Job, List, Purge, Queued, StatsTask};
use super::types::*;
use crate::errors::Outcome;

#[napi(js_name = "Conntrack")]
pub struct JsConntrack {
    pub(super) inner: Arc<ConntrackHandle>,
    progress: Arc<Progress>,
    /// The namespace the handle was opened in: its event index subscribes there.
    netns: Option<String>,
    /// The event-fed index once enabled, readable without waiting for a running task.
    index: Arc<Mutex<Option<EnabledIndex>>>,
}

type EnabledIndex = (Arc<Mutex<FlowIndex>>, Arc<FeedStats>);

/// The receive buffer of an index's event socket unless told: room for about a hundred
/// thousand events (a few hundred bytes each), so a burst of new flows, or the DESTROY events
/// of a pass's own deletes, is not a loss and a full pass. The kernel charges only what is
/// queued.
const INDEX_RCVBUF: usize = 32 << 20;

fn state_name(s: Result<(), Resync>) -> String {
    match s {
        Ok(()) => "valid",
        Err(Resync::NotBuilt) => "notBuilt",
        Err(Resync::EventsLost) => "eventsLost",
        Err(Resync::Cap) => "cap",
    }
    .into()
}

impl JsConntrack {
    pub(super) fn new(core: Conntrack, netns: Option<String>) -> Self {
        JsConntrack {
            inner: Arc::new(ConntrackHandle::new(Session::new(core))),
            progress: Arc::new(Progress::default()),
            netns,
            index: Arc::new(Mutex::new(None)),
        }
    }

    /// Queues `job` on this handle for `family`.
    fn queue<J: Job>(&self, family: String, job: J) -> AsyncTask<Queued<J>> {
        AsyncTask::new(Queued {
            ct: self.inner.clone(),
            family,
            job,
        })
    }
}

#[napi]
impl JsConntrack {
    /// Opens a handle in this process's network namespace, or in the one at `netns`, off the
    /// JS thread (opening the namespace file and `setns` touch the filesystem and kernel).
    #[napi(ts_return_type = "Promise<Outcome<Conntrack>>")]
    pub fn open(netns: Option<String>) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask { netns })
    }

    #[napi(ts_return_type = "Promise<Outcome<ConntrackListReport>>")]
    pub fn list(
        &self,
        family: String,
        filter: Option<ConntrackListFilter>,
    ) -> AsyncTask<Queued<List>> {
        self.queue(family, List { filter })
    }

    #[napi(ts_return_type = "Promise<Outcome<ConntrackBatchReport>>")]
    pub fn delete(&self, family: String, flows: Vec<ConntrackFlow>) -> AsyncTask<Queued<Batch>> {
        self.queue(
            family,
            Batch {
                flows,
                op: |s, family, flows| s.ct.delete(family, flows),
            },
        )
    }

    /// Deletes the flows `filter` matches: a filtered dump, then deletes by exact tuple.
    #[napi(ts_return_type = "Promise<Outcome<ConntrackFilterDeleteReport>>")]
    pub fn delete_matching(
        &self,
        family: String,
        filter: ConntrackListFilter,
    ) -> AsyncTask<Queued<FilterDelete>> {
        self.queue(
            family,
            FilterDelete {
                filter: Some(filter),
                op: FilterOp::Delete,
            },
        )
    }

    /// Deletes the family's flows that `filter` matches (all without one), in one kernel
    /// request where the kernel can apply the filter exactly.
    #[napi(ts_return_type = "Promise<Outcome<ConntrackFilterDeleteReport>>")]
    pub fn flush(
        &self,
        family: String,
        filter: Option<ConntrackListFilter>,
    ) -> AsyncTask<Queued<FilterDelete>> {
        self.queue(
            family,
            FilterDelete {
                filter,
                op: FilterOp::Flush,
            },
        )
    }

    /// Deletes every flow of `ips` (original or reply, source or destination), any protocol.
    #[napi(ts_return_type = "Promise<Outcome<ConntrackFilterDeleteReport>>")]
    pub fn purge_ips(&self, family: String, ips: Vec<String>) -> AsyncTask<Queued<Purge>> {
        self.queue(family, Purge { ips })
    }

    /// Creates entries (for tests and benchmarks that fill a table).
    #[napi(ts_return_type = "Promise<Outcome<ConntrackBatchReport>>")]
    pub fn create(&self, family: String, flows: Vec<ConntrackFlow>) -> AsyncTask<Queued<Batch>> {
        self.queue(
            family,
            Batch {
                flows,
                op: |s, family, flows| s.ct.create(family, flows),
            },
        )
    }

    /// One cleanup pass for `family` with the rules of `kubernetesVersion` (default: the
    /// newest kubenode knows): full, or targeted at what changed since this handle's last
    /// successful pass (the core decides; `full` forces a full pass). The arguments and tables
    /// are checked in the task.
    #[napi(ts_return_type = "Promise<Outcome<ConntrackCleanReport>>")]
    pub fn clean_stale(
        &self,
        family: String,
        services: Vec<ConntrackService>,
        endpoints: HashMap<String, Vec<ConntrackEndpoint>>,
        dry_run: Option<bool>,
        full: Option<bool>,
        kubernetes_version: Option<String>,
    ) -> AsyncTask<Queued<Clean>> {
        let opts = CleanOptions {
            dry_run: dry_run.unwrap_or(false),
            full: full.unwrap_or(false),
        };
        let progress = self.progress.clone();
        self.queue(
            family,
            Clean {
                progress,
                services,
                endpoints,
                opts,
                kubernetes_version,
            },
        )
    }

    /// Entry count, limit and per-CPU counters of the handle's namespace (two small requests,
    /// no table walk); queued behind a running task like the others.
    #[napi(ts_return_type = "Promise<Outcome<ConntrackStats>>")]
    pub fn stats(&self) -> AsyncTask<StatsTask> {
        AsyncTask::new(StatsTask {
            ct: self.inner.clone(),
        })
    }

    /// Turns on the event-fed flow index for `cleanStale`: subscribes to the handle's
    /// namespace's conntrack events (off the JS thread) and feeds an index of at most
    /// `maxFlows` flows (default: the table's limit, `nf_conntrack_max`) on a thread of its
    /// own. The next pass is full and builds it.
    #[napi(ts_return_type = "Promise<Outcome<boolean>>")]
    pub fn enable_event_index(
        &self,
        max_flows: Option<f64>,
        buffer_size: Option<f64>,
    ) -> AsyncTask<EnableIndexTask> {
        AsyncTask::new(EnableIndexTask {
            ct: self.inner.clone(),
            netns: self.netns.clone(),
            max_flows,
            buffer_size,
            slot: self.index.clone(),
        })
    }

    /// The event-fed index's state, or null when it is not enabled.
    #[napi]
    pub fn index_stats(&self) -> Option<ConntrackIndexStats> {
        let slot = self.index.lock().unwrap_or_else(|p| p.into_inner());
        let (index, feed) = slot.as_ref()?;
        let x = index.lock().unwrap_or_else(|p| p.into_inner());
        Some(ConntrackIndexStats {
            flows: x.len() as f64,
            bytes: x.bytes() as f64,
            pairs: (x.pairs(Family::V4) + x.pairs(Family::V6)) as f64,
            ipv4: state_name(x.state(Family::V4)),
            ipv6: state_name(x.state(Family::V6)),
            events: feed.events.load(Ordering::Relaxed) as f64,
            losses: feed.losses.load(Ordering::Relaxed) as f64,
        })
    }

    /// Progress of the running clean pass (readable while it runs).
    #[napi]
    pub fn progress(&self) -> ConntrackProgress {
        self.progress.report()
    }

    /// Closes the socket; later calls fail. Returns at once: a running task closes the socket
    /// when it finishes.
    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }

    /// True once `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// `open`: the handle is made off the JS thread (opening a namespace touches the filesystem).
pub struct OpenTask {
    pub(super) netns: Option<String>,
}

impl Task for OpenTask {
    type Output = kubenode_conntrack::Result<Conntrack>;
    type JsValue = Outcome<JsConntrack>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match self.netns.as_deref() {
            Some(p) => Conntrack::open_in_netns(p),
            None => Conntrack::open(),
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        let netns = self.netns.take();
        Ok(output.map(|c| JsConntrack::new(c, netns)).into())
    }
}

/// `enableEventIndex`: the event socket is opened (in the handle's namespace) off the JS
/// thread, queued behind a running task like the others.
pub struct EnableIndexTask {
    ct: Arc<ConntrackHandle>,
    netns: Option<String>,
    max_flows: Option<f64>,
    buffer_size: Option<f64>,
    slot: Arc<Mutex<Option<EnabledIndex>>>,
}

/// A whole count in 1..=`max`, or what is wrong with it.
fn count(name: &str, v: f64, max: usize) -> kubenode_conntrack::Result<usize> {
    if v.fract() == 0.0 && v >= 1.0 && v <= max as f64 {
        Ok(v as usize)
    } else {
        Err(kubenode_conntrack::Error::OutOfRange(format!(
            "{name} must be a whole number from 1 to {max}, got {v}"
        )))
    }
}

impl Task for EnableIndexTask {
    type Output = kubenode_conntrack::Result<bool>;
    type JsValue = Outcome<bool>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let max = self
            .max_flows
            .map(|v| count("maxFlows", v, u32::MAX as usize));
        let rcvbuf = self
            .buffer_size
            .map(|v| count("bufferSize", v, kubenode_conntrack::MAX_RCVBUF))
            .unwrap_or(Ok(INDEX_RCVBUF));
        let (netns, slot) = (self.netns.as_deref(), &self.slot);
        Ok(self.ct.with(|s| {
            let rcvbuf = rcvbuf?;
            let max = match max {
                Some(m) => m?,
                // The table cannot hold more; 0 is no limit.
                None => match s.ct.stats()?.max {
                    0 => u32::MAX as usize,
                    m => m as usize,
                },
            };
            let enabled = s.enable_index(netns, max, Some(rcvbuf))?;
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(enabled);
            Ok(true)
        }))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output.into())
    }
}
