//! Per-pod calls made one at a time by many callers, run as batches by one dedicated thread:
//! calls that arrive while a batch runs join the next one, so concurrent callers share one
//! manager lock and one hand-off instead of paying a thread hand-off each. Every call keeps
//! its own result and its place in arrival order (`SharedManager::run_calls`).
//!
//! Between batches the thread waits on a condition variable, and ends after an idle period, so
//! an idle queue holds no thread. It does not spin for the next call: measured on the 2-core
//! bench machine under load, 20, 50 and 200 µs of polling after each batch made a lone caller's
//! cycle 3–19 % slower (the poll takes the CPU the JS thread needs to make the next call), so
//! the cheapest hand-off is a plain wake-up.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use crate::error::{Error, ErrorKind};
use crate::shared::{CallResult, PodCall, SharedManager};

/// How long a parked thread waits for calls before it ends.
pub const IDLE_EXIT: Duration = Duration::from_secs(2);

/// Receives each batch's results, in the order the calls were queued.
pub type Deliver = dyn Fn(Vec<CallResult>) + Send + Sync;

#[derive(Default)]
struct State {
    calls: Vec<PodCall>,
    /// A thread runs (or will run) the queue.
    running: bool,
    /// That thread waits on the condition variable.
    parked: bool,
}

struct Inner {
    shared: Arc<SharedManager>,
    deliver: Box<Deliver>,
    state: Mutex<State>,
    wake: Condvar,
    idle_exit: Duration,
}

/// A queue of per-pod calls on one `SharedManager`.
pub struct CallQueue {
    inner: Arc<Inner>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // The state is a plain list and two flags, consistent after every statement.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CallQueue {
    pub fn new(shared: Arc<SharedManager>, deliver: Box<Deliver>) -> Self {
        Self::with_idle_exit(shared, deliver, IDLE_EXIT)
    }

    pub fn with_idle_exit(
        shared: Arc<SharedManager>,
        deliver: Box<Deliver>,
        idle_exit: Duration,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                shared,
                deliver,
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                idle_exit,
            }),
        }
    }

    /// Queues `calls` after every call queued before; their results come through `deliver`.
    /// Fails (queueing nothing) only when no thread can be started.
    pub fn submit(&self, calls: Vec<PodCall>) -> std::io::Result<()> {
        if calls.is_empty() {
            return Ok(());
        }
        let mut st = lock(&self.inner.state);
        if !st.running {
            let inner = self.inner.clone();
            thread::Builder::new()
                .name("kubenode-userns".into())
                .spawn(move || inner.run())?;
            st.running = true;
        }
        st.calls.extend(calls);
        if st.parked {
            self.inner.wake.notify_one();
        }
        Ok(())
    }

    /// A thread runs the queue (tests: the thread ends after its idle period).
    pub fn has_thread(&self) -> bool {
        lock(&self.inner.state).running
    }
}

impl Inner {
    fn run(&self) {
        while let Some(batch) = self.next_batch() {
            let n = batch.len();
            let results = catch_unwind(AssertUnwindSafe(|| self.shared.run_calls(&batch)))
                .unwrap_or_else(|_| {
                    let e = Error::new(ErrorKind::Io, "user namespace call failed unexpectedly");
                    vec![Err(e); n]
                });
            (self.deliver)(results);
        }
    }

