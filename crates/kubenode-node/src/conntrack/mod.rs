//! Binding for kubenode-conntrack: a `Conntrack` handle whose netlink work runs as AsyncTasks.
//! Task outcomes carry `error: { code, message }`, since a Task can only reject with a plain
//! status; the TypeScript façade turns them into typed errors.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};

use kubenode_conntrack::{
    clean_stale, is_headless, CleanOptions, Conntrack as Core, DumpFilter, Endpoint,
    Error as CtError, Family, Flow, Progress, Protocol, ServicePort, StaleMatcher, Tuple,
};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::convert;
use crate::errors::{err, Code, Result};

fn code_of(e: &CtError) -> Code {
    match e {
        CtError::Permission { .. } => Code::Permission,
        CtError::Unsupported { .. } => Code::Unsupported,
        CtError::InvalidArgument(_) | CtError::FamilyMismatch(_) => Code::InvalidArg,
        CtError::Malformed(_) | CtError::Truncated(_) => Code::Parse,
        CtError::Netns { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => {
            Code::Permission
        }
        CtError::Namespace(e) if e.is_permission() => Code::Permission,
        CtError::Namespace(e) if e.is_wrong_file() => Code::InvalidArg,
        _ => Code::Io,
    }
}

fn to_js(e: CtError) -> crate::errors::Error {
    err(code_of(&e), e)
}

#[napi(object)]
pub struct ConntrackTaskError {
    pub code: String,
    pub message: String,
}

fn task_error(e: &CtError) -> ConntrackTaskError {
    ConntrackTaskError {
        code: code_of(e).as_ref().to_string(),
        message: e.to_string(),
    }
}

fn family(s: &str) -> Result<Family> {
    match s {
        "IPv4" => Ok(Family::V4),
        "IPv6" => Ok(Family::V6),
        other => Err(err(
            Code::InvalidArg,
            format!("family must be \"IPv4\" or \"IPv6\", got {other:?}"),
        )),
    }
}

fn parse_ip(what: &str, s: &str) -> Result<IpAddr> {
    s.parse().map_err(|_| {
        err(
            Code::InvalidArg,
            format!("{what}: invalid IP address {s:?}"),
        )
    })
}

fn port(what: &str, v: f64) -> Result<u16> {
    Ok(convert::index(what, v, 65535)? as u16)
}

#[napi(object)]
pub struct ConntrackTuple {
    pub src_ip: Option<String>,
    pub dst_ip: Option<String>,
    pub src_port: f64,
    pub dst_port: f64,
}

#[napi(object)]
pub struct ConntrackFlow {
    pub protocol: f64,
    pub forward: ConntrackTuple,
    pub reverse: ConntrackTuple,
    pub zone: f64,
    pub id: Option<f64>,
    pub mark: f64,
    pub status: f64,
    pub timeout: f64,
}

fn tuple_out(t: &Tuple) -> ConntrackTuple {
    ConntrackTuple {
        src_ip: t.src.map(|a| a.to_string()),
        dst_ip: t.dst.map(|a| a.to_string()),
        src_port: t.src_port.into(),
        dst_port: t.dst_port.into(),
    }
}

fn flow_out(f: &Flow) -> ConntrackFlow {
    ConntrackFlow {
        protocol: f.orig.proto.into(),
        forward: tuple_out(&f.orig),
        reverse: tuple_out(&f.reply),
        zone: f.zone.into(),
        id: f.id.map(f64::from),
        mark: f.mark.into(),
        status: f.status.into(),
        timeout: f.timeout.into(),
    }
}

fn tuple_in(what: &str, t: &ConntrackTuple, proto: u8) -> Result<Tuple> {
    let ip = |name: &str, v: &Option<String>| -> Result<Option<IpAddr>> {
        v.as_deref()
            .map(|s| parse_ip(&format!("{what}.{name}"), s))
            .transpose()
    };
    Ok(Tuple {
        src: ip("srcIP", &t.src_ip)?,
        dst: ip("dstIP", &t.dst_ip)?,
        proto,
        src_port: port(&format!("{what}.srcPort"), t.src_port)?,
        dst_port: port(&format!("{what}.dstPort"), t.dst_port)?,
    })
}

fn flow_in(i: usize, f: &ConntrackFlow) -> Result<Flow> {
    let proto = convert::index(&format!("flows[{i}].protocol"), f.protocol, 255)? as u8;
    Ok(Flow {
        orig: tuple_in(&format!("flows[{i}].forward"), &f.forward, proto)?,
        reply: tuple_in(&format!("flows[{i}].reverse"), &f.reverse, proto)?,
        zone: convert::index(&format!("flows[{i}].zone"), f.zone, 65535)? as u16,
        id: f
            .id
            .map(|v| convert::index(&format!("flows[{i}].id"), v, u32::MAX.into()))
            .transpose()?
            .map(|v| v as u32),
        mark: convert::index(&format!("flows[{i}].mark"), f.mark, u32::MAX.into())? as u32,
        status: convert::index(&format!("flows[{i}].status"), f.status, u32::MAX.into())? as u32,
        timeout: convert::index(&format!("flows[{i}].timeout"), f.timeout, u32::MAX.into())? as u32,
    })
}

#[napi(object)]
pub struct ConntrackService {
    pub name: String,
    pub protocol: String,
    /// Empty or "None" for headless services.
    pub cluster_ip: String,
    pub port: f64,
    pub node_port: Option<f64>,
    pub external_ips: Option<Vec<String>>,
    pub load_balancer_ips: Option<Vec<String>>,
}

#[napi(object)]
pub struct ConntrackEndpoint {
    pub ip: String,
    pub port: f64,
    pub serving: bool,
}

#[napi(object)]
pub struct ConntrackListFilter {
    pub protocol: Option<f64>,
    pub dst_ip: Option<String>,
    pub dst_port: Option<f64>,
}

#[napi(object)]
pub struct ConntrackListOutcome {
    pub flows: Vec<ConntrackFlow>,
    pub partial: bool,
    pub attempts: u32,
    pub error: Option<ConntrackTaskError>,
}

#[napi(object)]
pub struct ConntrackBatchOutcome {
    pub requested: f64,
    /// Deleted or created now.
    pub ok: f64,
    /// ENOENT: already gone.
    pub not_found: f64,
    pub failed: f64,
    pub first_error: Option<String>,
    pub error: Option<ConntrackTaskError>,
}

#[napi(object)]
pub struct ConntrackCleanOutcome {
    pub listed: f64,
    pub stale: f64,
    pub deleted: f64,
    pub not_found: f64,
    pub failed: f64,
    pub partial: bool,
    pub attempts: u32,
    pub seconds: f64,
    pub first_error: Option<String>,
    pub error: Option<ConntrackTaskError>,
}

#[napi(object)]
pub struct ConntrackProgress {
    /// "idle", "listing" or "deleting".
    pub phase: String,
    pub listed: f64,
    pub stale: f64,
    pub deleted: f64,
}

#[napi(object)]
pub struct ConntrackFaults {
    pub recv_eintr: Option<u32>,
    pub recv_enobufs: Option<u32>,
    pub dump_intr: Option<u32>,
    pub trunc: Option<u32>,
}

/// The socket, shared with the tasks. `closed` lets `close()` return at once while a task
/// holds the lock: the task drops the socket when it is done.
struct Handle {
    core: Mutex<Option<Core>>,
    closed: AtomicBool,
}

type Shared = Arc<Handle>;

fn closed_error() -> CtError {
    CtError::InvalidArgument("the conntrack handle is closed".into())
}

fn with_core<T>(
    ct: &Shared,
    f: impl FnOnce(&mut Core) -> std::result::Result<T, CtError>,
) -> std::result::Result<T, CtError> {
    let mut guard = ct.core.lock().unwrap_or_else(|p| p.into_inner());
    if ct.closed.load(Ordering::Acquire) {
        *guard = None;
        return Err(closed_error());
    }
    let r = match guard.as_mut() {
        Some(core) => f(core),
        None => Err(closed_error()),
    };
    // Closed while this task ran: release the socket now.
    if ct.closed.load(Ordering::Acquire) {
        *guard = None;
    }
    r
}

#[napi(object, object_from_js = false)]
pub struct ConntrackOpenOutcome {
    pub handle: Option<JsConntrack>,
    pub error: Option<ConntrackTaskError>,
}

pub struct OpenTask {
    netns: Option<String>,
}

impl Task for OpenTask {
    type Output = std::result::Result<Core, CtError>;
    type JsValue = ConntrackOpenOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match self.netns.as_deref() {
            Some(p) => Core::open_in_netns(p),
            None => Core::open(),
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(core) => ConntrackOpenOutcome {
                handle: Some(JsConntrack {
                    inner: Arc::new(Handle {
                        core: Mutex::new(Some(core)),
                        closed: AtomicBool::new(false),
                    }),
                    progress: Arc::new(Progress::default()),
                }),
                error: None,
            },
            Err(e) => ConntrackOpenOutcome {
                handle: None,
                error: Some(task_error(&e)),
            },
        })
    }
}

