//! The `Conntrack` class: queues tasks on the core's shared handle; the tasks convert the
//! arguments, so a bad one is reported like any other failure, as the outcome's `error`.

use std::collections::HashMap;
use std::sync::Arc;

use kubenode_conntrack::{CleanOptions, Conntrack, ConntrackHandle, Progress, Session};
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
}

impl JsConntrack {
    pub(super) fn new(core: Conntrack) -> Self {
        JsConntrack {
            inner: Arc::new(ConntrackHandle::new(Session::new(core))),
            progress: Arc::new(Progress::default()),
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
        Ok(output.map(JsConntrack::new).into())
    }
}
