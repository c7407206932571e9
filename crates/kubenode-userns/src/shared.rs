//! One `Manager` shared by concurrent callers. Tasks (open, get-or-create, release, cleanup)
//! run one at a time behind a mutex, as upstream holds one manager lock. Reads of the
//! allocations and of the open state never wait for that mutex, which a task holds for its
//! whole run (a restore with fsyncs can take long): they see a mirror kept equal to the
//! manager's allocations at the end of every task. `close()` applies at once when no task runs,
//! otherwise right after the running one; tasks that start after it see a closed manager.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::json::UserNamespace;
use crate::manager::{Allocation, Manager, Options, RestoreStats};

/// The error of every task that finds no open manager.
pub fn not_open() -> Error {
    Error::new(ErrorKind::Config, "the user namespace manager is not open")
}

/// How many `close()` calls preceded an `open` request: a close made after the request wins
/// over it, even when the open runs later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenTicket(u64);

/// What the readers see without the manager lock: pod → first host ID. Keys are directory
/// names as the manager holds them, so the sorted mirror equals `Manager::allocations`.
#[derive(Debug, Default)]
struct Mirror {
    ids_per_pod: u32,
    pods: BTreeMap<OsString, u32>,
}

/// Which mirror entries a task may have changed.
enum Touched<'a> {
    Pod(&'a str),
    Pods(&'a [String]),
    Calls(&'a [PodCall]),
    All,
}

/// One per-pod call, as callers make them one at a time; a batch of them runs as one task.
/// In JavaScript: `{ type: "getOrCreate" | "release", podUid }`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(discriminant_case = "camelCase", js_name = "UsernsPodCall"))]
pub enum PodCall {
    GetOrCreate(#[cfg_attr(feature = "napi", napi(js_name = "podUid"))] String),
    Release(#[cfg_attr(feature = "napi", napi(js_name = "podUid"))] String),
}

impl PodCall {
    pub fn pod(&self) -> &str {
        match self {
            Self::GetOrCreate(p) | Self::Release(p) => p,
        }
    }
}

/// A call's own result: the mappings of a `GetOrCreate`, nothing for a `Release`.
pub type CallResult = Result<Option<UserNamespace>>;

#[derive(Debug, Default)]
pub struct SharedManager {
    manager: Mutex<Option<Manager>>,
    mirror: Mutex<Mirror>,
    /// A manager is open (set under the manager lock).
    open: AtomicBool,
    /// `close()` calls so far, and how many of them have dropped the manager.
    close_requested: AtomicU64,
    close_applied: AtomicU64,
}

/// A poisoned lock only means an earlier task panicked; the state behind it is still
/// consistent (every mutation completes before a call returns), so keep using it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SharedManager {
    pub fn new() -> Self {
        Self::default()
    }

    /// Taken when an `open` is requested (on the caller's thread), passed to `open` when it runs.
    pub fn open_ticket(&self) -> OpenTicket {
        OpenTicket(self.close_requested.load(Ordering::SeqCst))
    }

    /// Drops a previous manager (and its lock), then `Manager::open`, unless `close()` was
    /// called after `ticket` was taken.
    pub fn open(
        &self,
        ticket: OpenTicket,
        pods_dir: PathBuf,
        config: Config,
        opts: Options,
    ) -> Result<RestoreStats> {
        let mut g = self.begin();
        let r = self.reopen(&mut g, ticket, pods_dir, config, opts);
        self.finish(g);
        r
    }

    fn reopen(
        &self,
        g: &mut Option<Manager>,
        ticket: OpenTicket,
        pods_dir: PathBuf,
        config: Config,
        opts: Options,
    ) -> Result<RestoreStats> {
        // Drop a previous manager (and its lock) before taking the lock again.
        *g = None;
        self.open.store(false, Ordering::SeqCst);
        lock(&self.mirror).pods.clear();
        if ticket != self.open_ticket() {
            return Err(not_open());
        }
        let m = Manager::open(pods_dir, config, opts)?;
        let stats = m.restore_stats();
        self.sync(&m, Touched::All);
        *g = Some(m);
        self.open.store(true, Ordering::SeqCst);
        Ok(stats)
    }

    pub fn get_or_create(&self, pod: &str) -> Result<UserNamespace> {
        self.with_open(Touched::Pod(pod), |m| m.get_or_create(pod))?
    }

    /// `get_or_create` for each pod in order under one lock: the same as one call per pod.
    pub fn get_or_create_many(&self, pods: &[String]) -> Vec<Result<UserNamespace>> {
        self.with_open(Touched::Pods(pods), |m| {
            pods.iter().map(|p| m.get_or_create(p)).collect()
        })
        .unwrap_or_else(|e| pods.iter().map(|_| Err(e.clone())).collect())
    }

    pub fn release(&self, pod: &str) -> Result<()> {
        self.with_open(Touched::Pod(pod), |m| m.release(pod))
    }

    /// Releases in order under one lock: the same as one `release` per pod.
    pub fn release_many(&self, pods: &[String]) -> Result<()> {
        self.with_open(Touched::Pods(pods), |m| {
            for pod in pods {
                m.release(pod);
            }
        })
    }

    /// Runs the calls in order under one lock, each with its own result: the same as one call
    /// after the other (a release after a get-or-create of the same pod releases it), and a
    /// failing call leaves the others as they would be without it. Each get-or-create has its
    /// file durably written (fsyncs included) before this returns.
    pub fn run_calls(&self, calls: &[PodCall]) -> Vec<CallResult> {
        self.with_open(Touched::Calls(calls), |m| {
            calls
                .iter()
                .map(|c| match c {
                    PodCall::GetOrCreate(p) => m.get_or_create(p).map(Some),
                    PodCall::Release(p) => {
                        m.release(p);
                        Ok(None)
                    }
                })
                .collect()
        })
        .unwrap_or_else(|e| calls.iter().map(|_| Err(e.clone())).collect())
    }

    pub fn cleanup(&self, pods: &[String], running: &[String]) -> Result<()> {
        self.with_open(Touched::All, |m| m.cleanup_orphans(pods, running))?
    }

    /// Every allocation, sorted by pod, as of the last finished task: never waits for a
    /// running one.
    pub fn allocations(&self) -> Vec<Allocation> {
        if !self.is_open() {
            return Vec::new();
        }
        let mirror = lock(&self.mirror);
        mirror
            .pods
            .iter()
            .map(|(pod, &host_id)| Allocation {
                pod: pod.clone(),
                host_id,
                length: mirror.ids_per_pod,
            })
            .collect()
    }

    /// Open, and no `close()` pending.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
            && self.close_requested.load(Ordering::SeqCst)
                == self.close_applied.load(Ordering::SeqCst)
    }

    /// Drops the manager and its lock: at once when no task is running, otherwise as soon as
    /// the running one finishes. Tasks that have not started yet see a closed manager.
    pub fn close(&self) {
        self.close_requested.fetch_add(1, Ordering::SeqCst);
        self.settle();
    }

    /// Every task on an open manager goes through here: one lock, a pending close applied
    /// first, the mirror synced for what the task touched. A batch of mixed calls is one more
    /// caller, with `Touched::Pods` of its pods.
    fn with_open<R>(&self, touched: Touched<'_>, run: impl FnOnce(&mut Manager) -> R) -> Result<R> {
        let mut g = self.begin();
        let r = match g.as_mut() {
            Some(m) => {
                let r = run(m);
                self.sync(m, touched);
                Ok(r)
            }
            None => Err(not_open()),
        };
        self.finish(g);
        r
    }

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

    fn sync(&self, m: &Manager, touched: Touched<'_>) {
        match touched {
            Touched::Pod(p) => self.sync_pods(m, std::iter::once(p)),
            Touched::Pods(ps) => self.sync_pods(m, ps.iter().map(String::as_str)),
            Touched::Calls(cs) => self.sync_pods(m, cs.iter().map(PodCall::pod)),
            Touched::All => self.sync_all(m),
        }
    }

    fn sync_pods<'a>(&self, m: &Manager, pods: impl Iterator<Item = &'a str>) {
        let mut mirror = lock(&self.mirror);
        for pod in pods {
            let pod = OsStr::new(pod);
            match m.allocated(pod) {
                Some(h) => {
                    if mirror.pods.get(pod) != Some(&h) {
                        mirror.pods.insert(pod.to_owned(), h);
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
            .map(|a| (a.pod, a.host_id))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    use super::*;

    const L: u32 = 65536;
    const WAIT: Duration = Duration::from_secs(20);

    fn config() -> Config {
        Config {
            ids_per_pod: L,
            first_id: L,
            length: L * 2000,
            max_pods: 110,
        }
    }

    fn options() -> Options {
        Options {
            lock: true,
            seed: Some(7),
        }
    }

    fn open(dir: &Path) -> Arc<SharedManager> {
        let s = Arc::new(SharedManager::new());
        let ticket = s.open_ticket();
        s.open(ticket, dir.to_path_buf(), config(), options())
            .expect("open");
        s
    }

    /// A manager opened on a new directory, with `created` allocated in order.
    fn opened_with(created: &[&str]) -> (tempfile::TempDir, Arc<SharedManager>) {
        let t = tempfile::tempdir().unwrap();
        let s = open(t.path());
        for pod in created {
            s.get_or_create(pod).unwrap();
        }
        (t, s)
    }

    /// The manager's own allocations, taken under its lock.
    fn held(s: &SharedManager) -> Vec<Allocation> {
        lock(&s.manager)
            .as_ref()
            .map(Manager::allocations)
            .unwrap_or_default()
    }

    fn pods(v: &[Allocation]) -> Vec<&str> {
        v.iter().map(|a| a.pod.to_str().unwrap()).collect()
    }

    /// Runs a task on another thread that creates `pod`, then blocks until `go` is sent.
    /// Returns once the task holds the manager lock.
    fn blocked_task(
        s: &Arc<SharedManager>,
        pod: &'static str,
    ) -> (
        mpsc::Sender<()>,
        thread::JoinHandle<Result<Result<UserNamespace>>>,
    ) {
        let (started_tx, started) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let s = s.clone();
        let h = thread::spawn(move || {
            s.with_open(Touched::Pod(pod), |m| {
                let r = m.get_or_create(pod);
                started_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                r
            })
        });
        started.recv_timeout(WAIT).expect("task started");
        (go, h)
    }

    #[test]
    fn close_while_a_task_runs_applies_after_it() {
        let (t, s) = opened_with(&[]);
        let (go, task) = blocked_task(&s, "a");

        s.close();
        // Closed for readers at once (the reads are checked without the manager lock in
        // `reads_never_wait_for_a_task`), but the running task keeps its manager and its lock.
        assert!(!s.is_open());
        assert!(matches!(
            s.manager.try_lock(),
            Err(TryLockError::WouldBlock)
        ));
        let second = Arc::new(SharedManager::new());
        let err = second
            .open(second.open_ticket(), t.path().into(), config(), options())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Locked);

        // A task that starts after the close sees a closed manager, even while queued.
        let late = {
            let s = s.clone();
            thread::spawn(move || s.get_or_create("late"))
        };

        go.send(()).unwrap();
        let ns = task.join().unwrap().expect("open when it started").unwrap();
        assert_eq!(ns.uid_mappings.len(), 1);
        assert!(t.path().join("a").join("userns").is_file());
        assert_eq!(late.join().unwrap().unwrap_err(), not_open());

        // Applied: the manager and its directory lock are gone.
        assert!(lock(&s.manager).is_none());
        assert_eq!(s.close_requested.load(Ordering::SeqCst), 1);
        assert_eq!(s.close_applied.load(Ordering::SeqCst), 1);
        assert_eq!(s.get_or_create("b").unwrap_err(), not_open());
        let reopened = open(t.path());
        assert_eq!(pods(&reopened.allocations()), ["a"]);
    }

    #[test]
    fn reads_never_wait_for_a_task() {
        let (_t, s) = opened_with(&["x"]);
        let (go, task) = blocked_task(&s, "a");

        // The reads run on a third thread: if one waited for the task, it would not answer
        // before the timeout (the task only goes on once they have answered).
        let (tx, rx) = mpsc::channel();
        let reader = {
            let s = s.clone();
            thread::spawn(move || {
                let seen = (s.is_open(), s.allocations());
                s.close();
                tx.send((seen, (s.is_open(), s.allocations()))).unwrap();
            })
        };
        let answer = rx.recv_timeout(WAIT);
        go.send(()).unwrap();
        let ((was_open, during), after_close) = answer.expect("reads answered during a task");
        reader.join().unwrap();
        task.join().unwrap().unwrap().unwrap();

        assert!(was_open);
        // As of the last finished task: "a" is not there until its task ends.
        assert_eq!(pods(&during), ["x"]);
        assert_eq!(after_close, (false, Vec::new()));
    }

    #[test]
    fn the_mirror_equals_the_managers_allocations_after_each_call() {
        let (t, first) = opened_with(&["restored-1", "restored-2"]);
        first.close();

        let s = open(t.path());
        let check = |what: &str| {
            assert_eq!(s.allocations(), held(&s), "after {what}");
        };
        check("open (restore)");
        assert_eq!(s.allocations().len(), 2);

        // A fixed pseudo-random mix of calls over a small set of pods, bad UIDs included.
        let names = ["p0", "p1", "p2", "p3", "p4", "p5", "../p6", ""];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        for round in 0..120 {
            let pod = names[next(names.len())];
            let some: Vec<String> = (0..next(4))
                .map(|_| names[next(names.len())].to_string())
                .collect();
            match next(7) {
                0 | 1 => drop(s.get_or_create(pod)),
                2 => drop(s.get_or_create_many(&some)),
                3 => s.release(pod).unwrap(),
                4 => s.release_many(&some).unwrap(),
                5 => {
                    let calls: Vec<PodCall> = some
                        .iter()
                        .map(|p| match next(2) {
                            0 => PodCall::GetOrCreate(p.clone()),
                            _ => PodCall::Release(p.clone()),
                        })
                        .collect();
                    drop(s.run_calls(&calls));
                }
                _ => {
                    // A pod directory removed behind the manager's back, then a cleanup that
                    // keeps `some` and releases the rest.
                    let _ = std::fs::remove_dir_all(t.path().join(names[next(6)]));
                    s.cleanup(&some, &[]).unwrap();
                }
            }
            check(&format!("call {round}"));
        }
        s.close();
        assert!(s.allocations().is_empty());
    }

    #[test]
    fn an_open_requested_before_a_close_loses_to_it() {
        let t = tempfile::tempdir().unwrap();
        let s = SharedManager::new();
        let ticket = s.open_ticket();
        s.close();
        let err = s
            .open(ticket, t.path().into(), config(), options())
            .unwrap_err();
        assert_eq!(err, not_open());
        assert!(!s.is_open());

        s.open(s.open_ticket(), t.path().into(), config(), options())
            .unwrap();
        assert!(s.is_open());
        s.get_or_create("a").unwrap();
        assert_eq!(pods(&s.allocations()), ["a"]);
    }

    #[test]
    fn a_poisoned_lock_is_used_not_propagated() {
        let (t, s) = opened_with(&["a"]);

        // A task that panics holding the manager lock, and a reader that panics holding the
        // mirror lock.
        let s2 = s.clone();
        let panicked =
            thread::spawn(move || s2.with_open::<()>(Touched::All, |_| panic!("task panicked")))
                .join();
        assert!(panicked.is_err());
        assert!(s.manager.is_poisoned());
        let s2 = s.clone();
        assert!(thread::spawn(move || {
            let _g = s2.mirror.lock();
            panic!("reader panicked");
        })
        .join()
        .is_err());
        assert!(s.mirror.is_poisoned());

        assert!(s.is_open());
        s.get_or_create("b").unwrap();
        assert_eq!(pods(&s.allocations()), ["a", "b"]);
        assert_eq!(s.allocations(), held(&s));

        // close() applies through the poisoned lock: the directory lock is released.
        s.close();
        assert!(lock(&s.manager).is_none());
        assert_eq!(pods(&open(t.path()).allocations()), ["a", "b"]);
    }
}