    /// The calls queued so far, once there are any; `None` when the thread should end.
    fn next_batch(&self) -> Option<Vec<PodCall>> {
        let mut st = lock(&self.state);
        loop {
            if !st.calls.is_empty() {
                return Some(std::mem::take(&mut st.calls));
            }
            st.parked = true;
            let (g, timeout) = self
                .wake
                .wait_timeout(st, self.idle_exit)
                .unwrap_or_else(|p| p.into_inner());
            st = g;
            st.parked = false;
            if timeout.timed_out() && st.calls.is_empty() {
                st.running = false;
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;
    use crate::config::Config;
    use crate::manager::Options;
    use crate::shared::not_open;

    const L: u32 = 65536;
    const WAIT: Duration = Duration::from_secs(20);

    fn open(dir: &Path, max_pods: u32) -> Arc<SharedManager> {
        let s = Arc::new(SharedManager::new());
        let config = Config {
            ids_per_pod: L,
            first_id: L,
            length: L * max_pods,
            max_pods,
        };
        let opts = Options {
            lock: true,
            seed: Some(7),
        };
        s.open(s.open_ticket(), dir.to_path_buf(), config, opts)
            .expect("open");
        s
    }

    fn queue(
        s: &Arc<SharedManager>,
        idle_exit: Duration,
    ) -> (CallQueue, mpsc::Receiver<Vec<CallResult>>) {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let deliver = Box::new(move |r: Vec<CallResult>| {
            let _ = tx.lock().unwrap().send(r);
        });
        let q = CallQueue::with_idle_exit(s.clone(), deliver, idle_exit);
        (q, rx)
    }

    fn get(p: &str) -> PodCall {
        PodCall::GetOrCreate(p.into())
    }

    fn rel(p: &str) -> PodCall {
        PodCall::Release(p.into())
    }

    /// Collects `n` results, whatever the batches they came in.
    fn collect(rx: &mpsc::Receiver<Vec<CallResult>>, n: usize) -> (Vec<CallResult>, usize) {
        let mut out = Vec::new();
        let mut batches = 0;
        while out.len() < n {
            out.extend(rx.recv_timeout(WAIT).expect("results delivered"));
            batches += 1;
        }
        (out, batches)
    }

    fn host(r: &CallResult) -> u32 {
        r.as_ref().unwrap().as_ref().unwrap().uid_mappings[0].host_id
    }

    #[test]
    fn calls_run_in_order_each_with_its_own_result() {
        let t = tempfile::tempdir().unwrap();
        let s = open(t.path(), 8);
        let (q, rx) = queue(&s, IDLE_EXIT);
        q.submit(vec![
            get("a"),
            get("../bad"),
            get("b"),
            rel("a"),
            get("a"),
            get("b"),
        ])
        .unwrap();
        let (r, _) = collect(&rx, 6);
        assert_eq!(r.len(), 6);
        // The bad UID fails alone; its neighbours succeed.
        assert_eq!(r[1].as_ref().unwrap_err().kind(), ErrorKind::InvalidPodUid);
        // The release after the create ran after it: "a" was freed and allocated again, with
        // a new file; "b" asked twice got the same range.
        assert!(matches!(r[3], Ok(None)));
        assert_eq!(host(&r[2]), host(&r[5]));
        let ids: Vec<_> = s.allocations().iter().map(|a| a.host_id).collect();
        assert_eq!(ids, [host(&r[4]), host(&r[5])]);
        assert!(t.path().join("a/userns").is_file());
    }

    #[test]
    fn calls_queued_while_a_batch_runs_join_the_next_batch() {
        let t = tempfile::tempdir().unwrap();
        let s = open(t.path(), 110);
        let (q, rx) = queue(&s, IDLE_EXIT);
        let q = Arc::new(q);
        // 110 callers on their own threads, each submitting one call.
        let callers: Vec<_> = (0..110)
            .map(|i| {
                let q = q.clone();
                thread::spawn(move || q.submit(vec![get(&format!("pod-{i}"))]).unwrap())
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        let (r, batches) = collect(&rx, 110);
        assert!(r.iter().all(|r| r.as_ref().is_ok_and(|ns| ns.is_some())));
        let mut ids: Vec<_> = r.iter().map(host).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 110, "disjoint ranges");
        assert_eq!(s.allocations().len(), 110);
        assert!(batches <= 110);
        for i in 0..110 {
            assert!(t.path().join(format!("pod-{i}/userns")).is_file());
        }
    }

    #[test]
    fn a_closed_manager_fails_every_call_of_the_batch() {
        let t = tempfile::tempdir().unwrap();
        let s = open(t.path(), 8);
        let (q, rx) = queue(&s, IDLE_EXIT);
        s.close();
        q.submit(vec![get("a"), rel("a")]).unwrap();
        let (r, _) = collect(&rx, 2);
        assert_eq!(r, vec![Err(not_open()), Err(not_open())]);
    }

    #[test]
    fn an_idle_queue_ends_its_thread_and_starts_another_when_needed() {
        let t = tempfile::tempdir().unwrap();
        let s = open(t.path(), 8);
        let (q, rx) = queue(&s, Duration::from_millis(20));
        assert!(!q.has_thread());
        q.submit(vec![get("a")]).unwrap();
        assert!(q.has_thread());
        collect(&rx, 1);
        let t0 = Instant::now();
        while q.has_thread() {
            assert!(t0.elapsed() < WAIT, "thread still there");
            thread::sleep(Duration::from_millis(5));
        }
        q.submit(vec![rel("a"), get("b")]).unwrap();
        let (r, _) = collect(&rx, 2);
        assert!(matches!(r[0], Ok(None)));
        assert!(r[1].is_ok());
        assert_eq!(s.allocations().len(), 1);
    }
}