#[napi(js_name = "Conntrack")]
pub struct JsConntrack {
    inner: Shared,
    progress: Arc<Progress>,
}

impl JsConntrack {
    /// Converts the flows up front (so a bad one fails before any netlink work) and queues one
    /// batched delete or create.
    fn batch(
        &self,
        family_name: String,
        flows: Vec<ConntrackFlow>,
        create: bool,
    ) -> Result<AsyncTask<BatchTask>> {
        let family = family(&family_name)?;
        let flows = flows
            .iter()
            .enumerate()
            .map(|(i, f)| flow_in(i, f))
            .collect::<Result<Vec<_>>>()?;
        Ok(AsyncTask::new(BatchTask {
            ct: self.inner.clone(),
            family,
            flows,
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
        family_name: String,
        filter: Option<ConntrackListFilter>,
    ) -> Result<AsyncTask<ListTask>> {
        let family = family(&family_name)?;
        let mut f = DumpFilter::default();
        if let Some(x) = filter {
            f.proto = x
                .protocol
                .map(|p| convert::index("protocol", p, 255))
                .transpose()?
                .map(|p| p as u8);
            f.orig_dst = x
                .dst_ip
                .as_deref()
                .map(|s| parse_ip("dstIP", s))
                .transpose()?;
            f.orig_dst_port = x.dst_port.map(|p| port("dstPort", p)).transpose()?;
        }
        f.validate(family).map_err(to_js)?;
        Ok(AsyncTask::new(ListTask {
            ct: self.inner.clone(),
            family,
            filter: f,
        }))
    }

    #[napi(ts_return_type = "Promise<ConntrackBatchOutcome>")]
    pub fn delete(
        &self,
        family_name: String,
        flows: Vec<ConntrackFlow>,
    ) -> Result<AsyncTask<BatchTask>> {
        self.batch(family_name, flows, false)
    }

    /// Creates entries (for tests and benchmarks that fill a table).
    #[napi(ts_return_type = "Promise<ConntrackBatchOutcome>")]
    pub fn create(
        &self,
        family_name: String,
        flows: Vec<ConntrackFlow>,
    ) -> Result<AsyncTask<BatchTask>> {
        self.batch(family_name, flows, true)
    }

    /// One whole list → match → delete pass for `family`.
    #[napi(ts_return_type = "Promise<ConntrackCleanOutcome>")]
    pub fn clean_stale(
        &self,
        family_name: String,
        services: Vec<ConntrackService>,
        endpoints: HashMap<String, Vec<ConntrackEndpoint>>,
        dry_run: Option<bool>,
    ) -> Result<AsyncTask<CleanTask>> {
        let family = family(&family_name)?;
        let mut svcs = Vec::with_capacity(services.len());
        for (i, s) in services.iter().enumerate() {
            let what = format!("services[{i}] ({})", s.name);
            let protocol = Protocol::parse(&s.protocol).ok_or_else(|| {
                err(
                    Code::InvalidArg,
                    format!(
                        "{what}: protocol must be TCP, UDP or SCTP, got {:?}",
                        s.protocol
                    ),
                )
            })?;
            let cluster_ip = if is_headless(&s.cluster_ip) {
                None
            } else {
                Some(parse_ip(&format!("{what}.clusterIP"), &s.cluster_ip)?)
            };
            let ips = |name: &str, v: &Option<Vec<String>>| -> Result<Vec<IpAddr>> {
                v.iter()
                    .flatten()
                    .map(|ip| parse_ip(&format!("{what}.{name}"), ip))
                    .collect()
            };
            svcs.push(ServicePort {
                name: s.name.clone(),
                protocol,
                cluster_ip,
                port: port(&format!("{what}.port"), s.port)?,
                node_port: s
                    .node_port
                    .map(|p| port(&format!("{what}.nodePort"), p))
                    .transpose()?
                    .unwrap_or(0),
                external_ips: ips("externalIPs", &s.external_ips)?,
                load_balancer_ips: ips("loadBalancerIPs", &s.load_balancer_ips)?,
            });
        }
        let mut eps = HashMap::with_capacity(endpoints.len());
        for (name, list) in endpoints {
            let mut v = Vec::with_capacity(list.len());
            for (i, e) in list.iter().enumerate() {
                let what = format!("endpoints[{name:?}][{i}]");
                v.push(Endpoint {
                    ip: parse_ip(&format!("{what}.ip"), &e.ip)?,
                    port: port(&format!("{what}.port"), e.port)?,
                    serving: e.serving,
                });
            }
            eps.insert(name, v);
        }
        let matcher = StaleMatcher::build(family, &svcs, &eps).map_err(to_js)?;
        Ok(AsyncTask::new(CleanTask {
            ct: self.inner.clone(),
            progress: self.progress.clone(),
            family,
            matcher,
            dry_run: dry_run.unwrap_or(false),
        }))
    }

    /// Progress of the running clean pass (readable while it runs).
    #[napi]
    pub fn progress(&self) -> ConntrackProgress {
        let p = &self.progress;
        ConntrackProgress {
            phase: match p.phase.load(Ordering::Relaxed) {
                kubenode_conntrack::PHASE_LISTING => "listing",
                kubenode_conntrack::PHASE_DELETING => "deleting",
                _ => "idle",
            }
            .to_string(),
            listed: p.listed.load(Ordering::Relaxed) as f64,
            stale: p.stale.load(Ordering::Relaxed) as f64,
            deleted: p.deleted.load(Ordering::Relaxed) as f64,
        }
    }

    /// Test hook: faults to inject into the next operations. Never waits for a running task
    /// (that would block the JS thread for a whole dump): fails with a conflict instead.
    #[napi]
    pub fn inject_faults(&self, faults: ConntrackFaults) -> Result<()> {
        let mut guard = match self.inner.core.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(err(
                    Code::Conflict,
                    "the conntrack handle is busy with a running operation",
                ))
            }
        };
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(to_js(closed_error()));
        }
        let c = guard.as_mut().ok_or_else(|| to_js(closed_error()))?;
        let f = c.faults_mut();
        f.recv_eintr = faults.recv_eintr.unwrap_or(0);
        f.recv_enobufs = faults.recv_enobufs.unwrap_or(0);
        f.dump_intr = faults.dump_intr.unwrap_or(0);
        f.trunc = faults.trunc.unwrap_or(0);
        Ok(())
    }

