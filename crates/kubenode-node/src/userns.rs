//! Binding for `kubenode-userns`. A `UsernsCore` holds one manager behind a mutex, so
//! concurrent JS promises are serialised in Rust; each call (open/restore, getOrCreate,
//! release, cleanup) is one AsyncTask. Task outcomes carry the error kind and code, since a
//! Task can only reject with a plain status.
//!
//! The synchronous calls made on the JS thread (`allocations`, `isOpen`, `close`) never wait
//! for that mutex, which a task holds for its whole run (a restore with fsyncs can take long):
//! they read a mirror of the allocations behind its own small lock and atomic flags, and
//! `close` applies at once when no task runs, otherwise right after the running one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use kubenode_userns::{
    list_mappings, read_pod_mapping, verify_mapping, Config, Error as CoreError, ErrorKind,
    Manager, Options, UserNamespace, VerifyReport,
};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Task};
use napi_derive::napi;

use crate::convert;
use crate::errors::{err, Code, Result};

#[napi(object)]
pub struct UsernsConfig {
    pub pods_dir: String,
    pub ids_per_pod: u32,
    pub first_id: u32,
    pub length: u32,
    pub max_pods: u32,
    /// Seed of the bitmap's random scan (tests).
    pub seed: Option<f64>,
    /// Take the pods-directory lock (default true).
    pub lock: Option<bool>,
}

#[napi(object)]
pub struct UsernsTaskError {
    /// `ERR_KUBENODE_*`.
    pub code: String,
    /// `config`, `parse`, `conflict`, `exhausted`, `locked`, `invalid-pod-uid`, `io`,
    /// `permission` or `unsupported`.
    pub kind: String,
    pub message: String,
}

#[napi(object)]
pub struct UsernsIdMapping {
    pub host_id: u32,
    pub container_id: u32,
    pub length: u32,
}

#[napi(object)]
pub struct UsernsOutcome {
    pub uids: Vec<UsernsIdMapping>,
    pub gids: Vec<UsernsIdMapping>,
    pub restored: u32,
    pub stale_temp_files_removed: u32,
    pub error: Option<UsernsTaskError>,
}

#[napi(object)]
pub struct UsernsAllocation {
    pub pod: String,
    pub host_id: u32,
    pub length: u32,
}

#[napi(object)]
pub struct UsernsLayout {
    pub ids_per_pod: u32,
    pub off: u32,
    pub slots: u32,
}

#[napi(object)]
pub struct UsernsListedPod {
    pub pod: String,
    pub host_id: Option<u32>,
    pub length: Option<u32>,
    pub error: Option<String>,
}

#[napi(object)]
pub struct UsernsListOutcome {
    pub pods: Vec<UsernsListedPod>,
    pub error: Option<UsernsTaskError>,
}

#[napi(object)]
pub struct UsernsVerifyReport {
    pub pod: Option<String>,
    pub host_id: u32,
    pub length: u32,
    pub pid: u32,
    pub inside_uid: u32,
    pub inside_gid: u32,
    pub outside_uid: u32,
    pub outside_gid: u32,
    pub file_uid: u32,
    pub file_gid: u32,
    pub uid_map: String,
    pub gid_map: String,
    pub ok: bool,
}

#[napi(object)]
pub struct UsernsVerifyOutcome {
    pub report: Option<UsernsVerifyReport>,
    pub error: Option<UsernsTaskError>,
}

fn task_error(e: &CoreError) -> UsernsTaskError {
    let (code, kind) = match e.kind() {
        ErrorKind::Config => (Code::InvalidArg, "config"),
        ErrorKind::Parse => (Code::Parse, "parse"),
        ErrorKind::Conflict => (Code::Conflict, "conflict"),
        ErrorKind::Exhausted => (Code::Conflict, "exhausted"),
        ErrorKind::Locked => (Code::Conflict, "locked"),
        ErrorKind::InvalidPodUid => (Code::InvalidArg, "invalid-pod-uid"),
        ErrorKind::Io => (Code::Io, "io"),
        ErrorKind::Permission => (Code::Permission, "permission"),
        ErrorKind::Unsupported => (Code::Unsupported, "unsupported"),
    };
    UsernsTaskError {
        code: code.as_ref().to_string(),
        kind: kind.to_string(),
        message: e.to_string(),
    }
}

fn mappings(ns: &UserNamespace) -> (Vec<UsernsIdMapping>, Vec<UsernsIdMapping>) {
    let conv = |v: &[kubenode_userns::IdMapping]| {
        v.iter()
            .map(|m| UsernsIdMapping {
                host_id: m.host_id,
                container_id: m.container_id,
                length: m.length,
            })
            .collect()
    };
    (conv(&ns.uid_mappings), conv(&ns.gid_mappings))
}

