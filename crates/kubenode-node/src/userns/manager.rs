//! The `UsernsCore` class: one `SharedManager`, each call one task. The synchronous calls made
//! on the JS thread (`allocations`, `isOpen`, `close`) never wait for a running task.

use std::sync::Arc;

use kubenode_userns::SharedManager;
use napi::bindgen_prelude::AsyncTask;
use napi::Env;
use napi_derive::napi;

use super::convert::open_args;
use super::tasks::{GetOrCreateManyTask, ManagerTask, Op};
use super::types::{UsernsAllocation, UsernsConfig};
use crate::errors::throwing;

/// One user-namespace manager (empty until `open`).
#[napi]
pub struct UsernsCore {
    shared: Arc<SharedManager>,
}

impl Default for UsernsCore {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl UsernsCore {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self {
            shared: Arc::new(SharedManager::new()),
        }
    }

    fn task(&self, op: Op) -> AsyncTask<ManagerTask> {
        AsyncTask::new(ManagerTask::new(self.shared.clone(), op))
    }

    /// Checks the configuration, takes the lock and restores every pod's file.
    #[napi(ts_return_type = "Promise<UsernsOutcome>")]
    pub fn open(&self, env: Env, config: UsernsConfig) -> napi::Result<AsyncTask<ManagerTask>> {
        throwing(&env, || {
            let (dir, c, o) = open_args(&config)?;
            Ok(self.task(Op::Open(self.shared.open_ticket(), dir, c, o)))
        })
    }

    #[napi(ts_return_type = "Promise<UsernsOutcome>")]
    pub fn get_or_create(&self, pod_uid: String) -> AsyncTask<ManagerTask> {
        self.task(Op::GetOrCreate(pod_uid))
    }

    #[napi(ts_return_type = "Promise<UsernsOutcome>")]
    pub fn release(&self, pod_uid: String) -> AsyncTask<ManagerTask> {
        self.task(Op::Release(pod_uid))
    }

    /// One outcome per pod, in order.
    #[napi(ts_return_type = "Promise<UsernsOutcome[]>")]
    pub fn get_or_create_many(&self, pod_uids: Vec<String>) -> AsyncTask<GetOrCreateManyTask> {
        AsyncTask::new(GetOrCreateManyTask::new(self.shared.clone(), pod_uids))
    }

    #[napi(ts_return_type = "Promise<UsernsOutcome>")]
    pub fn release_many(&self, pod_uids: Vec<String>) -> AsyncTask<ManagerTask> {
        self.task(Op::ReleaseMany(pod_uids))
    }

    #[napi(ts_return_type = "Promise<UsernsOutcome>")]
    pub fn cleanup(&self, pods: Vec<String>, running_pods: Vec<String>) -> AsyncTask<ManagerTask> {
        self.task(Op::Cleanup(pods, running_pods))
    }

    /// Every allocation, sorted by pod UID, as of the last finished call: never waits for a
    /// running task.
    #[napi]
    pub fn allocations(&self) -> Vec<UsernsAllocation> {
        self.shared
            .allocations()
            .into_iter()
            .map(Into::into)
            .collect()
    }

    #[napi(getter)]
    pub fn is_open(&self) -> bool {
        self.shared.is_open()
    }

    /// Drops the manager and its lock: at once when no call is running, otherwise as soon as
    /// the running one finishes. Calls that have not started yet see a closed manager.
    #[napi]
    pub fn close(&self) {
        self.shared.close();
    }
}