    /// Closes the socket; later calls fail. Returns at once: a running task closes the socket
    /// when it finishes.
    #[napi]
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        match self.inner.core.try_lock() {
            Ok(mut g) => *g = None,
            Err(TryLockError::Poisoned(p)) => *p.into_inner() = None,
            Err(TryLockError::WouldBlock) => {}
        }
    }

    /// True once `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }
}

pub struct ListTask {
    ct: Shared,
    family: Family,
    filter: DumpFilter,
}

impl Task for ListTask {
    type Output = std::result::Result<(Vec<Flow>, kubenode_conntrack::DumpStats), CtError>;
    type JsValue = ConntrackListOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let (family, filter) = (self.family, self.filter);
        Ok(with_core(&self.ct, |c| c.list(family, &filter)))
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
                error: Some(task_error(&e)),
            },
        })
    }
}

pub struct BatchTask {
    ct: Shared,
    family: Family,
    flows: Vec<Flow>,
    create: bool,
}

impl Task for BatchTask {
    type Output = std::result::Result<kubenode_conntrack::BatchReport, CtError>;
    type JsValue = ConntrackBatchOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let (family, flows, create) = (self.family, &self.flows, self.create);
        Ok(with_core(&self.ct, |c| {
            if create {
                c.create(family, flows)
            } else {
                c.delete(family, flows)
            }
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
                error: Some(task_error(&e)),
            },
        })
    }
}

pub struct CleanTask {
    ct: Shared,
    progress: Arc<Progress>,
    family: Family,
    matcher: StaleMatcher,
    dry_run: bool,
}

impl Task for CleanTask {
    type Output = std::result::Result<kubenode_conntrack::CleanReport, CtError>;
    type JsValue = ConntrackCleanOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let opts = CleanOptions {
            dry_run: self.dry_run,
        };
        let (family, matcher, progress) = (self.family, &self.matcher, &*self.progress);
        Ok(with_core(&self.ct, |c| {
            clean_stale(c, family, matcher, opts, progress)
        }))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(match output {
            Ok(r) => ConntrackCleanOutcome {
                listed: r.listed as f64,
                stale: r.stale as f64,
                deleted: r.deleted as f64,
                not_found: r.not_found as f64,
                failed: r.failed as f64,
                partial: r.partial,
                attempts: r.attempts,
                seconds: r.seconds,
                first_error: r.first_error,
                error: None,
            },
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
                error: Some(task_error(&e)),
            },
        })
    }
}