fn outcome(r: std::result::Result<Option<UserNamespace>, CoreError>) -> UsernsOutcome {
    let mut o = UsernsOutcome {
        uids: Vec::new(),
        gids: Vec::new(),
        restored: 0,
        stale_temp_files_removed: 0,
        error: None,
    };
    match r {
        Ok(Some(ns)) => (o.uids, o.gids) = mappings(&ns),
        Ok(None) => {}
        Err(e) => o.error = Some(task_error(&e)),
    }
    o
}

/// What the JS thread may read without waiting for a running task: pod → first host ID,
/// kept equal to the manager's allocations at the end of every task.
#[derive(Default)]
struct Mirror {
    ids_per_pod: u32,
    pods: BTreeMap<String, u32>,
}

#[derive(Default)]
struct State {
    manager: Mutex<Option<Manager>>,
    mirror: Mutex<Mirror>,
    /// A manager is open (set under the manager lock).
    open: AtomicBool,
    /// `close()` calls so far, and how many of them have dropped the manager.
    close_requested: AtomicU64,
    close_applied: AtomicU64,
}

type Shared = Arc<State>;

/// A poisoned lock only means an earlier task panicked; the state behind it is still
/// consistent (every mutation completes before a call returns), so keep using it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl State {
    /// Takes the manager lock for a task, first applying a `close()` that came meanwhile.
    fn begin(&self) -> MutexGuard<'_, Option<Manager>> {
        let mut g = lock(&self.manager);
        self.apply_close(&mut g);
        g
    }

    /// Releases the manager lock, then applies a `close()` that could not take it.
    fn finish(&self, g: MutexGuard<'_, Option<Manager>>) {
        drop(g);
        self.settle();
    }

    fn apply_close(&self, g: &mut Option<Manager>) {
        let req = self.close_requested.load(Ordering::SeqCst);
        if req != self.close_applied.load(Ordering::SeqCst) {
            *g = None;
            self.open.store(false, Ordering::SeqCst);
            lock(&self.mirror).pods.clear();
            self.close_applied.store(req, Ordering::SeqCst);
        }
    }

    /// Applies a pending close if the manager lock is free; otherwise its holder will, when it
    /// finishes (every holder settles after releasing).
    fn settle(&self) {
        if self.close_requested.load(Ordering::SeqCst) == self.close_applied.load(Ordering::SeqCst)
        {
            return;
        }
        let mut g = match self.manager.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        self.apply_close(&mut g);
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
            && self.close_requested.load(Ordering::SeqCst)
                == self.close_applied.load(Ordering::SeqCst)
    }

    /// Mirrors the manager's entry for `pods` after a call on them.
    fn sync_pods<'a>(&self, m: &Manager, pods: impl Iterator<Item = &'a String>) {
        let mut mirror = lock(&self.mirror);
        for pod in pods {
            match m.allocated(pod) {
                Some(h) => {
                    if mirror.pods.get(pod) != Some(&h) {
                        mirror.pods.insert(pod.clone(), h);
                    }
                }
                None => {
                    mirror.pods.remove(pod);
                }
            }
        }
    }

    /// Rebuilds the mirror from the manager (after open and cleanup).
    fn sync_all(&self, m: &Manager) {
        let mut mirror = lock(&self.mirror);
        mirror.ids_per_pod = m.layout().ids_per_pod;
        mirror.pods = m
            .allocations()
            .into_iter()
            // A pod directory name that is not UTF-8 shows with U+FFFD: JS strings are Unicode.
            .map(|a| (a.pod.to_string_lossy().into_owned(), a.host_id))
            .collect();
    }
}

fn not_open() -> CoreError {
    CoreError::new(ErrorKind::Config, "the user namespace manager is not open")
}

fn config_of(c: &UsernsConfig) -> Result<(PathBuf, Config, Options)> {
    let seed = match c.seed {
        Some(s) => Some(convert::index("seed", s, u64::MAX >> 11)?),
        None => None,
    };
    Ok((
        PathBuf::from(&c.pods_dir),
        Config {
            ids_per_pod: c.ids_per_pod,
            first_id: c.first_id,
            length: c.length,
            max_pods: c.max_pods,
        },
        Options {
            lock: c.lock.unwrap_or(true),
            seed,
        },
    ))
}

pub enum Op {
    Open(PathBuf, Config, Options),
    GetOrCreate(String),
    Release(String),
    /// Releases in order under one lock: the same as one `Release` per pod, in one task.
    ReleaseMany(Vec<String>),
    Cleanup(Vec<String>, Vec<String>),
}

pub struct ManagerTask {
    shared: Shared,
    op: Option<Op>,
    /// `close()` calls made before this task was issued.
    issued_after: u64,
}

