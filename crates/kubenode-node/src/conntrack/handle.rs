//! The `Conntrack` class: converts arguments and queues tasks on the core's shared handle.

use std::collections::HashMap;
use std::sync::Arc;

use kubenode_conntrack::{parse_family, Conntrack, ConntrackHandle, Progress};
use napi::bindgen_prelude::AsyncTask;
use napi::Env;
use napi_derive::napi;

use super::convert::{endpoints_in, filter_in, flow_in, progress_out, service_in, to_js};
use super::tasks::{BatchTask, CleanTask, ListTask, OpenTask};
use super::types::*;
use crate::errors::{throwing, NativeError, Result};

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

    /// Converts the flows up front and queues one batched delete or create; the task checks
    /// them before any netlink work.
    fn batch(
        &self,
        family: String,
        flows: Vec<ConntrackFlow>,
        create: bool,
    ) -> Result<AsyncTask<BatchTask>> {
        Ok(AsyncTask::new(BatchTask {
            ct: self.inner.clone(),
            family: parse_family(&family).map_err(to_js)?,
            flows: flows
                .iter()
                .enumerate()
                .map(|(i, f)| flow_in(i, f))
                .collect::<Result<Vec<_>>>()?,
            create,
        }))
    }
}

#[napi]
impl JsConntrack {
    /// Opens a handle in this process's network namespace, or in the one at `netns`, off the
    /// JS thread (opening the namespace file and `setns` touch the filesystem and kernel).
    #[napi(ts_return_type = "Promise<ConntrackOpenOutcome>")]
    pub fn open(netns: Option<String>) -> AsyncTask<OpenTask> {
        AsyncTask::new(OpenTask { netns })
    }

    #[napi(ts_return_type = "Promise<ConntrackListOutcome>")]
    pub fn list(
        &self,
        env: Env,
        family: String,
        filter: Option<ConntrackListFilter>,
    ) -> napi::Result<AsyncTask<ListTask>> {
        throwing(&env, || {
            Ok(AsyncTask::new(ListTask {
                ct: self.inner.clone(),
                family: parse_family(&family).map_err(to_js)?,
                filter: filter.map(filter_in).transpose()?.unwrap_or_default(),
            }))
        })
    }

    #[napi(ts_return_type = "Promise<ConntrackBatchOutcome>")]
    pub fn delete(
        &self,
        env: Env,
        family: String,
        flows: Vec<ConntrackFlow>,
    ) -> napi::Result<AsyncTask<BatchTask>> {
        throwing(&env, || self.batch(family, flows, false))
    }

    /// Creates entries (for tests and benchmarks that fill a table).
    #[napi(ts_return_type = "Promise<ConntrackBatchOutcome>")]
    pub fn create(
        &self,
        env: Env,
        family: String,
        flows: Vec<ConntrackFlow>,
    ) -> napi::Result<AsyncTask<BatchTask>> {
        throwing(&env, || self.batch(family, flows, true))
    }

    /// One cleanup pass for `family`: full, or targeted at what changed since this handle's
    /// last successful pass (the core decides; `full` forces a full pass). The tables are
    /// checked in the task.
    #[napi(ts_return_type = "Promise<ConntrackCleanOutcome>")]
    pub fn clean_stale(
        &self,
        env: Env,
        family: String,
        services: Vec<ConntrackService>,
        endpoints: HashMap<String, Vec<ConntrackEndpoint>>,
        dry_run: Option<bool>,
        full: Option<bool>,
    ) -> napi::Result<AsyncTask<CleanTask>> {
        throwing(&env, || {
            Ok(AsyncTask::new(CleanTask {
                ct: self.inner.clone(),
                progress: self.progress.clone(),
                family: parse_family(&family).map_err(to_js)?,
                services: services
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| service_in(i, s))
                    .collect::<Result<Vec<_>>>()?,
                endpoints: endpoints_in(endpoints)?,
                dry_run: dry_run.unwrap_or(false),
                full: full.unwrap_or(false),
            }))
        })
    }

    /// Progress of the running clean pass (readable while it runs).
    #[napi]
    pub fn progress(&self) -> ConntrackProgress {
        progress_out(&self.progress)
    }

    /// Test hook: faults to inject into the next operations. Never waits for a running task
    /// (that would block the JS thread for a whole dump): reports `busy` instead. Returns the
    /// failure, if any, like a task outcome's `error`.
    #[napi]
    pub fn inject_faults(&self, faults: ConntrackFaults) -> Option<NativeError> {
        self.inner
            .try_with(|c| {
                let f = c.faults_mut();
                f.recv_eintr = faults.recv_eintr.unwrap_or(0);
                f.recv_enobufs = faults.recv_enobufs.unwrap_or(0);
                f.dump_intr = faults.dump_intr.unwrap_or(0);
                f.trunc = faults.trunc.unwrap_or(0);
                f.cost_choice = faults.prefer_targeted;
                Ok(())
            })
            .err()
            .map(|e| (&e).into())
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
