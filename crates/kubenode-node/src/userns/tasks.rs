//! The async tasks: each runs one core call on the thread pool and converts its result.

use std::path::PathBuf;
use std::sync::Arc;

use kubenode_userns::{
    list_mappings, not_open, read_pod_mapping, verify_mapping, Config, Error as CoreError,
    ErrorKind, OpenTicket, Options, SharedManager, VerifyReport,
};
use napi::{Env, Task};

use super::types::{UsernsListOutcome, UsernsOutcome, UsernsVerifyOutcome};

pub enum Op {
    Open(OpenTicket, PathBuf, Config, Options),
    /// Releases in order under one lock: the same as one `Release` per pod, in one task.
    ReleaseMany(Vec<String>),
    Cleanup(Vec<String>, Vec<String>),
}

pub struct ManagerTask {
    shared: Arc<SharedManager>,
    op: Option<Op>,
}

impl ManagerTask {
    pub fn new(shared: Arc<SharedManager>, op: Op) -> Self {
        Self {
            shared,
            op: Some(op),
        }
    }
}

impl Task for ManagerTask {
    type Output = UsernsOutcome;
    type JsValue = UsernsOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let s = &self.shared;
        Ok(match self.op.take() {
            Some(Op::Open(ticket, dir, config, opts)) => s.open(ticket, dir, config, opts).into(),
            Some(Op::ReleaseMany(pods)) => s.release_many(&pods).into(),
            Some(Op::Cleanup(pods, running)) => s.cleanup(&pods, &running).into(),
            None => Err::<(), _>(not_open()).into(),
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// `getOrCreate` for several pods in one task (in order, under one lock: the same as one call
/// per pod), so a batch pays the thread-pool round trip once.
pub struct GetOrCreateManyTask {
    shared: Arc<SharedManager>,
    pods: Vec<String>,
}

impl GetOrCreateManyTask {
    pub fn new(shared: Arc<SharedManager>, pods: Vec<String>) -> Self {
        Self { shared, pods }
    }
}

impl Task for GetOrCreateManyTask {
    type Output = Vec<UsernsOutcome>;
    type JsValue = Vec<UsernsOutcome>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let pods = std::mem::take(&mut self.pods);
        let out = self.shared.get_or_create_many(&pods);
        Ok(out.into_iter().map(Into::into).collect())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

pub struct ListTask {
    pub dir: PathBuf,
}

impl Task for ListTask {
    type Output = UsernsListOutcome;
    type JsValue = UsernsListOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(list_mappings(&self.dir).into())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

pub enum VerifyTarget {
    Mapping(u32, u32),
    /// `<podsDir>/<podUid>/userns`, read in `compute` rather than on the JS thread.
    Pod(PathBuf, String),
}

pub struct VerifyTask {
    pub target: Option<VerifyTarget>,
}

impl Task for VerifyTask {
    type Output = UsernsVerifyOutcome;
    type JsValue = UsernsVerifyOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let target = match self.target.take() {
            Some(VerifyTarget::Mapping(h, l)) => Ok((None, h, l)),
            Some(VerifyTarget::Pod(dir, pod)) => {
                read_pod_mapping(&dir, &pod).map(|(h, l)| (Some(pod), h, l))
            }
            None => Err(CoreError::new(ErrorKind::Io, "verify task ran twice")),
        };
        let r =
            target.and_then(|(pod, h, l)| verify_mapping(h, l).map(|r| VerifyReport { pod, ..r }));
        Ok(r.into())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}