impl ManagerTask {
    fn run(&self, g: &mut Option<Manager>, op: Op) -> UsernsOutcome {
        let st = &self.shared;
        match op {
            Op::Open(dir, config, opts) => {
                // Drop a previous manager (and its lock) before taking the lock again.
                *g = None;
                st.open.store(false, Ordering::SeqCst);
                if self.issued_after != st.close_requested.load(Ordering::SeqCst) {
                    // close() was called after this open: it wins.
                    return outcome(Err(not_open()));
                }
                match Manager::open(dir, config, opts) {
                    Ok(m) => {
                        let s = m.restore_stats();
                        st.sync_all(&m);
                        *g = Some(m);
                        st.open.store(true, Ordering::SeqCst);
                        let mut o = outcome(Ok(None));
                        o.restored = s.restored as u32;
                        o.stale_temp_files_removed = s.stale_temp_files_removed as u32;
                        o
                    }
                    Err(e) => outcome(Err(e)),
                }
            }
            Op::GetOrCreate(pod) => match g.as_mut() {
                Some(m) => {
                    let r = m.get_or_create(&pod);
                    st.sync_pods(m, std::iter::once(&pod));
                    outcome(r.map(Some))
                }
                None => outcome(Err(not_open())),
            },
            Op::Release(pod) => match g.as_mut() {
                Some(m) => {
                    m.release(&pod);
                    st.sync_pods(m, std::iter::once(&pod));
                    outcome(Ok(None))
                }
                None => outcome(Err(not_open())),
            },
            Op::ReleaseMany(pods) => match g.as_mut() {
                Some(m) => {
                    for pod in &pods {
                        m.release(pod);
                    }
                    st.sync_pods(m, pods.iter());
                    outcome(Ok(None))
                }
                None => outcome(Err(not_open())),
            },
            Op::Cleanup(pods, running) => match g.as_mut() {
                Some(m) => {
                    let r = m.cleanup_orphans(&pods, &running);
                    st.sync_all(m);
                    outcome(r.map(|()| None))
                }
                None => outcome(Err(not_open())),
            },
        }
    }
}

impl Task for ManagerTask {
    type Output = UsernsOutcome;
    type JsValue = UsernsOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let Some(op) = self.op.take() else {
            return Ok(outcome(Err(not_open())));
        };
        let shared = self.shared.clone();
        let mut g = shared.begin();
        let o = self.run(&mut g, op);
        shared.finish(g);
        Ok(o)
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// `getOrCreate` for several pods in one task (in order, under one lock: the same as one call
/// per pod), so a batch pays the thread-pool round trip once.
pub struct GetOrCreateManyTask {
    shared: Shared,
    pods: Vec<String>,
}

impl Task for GetOrCreateManyTask {
    type Output = Vec<UsernsOutcome>;
    type JsValue = Vec<UsernsOutcome>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let pods = std::mem::take(&mut self.pods);
        let shared = self.shared.clone();
        let mut g = shared.begin();
        let out = match g.as_mut() {
            Some(m) => {
                let out = pods
                    .iter()
                    .map(|p| outcome(m.get_or_create(p).map(Some)))
                    .collect();
                shared.sync_pods(m, pods.iter());
                out
            }
            None => pods.iter().map(|_| outcome(Err(not_open()))).collect(),
        };
        shared.finish(g);
        Ok(out)
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// One user-namespace manager (empty until `open`).
#[napi]
pub struct UsernsCore {
    shared: Shared,
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
            shared: Arc::new(State::default()),
        }
    }

    fn task(&self, op: Op) -> AsyncTask<ManagerTask> {
        AsyncTask::new(ManagerTask {
            shared: self.shared.clone(),
            op: Some(op),
            issued_after: self.shared.close_requested.load(Ordering::SeqCst),
        })
    }

    /// Checks the configuration, takes the lock and restores every pod's file.
    #[napi(ts_return_type = "Promise<UsernsOutcome>")]
    pub fn open(&self, config: UsernsConfig) -> Result<AsyncTask<ManagerTask>> {
        let (dir, c, o) = config_of(&config)?;
        Ok(self.task(Op::Open(dir, c, o)))
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
        AsyncTask::new(GetOrCreateManyTask {
            shared: self.shared.clone(),
            pods: pod_uids,
        })
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
        if !self.shared.is_open() {
            return Vec::new();
        }
        let mirror = lock(&self.shared.mirror);
        mirror
            .pods
            .iter()
            .map(|(pod, &host_id)| UsernsAllocation {
                pod: pod.clone(),
                host_id,
                length: mirror.ids_per_pod,
            })
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
        self.shared.close_requested.fetch_add(1, Ordering::SeqCst);
        self.shared.settle();
    }
}

