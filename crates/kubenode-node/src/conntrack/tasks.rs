//! The AsyncTasks: each converts its arguments, runs the core's checks and its netlink work off
//! the JS thread, and resolves to an outcome carrying `error` rather than rejecting, so every
//! failure of a queued call, from a bad argument to the kernel's refusal, takes one path.

use std::collections::HashMap;
use std::sync::Arc;

use kubenode_conntrack::{
    check_flows, parse_family, parse_ip, stale_matcher, BatchReport, CleanOptions, CleanReport,
    ConntrackHandle, DumpStats, Error as CtError, Family, FilterDeleteReport, Flow, Progress,
    Session, TableStats,
};
use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{Env, Task};

use super::convert::{each, endpoints_in, filter_in, flow_in, flow_out, service_in, to_js};
use super::types::*;
use crate::convert::k8s_version;
use crate::errors::{Outcome, Result};

type CoreResult<T> = std::result::Result<T, CtError>;

/// A queued call on an open handle: `run` converts its own arguments and does its work off the
/// JS thread; `value` turns its report into what JavaScript receives.
pub trait Job: Send {
    type Report: Send + 'static;
    type Value: ToNapiValue + TypeName;
    fn run(&mut self, ct: &ConntrackHandle, family: Family) -> Result<Self::Report>;
    fn value(report: Self::Report) -> Self::Value;
}

/// The one `Task` of every [`Job`]: the family is checked first, then the job runs on the
/// handle. The outcome carries the report, or the failure as its `error`.
pub struct Queued<J> {
    pub(super) ct: Arc<ConntrackHandle>,
    pub(super) family: String,
    pub(super) job: J,
}

impl<J: Job> Task for Queued<J> {
    type Output = Result<J::Report>;
    type JsValue = Outcome<J::Value>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let family = parse_family(&self.family).map_err(to_js);
        Ok(family.and_then(|f| self.job.run(&self.ct, f)))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(r) => Outcome::new(Some(J::value(r)), None),
            Err(e) => Outcome::new(None, Some(e)),
        })
    }
}

/// `stats`: count, limit and per-CPU counters; no family, no table walk.
pub struct StatsTask {
    pub(super) ct: Arc<ConntrackHandle>,
}

impl Task for StatsTask {
    type Output = CoreResult<TableStats>;
    type JsValue = Outcome<TableStats>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.ct.with(|s| s.ct.stats()))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output.into())
    }
}

/// `list`: one dump, filtered in the kernel.
pub struct List {
    pub(super) filter: Option<ConntrackListFilter>,
}

impl Job for List {
    type Report = (Vec<Flow>, DumpStats);
    type Value = ConntrackListReport;

    fn run(&mut self, ct: &ConntrackHandle, family: Family) -> Result<Self::Report> {
        let filter = self.filter.take().map(filter_in).transpose()?;
        let filter = filter.unwrap_or_default();
        filter.validate(family).map_err(to_js)?;
        ct.with(|s| s.ct.list(family, &filter)).map_err(to_js)
    }

    fn value((flows, s): Self::Report) -> ConntrackListReport {
        ConntrackListReport {
            flows: flows.iter().map(flow_out).collect(),
            partial: s.partial,
            attempts: s.attempts,
        }
    }
}

/// Which deletion by filter a [`FilterDelete`] runs.
#[derive(Clone, Copy)]
pub enum FilterOp {
    /// `deleteMatching`: dump with the filter, delete the matches.
    Delete,
    /// `flush`: the kernel's flush where it can apply the filter, else as `Delete`.
    Flush,
}

/// `deleteMatching` and `flush`.
pub struct FilterDelete {
    pub(super) filter: Option<ConntrackListFilter>,
    pub(super) op: FilterOp,
}

impl Job for FilterDelete {
    type Report = FilterDeleteReport;
    type Value = FilterDeleteReport;

    fn run(&mut self, ct: &ConntrackHandle, family: Family) -> Result<FilterDeleteReport> {
        let filter = self.filter.take().map(filter_in).transpose()?;
        let filter = filter.unwrap_or_default();
        filter.validate(family).map_err(to_js)?;
        let op = self.op;
        ct.with(|s| match op {
            FilterOp::Delete => s.ct.delete_matching(family, &filter),
            FilterOp::Flush => s.ct.flush(family, &filter),
        })
        .map_err(to_js)
    }

    fn value(report: FilterDeleteReport) -> FilterDeleteReport {
        report
    }
}

/// `purgeIps`: every flow of the given addresses, any protocol, either direction.
pub struct Purge {
    pub(super) ips: Vec<String>,
}

impl Job for Purge {
    type Report = FilterDeleteReport;
    type Value = FilterDeleteReport;

    fn run(&mut self, ct: &ConntrackHandle, family: Family) -> Result<FilterDeleteReport> {
        let ips = each(&self.ips, |i, s| {
            parse_ip(&format!("ips[{i}]"), s).map_err(to_js)
        })?;
        ct.with(|s| s.ct.purge_ips(family, &ips)).map_err(to_js)
    }

    fn value(report: FilterDeleteReport) -> FilterDeleteReport {
        report
    }
}

/// A core batch operation: `Conntrack::delete` or `Conntrack::create` on the session's handle.
pub(super) type BatchOp = fn(&mut Session, Family, &[Flow]) -> CoreResult<BatchReport>;

/// `delete` and `create`: one batch of per-flow requests.
pub struct Batch {
    pub(super) flows: Vec<ConntrackFlow>,
    pub(super) op: BatchOp,
}

impl Job for Batch {
    type Report = BatchReport;
    type Value = BatchReport;

    fn run(&mut self, ct: &ConntrackHandle, family: Family) -> Result<BatchReport> {
        let (flows, op) = (each(&self.flows, flow_in)?, self.op);
        // Every flow is checked before any request is sent.
        check_flows(family, &flows).map_err(to_js)?;
        ct.with(|c| op(c, family, &flows)).map_err(to_js)
    }

    fn value(report: BatchReport) -> BatchReport {
        report
    }
}

/// `cleanStale`: one cleanup pass over the tables handed over.
pub struct Clean {
    pub(super) progress: Arc<Progress>,
    pub(super) services: Vec<ConntrackService>,
    pub(super) endpoints: HashMap<String, Vec<ConntrackEndpoint>>,
    pub(super) opts: CleanOptions,
    pub(super) kubernetes_version: Option<String>,
}

impl Job for Clean {
    type Report = CleanReport;
    type Value = CleanReport;

    fn run(&mut self, ct: &ConntrackHandle, family: Family) -> Result<CleanReport> {
        let k8s = k8s_version(self.kubernetes_version.take())?;
        let services = each(&self.services, service_in)?;
        let endpoints = endpoints_in(&self.endpoints)?;
        // The tables are checked (and the matcher built) before the handle is touched.
        let matcher = stale_matcher(family, &services, &endpoints, k8s).map_err(to_js)?;
        let (opts, progress) = (self.opts, &*self.progress);
        ct.with(|s| s.cleaner.clean(&mut s.ct, family, &matcher, opts, progress))
            .map_err(to_js)
    }

    fn value(report: CleanReport) -> CleanReport {
        report
    }
}
