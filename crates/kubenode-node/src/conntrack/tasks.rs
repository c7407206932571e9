//! The AsyncTasks: each runs its checks and its netlink work off the JS thread and resolves to
//! an outcome carrying `error` rather than rejecting.

use std::collections::HashMap;
use std::sync::Arc;

use kubenode_conntrack::{
    check_flows, clean_stale, stale_matcher, BatchReport, CleanOptions, CleanReport, Conntrack,
    ConntrackHandle, DumpFilter, DumpStats, EndpointEntry, Error as CtError, Family, Flow,
    Progress, ServiceEntry,
};
use napi::{Env, Task};

use super::convert::{clean_out, flow_out};
use super::handle::JsConntrack;
use super::types::*;

type Outcome<T> = std::result::Result<T, CtError>;

pub struct OpenTask {
    pub(super) netns: Option<String>,
}

impl Task for OpenTask {
    type Output = Outcome<Conntrack>;
    type JsValue = ConntrackOpenOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match self.netns.as_deref() {
            Some(p) => Conntrack::open_in_netns(p),
            None => Conntrack::open(),
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(core) => ConntrackOpenOutcome {
                handle: Some(JsConntrack::new(core)),
                error: None,
            },
            Err(e) => ConntrackOpenOutcome {
                handle: None,
                error: Some((&e).into()),
            },
        })
    }
}

pub struct ListTask {
    pub(super) ct: Arc<ConntrackHandle>,
    pub(super) family: Family,
    pub(super) filter: DumpFilter,
}

impl Task for ListTask {
    type Output = Outcome<(Vec<Flow>, DumpStats)>;
    type JsValue = ConntrackListOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let (family, filter) = (self.family, self.filter);
        Ok(filter
            .validate(family)
            .and_then(|()| self.ct.with(|c| c.list(family, &filter))))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok((flows, s)) => ConntrackListOutcome {
                flows: flows.iter().map(flow_out).collect(),
                partial: s.partial,
                attempts: s.attempts,
                error: None,
            },
            Err(e) => ConntrackListOutcome {
                flows: vec![],
                partial: false,
                attempts: 0,
                error: Some((&e).into()),
            },
        })
    }
}

pub struct BatchTask {
    pub(super) ct: Arc<ConntrackHandle>,
    pub(super) family: Family,
    pub(super) flows: Vec<Flow>,
    pub(super) create: bool,
}

impl Task for BatchTask {
    type Output = Outcome<BatchReport>;
    type JsValue = ConntrackBatchOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let (family, flows, create) = (self.family, &self.flows, self.create);
        // Every flow is checked before any request is sent.
        Ok(check_flows(family, flows).and_then(|()| {
            self.ct.with(|c| {
                if create {
                    c.create(family, flows)
                } else {
                    c.delete(family, flows)
                }
            })
        }))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(r) => ConntrackBatchOutcome {
                requested: r.requested as f64,
                ok: r.ok as f64,
                not_found: r.not_found as f64,
                failed: r.failed as f64,
                first_error: r.first_error,
                error: None,
            },
            Err(e) => ConntrackBatchOutcome {
                requested: self.flows.len() as f64,
                ok: 0.0,
                not_found: 0.0,
                failed: 0.0,
                first_error: None,
                error: Some((&e).into()),
            },
        })
    }
}

pub struct CleanTask {
    pub(super) ct: Arc<ConntrackHandle>,
    pub(super) progress: Arc<Progress>,
    pub(super) family: Family,
    pub(super) services: Vec<ServiceEntry>,
    pub(super) endpoints: HashMap<String, Vec<EndpointEntry>>,
    pub(super) dry_run: bool,
    pub(super) full: bool,
}

impl Task for CleanTask {
    type Output = Outcome<CleanReport>;
    type JsValue = ConntrackCleanOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let opts = CleanOptions {
            dry_run: self.dry_run,
            full: self.full,
        };
        let (family, progress) = (self.family, &*self.progress);
        // The tables are checked (and the matcher built) before the handle is touched.
        Ok(
            stale_matcher(family, &self.services, &self.endpoints).and_then(|matcher| {
                self.ct
                    .with(|c| clean_stale(c, family, &matcher, opts, progress))
            }),
        )
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(r) => clean_out(r),
            Err(e) => ConntrackCleanOutcome {
                listed: 0.0,
                stale: 0.0,
                deleted: 0.0,
                not_found: 0.0,
                failed: 0.0,
                partial: false,
                attempts: 0,
                seconds: 0.0,
                first_error: None,
                path: ConntrackCleanPath::Full,
                full_reason: None,
                targeted_estimate: None,
                full_estimate: None,
                pairs: 0.0,
                error: Some((&e).into()),
            },
        })
    }
}