/// Upstream's configuration checks alone (no files): the slot layout or the error.
#[napi]
pub fn userns_layout(
    ids_per_pod: u32,
    first_id: u32,
    length: u32,
    max_pods: u32,
) -> Result<UsernsLayout> {
    let l = Config {
        ids_per_pod,
        first_id,
        length,
        max_pods,
    }
    .layout()
    .map_err(|e| err(Code::InvalidArg, e))?;
    Ok(UsernsLayout {
        ids_per_pod: l.ids_per_pod,
        off: l.off,
        slots: l.slots,
    })
}

/// Kubelet config validation of `userNamespaces.idsPerPod`.
#[napi]
pub fn userns_validate_ids_per_pod(v: f64) -> Result<u32> {
    let v = convert::integer("idsPerPod", v)?;
    kubenode_userns::config::validate_ids_per_pod(v).map_err(|e| err(Code::InvalidArg, e))
}

/// The exact bytes the kubelet writes for a range.
#[napi]
pub fn userns_encode_file(host_id: u32, length: u32) -> String {
    kubenode_userns::json::encode(&UserNamespace::single(host_id, length))
}

/// Upstream's parse checks on a file's content: `[hostId, length]`, or throws upstream's text.
#[napi]
pub fn userns_parse_file(content: &[u8]) -> Result<Vec<u32>> {
    let (_, h, l) = kubenode_userns::parse_file(content).map_err(|e| err(Code::Parse, e))?;
    Ok(vec![h, l])
}

pub struct ListTask {
    dir: PathBuf,
}

impl Task for ListTask {
    type Output = UsernsListOutcome;
    type JsValue = UsernsListOutcome;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match list_mappings(&self.dir) {
            Ok(pods) => UsernsListOutcome {
                pods: pods
                    .into_iter()
                    .map(|p| match p.mapping {
                        Ok((h, l)) => UsernsListedPod {
                            pod: p.pod.to_string_lossy().into_owned(),
                            host_id: Some(h),
                            length: Some(l),
                            error: None,
                        },
                        Err(e) => UsernsListedPod {
                            pod: p.pod.to_string_lossy().into_owned(),
                            host_id: None,
                            length: None,
                            error: Some(e),
                        },
                    })
                    .collect(),
                error: None,
            },
            Err(e) => UsernsListOutcome {
                pods: Vec::new(),
                error: Some(task_error(&e)),
            },
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// Reads every pod's `userns` file without locking or changing anything.
#[napi(ts_return_type = "Promise<UsernsListOutcome>")]
pub fn userns_list(pods_dir: String) -> AsyncTask<ListTask> {
    AsyncTask::new(ListTask {
        dir: pods_dir.into(),
    })
}

pub enum VerifyTarget {
    Mapping(u32, u32),
    /// `<podsDir>/<podUid>/userns`, read in `compute` rather than on the JS thread.
    Pod(PathBuf, String),
}

pub struct VerifyTask {
    target: Option<VerifyTarget>,
}

fn report(pod: Option<String>, r: VerifyReport) -> UsernsVerifyReport {
    UsernsVerifyReport {
        pod,
        host_id: r.host_id,
        length: r.length,
        pid: r.pid,
        inside_uid: r.inside_uid,
        inside_gid: r.inside_gid,
        outside_uid: r.outside_uid,
        outside_gid: r.outside_gid,
        file_uid: r.file_uid,
        file_gid: r.file_gid,
        uid_map: r.uid_map,
        gid_map: r.gid_map,
        ok: r.ok,
    }
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
        let r = target.and_then(|(pod, h, l)| verify_mapping(h, l).map(|r| report(pod, r)));
        Ok(match r {
            Ok(r) => UsernsVerifyOutcome {
                report: Some(r),
                error: None,
            },
            Err(e) => UsernsVerifyOutcome {
                report: None,
                error: Some(task_error(&e)),
            },
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// Starts a process in a new user namespace with the mapping `0 → hostId` (`length` IDs).
#[napi(ts_return_type = "Promise<UsernsVerifyOutcome>")]
pub fn userns_verify_mapping(host_id: u32, length: u32) -> AsyncTask<VerifyTask> {
    AsyncTask::new(VerifyTask {
        target: Some(VerifyTarget::Mapping(host_id, length)),
    })
}

/// Reads `<podsDir>/<podUid>/userns` (upstream's checks) and verifies its mapping.
#[napi(ts_return_type = "Promise<UsernsVerifyOutcome>")]
pub fn userns_verify_pod(pods_dir: String, pod_uid: String) -> AsyncTask<VerifyTask> {
    AsyncTask::new(VerifyTask {
        target: Some(VerifyTarget::Pod(pods_dir.into(), pod_uid)),
    })
}
