//! The async tasks: each runs one core call on the thread pool and resolves to its outcome.

use kubenode_sysctl::{apply_sysctls, probe, ApplyError, NsTarget};
use napi::{Env, Task};

use crate::errors::Outcome;

pub struct ApplyTask {
    pub(super) target: NsTarget,
    pub(super) sysctls: Vec<(String, String)>,
}

impl Task for ApplyTask {
    type Output = std::result::Result<Vec<kubenode_sysctl::Applied>, ApplyError>;
    type JsValue = Outcome<Vec<kubenode_sysctl::Applied>>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(apply_sysctls(&self.target, &self.sysctls))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output.into())
    }
}

pub struct ProbeTask {
    pub(super) names: Vec<String>,
}

impl Task for ProbeTask {
    type Output = std::result::Result<Vec<kubenode_sysctl::ProbeResult>, ApplyError>;
    type JsValue = Outcome<Vec<kubenode_sysctl::ProbeResult>>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(probe(&self.names))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output.into())
    }
}
