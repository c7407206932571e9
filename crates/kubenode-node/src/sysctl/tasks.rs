//! The async tasks: each runs one core call on the thread pool and converts its result.

use kubenode_sysctl::{apply_sysctls, probe, ApplyError, NsTarget};
use napi::{Env, Task};

use super::types::{SysctlApplied, SysctlApplyOutcome, SysctlProbeOutcome, SysctlProbeResult};

pub struct ApplyTask {
    pub(super) target: NsTarget,
    pub(super) sysctls: Vec<(String, String)>,
}

impl Task for ApplyTask {
    type Output = std::result::Result<Vec<kubenode_sysctl::Applied>, ApplyError>;
    type JsValue = SysctlApplyOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(apply_sysctls(&self.target, &self.sysctls))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(v) => SysctlApplyOutcome {
                applied: v
                    .into_iter()
                    .map(|a| SysctlApplied {
                        name: a.name,
                        path: a.path,
                        previous: a.previous,
                        value: a.value,
                    })
                    .collect(),
                error: None,
            },
            Err(e) => SysctlApplyOutcome {
                applied: Vec::new(),
                error: Some((&e).into()),
            },
        })
    }
}

pub struct ProbeTask {
    pub(super) names: Vec<String>,
}

impl Task for ProbeTask {
    type Output = std::result::Result<Vec<kubenode_sysctl::ProbeResult>, ApplyError>;
    type JsValue = SysctlProbeOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(probe(&self.names))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(v) => SysctlProbeOutcome {
                results: v
                    .into_iter()
                    .map(|r| SysctlProbeResult {
                        name: r.name,
                        namespace: r.namespace.into(),
                        outcome: r.outcome.into(),
                        host_value: r.host_value,
                        probe_value: r.probe_value,
                        detail: r.detail,
                    })
                    .collect(),
                error: None,
            },
            Err(e) => SysctlProbeOutcome {
                results: Vec::new(),
                error: Some((&e).into()),
            },
        })
    }
}
