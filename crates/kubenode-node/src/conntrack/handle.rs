//! The `Conntrack` class: queues tasks on the core's shared handle; the tasks convert the
//! arguments, so a bad one is reported like any other failure, as the outcome's `error`.

use std::collections::HashMap;
use std::sync::Arc;

use kubenode_conntrack::{CleanOptions, Conntrack, ConntrackHandle, Faults, Progress};
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

use super::tasks::{Batch, Clean, Job, List, OpenTask, Queued, StatsTask};
use super::types::*;
use crate::errors::NativeError;

#[napi(js_name = "Conntrack")]
pub struct JsConntrack {
    inner: Arc<ConntrackHandle>,
    progress: Arc<Progress>,
}

impl JsConntrack {
    pub(super) fn new(core: Conntrack) -> Self {
        JsConntrack {
            inner: Arc::new(ConntrackHandle::new(core)),
            progress: Arc::new(Progress::default()),
        }
    }

    /// Changes the test hooks' faults. Never waits for a running task (that would block the JS
    /// thread for a whole dump): reports `busy` instead.
    fn with_faults(&self, change: impl FnOnce(&mut Faults)) -> Option<NativeError> {
        self.inner
            .try_with(|c| {
                change(c.faults_mut());
                Ok(())
            })
            .err()
            .map(|e| (&e).into())
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
                op: Conntrack::delete,
            },
        )
    }

    /// Creates entries (for tests and benchmarks that fill a table).
    #[napi(ts_return_type = "Promise<Outcome<ConntrackBatchReport>>")]
    pub fn create(&self, family: String, flows: Vec<ConntrackFlow>) -> AsyncTask<Queued<Batch>> {
        self.queue(
            family,
            Batch {
                flows,
                op: Conntrack::create,
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

    /// Test hook: the next `count` faults of `kind` (0 disarms it). Never waits for a running
    /// task: reports `busy`. Returns the failure, if any, like a task outcome's `error`.
    // The kinds as their string values: the declared enum has no runtime object to name them.
    #[napi(ts_args_type = "kind: `${ConntrackFault}`, count: number")]
    pub fn inject_fault(&self, kind: ConntrackFault, count: u32) -> Option<NativeError> {
        self.with_faults(|f| f.set(kind, count))
    }

    /// Test hook: pins the cleanup's targeted-vs-full choice (`true`: targeted whenever the
    /// handle may); none leaves it to the measured costs. Returns the failure like `injectFault`.
    #[napi]
    pub fn pin_cost_choice(&self, prefer_targeted: Option<bool>) -> Option<NativeError> {
        self.with_faults(|f| f.cost_choice = prefer_targeted)
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
