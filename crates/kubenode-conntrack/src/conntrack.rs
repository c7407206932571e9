//! The ctnetlink client: one persistent socket, one reusable receive buffer, dumps with
//! kernel-side filtering and upstream's retry rules, batched deletes/creates, the table's entry
//! count and the filtered-delete probe. It keeps no cleanup state: `StaleFlowCleaner` does.

use std::io;

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::attr::{parse_ack, MsgBuf, Msgs};
use crate::consts::*;
use crate::error::{from_dump_errno, from_errno, from_io, Error, Result};
#[cfg(feature = "test-hooks")]
use crate::fault::Faults;
use crate::filter::{encode_filtered_dump, FlowFilter};
use crate::flow::{encode_delete, encode_new, parse_entry_payload, Family, Flow};
use crate::netns_open::open_in;
use crate::probe::{encode_flush_probe, flush_support_from_errno, FlushSupport};
use crate::socket::{recv_failure, NlSocket, RECV_BUF};
use crate::stats::{
    max_from_proc, parse_cpu_stats, parse_global_stats, CpuStats, StatsTotal, TableStats,
};

/// Dump attempts before continuing with a partial result, as upstream's `MaxAttemptsEINTR`.
pub const MAX_DUMP_ATTEMPTS: u32 = 5;
/// Rounds of re-sending a batch whose acks were dropped (ENOBUFS).
const MAX_BATCH_ROUNDS: u32 = 4;
const PENDING: i32 = i32::MIN;

/// What a dump callback sees: the start of each attempt (discard earlier results), then flows.
pub enum DumpEvent<'a> {
    Attempt(u32),
    Flow(&'a Flow),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpStats {
    pub attempts: u32,
    /// Still interrupted after the last attempt: the result may be incomplete.
    pub partial: bool,
    /// Entries received in the final attempt, and those passing the filter.
    pub received: u64,
    pub matched: u64,
    /// Totals over all attempts.
    pub bytes: u64,
    pub recvs: u64,
}

/// Outcome of a batch of per-entry requests (deletes or creates). A failure of one entry never
/// stops the others. Counts are u32 and saturate: each is bounded by the request's own length,
/// and a batch names table entries, at most `nf_conntrack_max` (a u32 in the kernel).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(
    feature = "napi",
    napi(object, object_from_js = false, js_name = "ConntrackBatchReport")
)]
pub struct BatchReport {
    pub requested: u32,
    /// Accepted by the kernel.
    pub ok: u32,
    /// ENOENT: already gone (for deletes, upstream counts these as deleted).
    pub not_found: u32,
    /// Any other error.
    pub failed: u32,
    /// Requests re-sent because their acks were dropped (ENOBUFS).
    pub resent: u32,
    pub sendmsgs: u32,
    pub first_error: Option<String>,
}

impl BatchReport {
    /// kube-proxy's count: deleted plus already gone.
    pub fn deleted(&self) -> u32 {
        self.ok.saturating_add(self.not_found)
    }
}

pub struct Conntrack {
    pub(crate) sock: NlSocket,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) out: MsgBuf,
    seq: u32,
    flush_support: FlushSupport,
}

/// `n` as a count of table entries: at most `nf_conntrack_max` (a u32 in the kernel), so it
/// saturates rather than wraps should more ever be handed over.
pub(crate) fn entry_count(n: impl TryInto<u32>) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

struct Attempt {
    interrupted: bool,
    received: u64,
    matched: u64,
    bytes: u64,
    recvs: u64,
}

impl Conntrack {
    /// Opens a handle in the calling thread's network namespace.
    pub fn open() -> Result<Self> {
        Ok(Self::with_socket(NlSocket::open()?))
    }

    /// Opens a handle in the network namespace at `path` (e.g. `/var/run/netns/NAME`). The
    /// socket is created on a short-lived thread that joined the namespace; a netlink socket
    /// stays bound to the namespace it was created in, so the handle works from any thread.
    pub fn open_in_netns(path: &str) -> Result<Self> {
        Ok(Self::with_socket(open_in(path, NlSocket::open)?))
    }

    fn with_socket(sock: NlSocket) -> Self {
        let mut ct = Self {
            sock,
            rbuf: vec![0u8; RECV_BUF],
            out: MsgBuf::with_capacity(256 * 1024),
            seq: 0,
            flush_support: FlushSupport::Unknown,
        };
        ct.probe_at_open();
        ct
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1).max(1);
        self.seq
    }

    /// Test hook: the faults to inject into the next operations.
    #[cfg(feature = "test-hooks")]
    pub fn faults_mut(&mut self) -> &mut Faults {
        &mut self.sock.faults
    }

    /// Streams the table of `family` through `ev`, filtered by `filter` (in the kernel where
    /// supported, and always again here). An interrupted dump is retried up to
    /// [`MAX_DUMP_ATTEMPTS`] times; after that the last partial result stands and
    /// `DumpStats::partial` says so. No per-entry heap allocation happens here.
    pub fn dump<F>(
        &mut self,
        family: Family,
        filter: impl Into<FlowFilter>,
        mut ev: F,
    ) -> Result<DumpStats>
    where
        F: FnMut(DumpEvent<'_>),
    {
        let filter = &filter.into();
        filter.validate(family)?;
        let mut stats = DumpStats::default();
        for attempt in 1..=MAX_DUMP_ATTEMPTS {
            ev(DumpEvent::Attempt(attempt));
            let a = self.dump_once(family, filter, &mut ev)?;
            let interrupted = a.interrupted || self.sock.faults.take_dump_intr();
            stats.attempts = attempt;
            stats.received = a.received;
            stats.matched = a.matched;
            stats.bytes += a.bytes;
            stats.recvs += a.recvs;
            stats.partial = interrupted;
            if !interrupted {
                break;
            }
        }
        Ok(stats)
    }

    /// Lists the entries of `family` that pass `filter`.
    pub fn list(
        &mut self,
        family: Family,
        filter: impl Into<FlowFilter>,
    ) -> Result<(Vec<Flow>, DumpStats)> {
        let mut flows = Vec::new();
        let stats = self.dump(family, filter, |ev| match ev {
            DumpEvent::Attempt(_) => flows.clear(),
            DumpEvent::Flow(f) => flows.push(*f),
        })?;
        Ok((flows, stats))
    }

    fn dump_once<F>(&mut self, family: Family, filter: &FlowFilter, ev: &mut F) -> Result<Attempt>
    where
        F: FnMut(DumpEvent<'_>),
    {
        const OP: &str = "dump conntrack table";
        let seq = self.next_seq();
        self.out.clear();
        encode_filtered_dump(&mut self.out, family, filter, seq);
        self.sock.send(&self.out.buf)?;
        let mut a = Attempt {
            interrupted: false,
            received: 0,
            matched: 0,
            bytes: 0,
            recvs: 0,
        };
        // The first error is kept while the dump is read to its end, so the socket is clean
        // for the next request.
        let mut failure: Option<Error> = None;
        let af = family.af();
        let entry_ty = ct_type(IPCTNL_MSG_CT_NEW);
        loop {
            let n = match self.sock.recv(&mut self.rbuf, false) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    failure.get_or_insert(Error::Truncated(RECV_BUF));
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    // Replies were dropped: the result is incomplete, like an interrupted dump.
                    a.interrupted = true;
                    continue;
                }
                Err(e) => return Err(failure.unwrap_or(from_io(OP, e))),
            };
            a.recvs += 1;
            a.bytes += n as u64;
            let data = self.rbuf.get(..n).unwrap_or(&[]);
            let mut done = false;
            for m in Msgs::new(data) {
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        failure.get_or_insert(e);
                        break;
                    }
                };
                if m.seq != seq {
                    continue; // a reply to an earlier request
                }
                if m.flags & NLM_F_DUMP_INTR != 0 {
                    a.interrupted = true;
                }
                match m.ty {
                    NLMSG_DONE => {
                        // i32::MIN has no positive counterpart: an invalid errno.
                        let errno = match crate::attr::ne32(m.payload) {
                            Ok(v) => v.checked_neg().unwrap_or(libc::EINVAL),
                            Err(_) => 0,
                        };
                        if errno == libc::EINTR {
                            a.interrupted = true;
                        } else if errno != 0 {
                            failure.get_or_insert(from_errno(OP, errno, String::new()));
                        }
                        done = true;
                        break;
                    }
                    NLMSG_ERROR => {
                        match parse_ack(&m) {
                            Ok(ack) if ack.errno == libc::EINTR => a.interrupted = true,
                            Ok(ack) if ack.errno != 0 => {
                                let msg = ack.msg.map(|b| String::from_utf8_lossy(b).into_owned());
                                failure.get_or_insert(from_dump_errno(
                                    OP,
                                    ack.errno,
                                    msg.unwrap_or_default(),
                                ));
                            }
                            Ok(_) => {}
                            Err(e) => {
                                failure.get_or_insert(e);
                            }
                        }
                        done = true;
                        break;
                    }
                    t if t == entry_ty => {
                        if failure.is_some() {
                            continue;
                        }
                        a.received += 1;
                        if m.payload.first() != Some(&af) {
                            continue; // another family: re-filtered like any other field
                        }
                        match parse_entry_payload(m.payload) {
                            Ok(f) if filter.matches(&f) => {
                                a.matched += 1;
                                ev(DumpEvent::Flow(&f));
                            }
                            Ok(_) => {}
                            Err(e) => {
                                failure.get_or_insert(e);
                            }
                        }
                    }
                    _ => {}
                }
            }
            if done {
                break;
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(a),
        }
    }

    /// Deletes `flows` by exact original tuple and zone, each guarded by its `CTA_ID` when
    /// known, many per `sendmsg`. ENOENT is reported as `not_found`.
    pub fn delete(&mut self, family: Family, flows: &[Flow]) -> Result<BatchReport> {
        self.run_batch(flows.len(), libc::ENOENT, |b, i, seq| match flows.get(i) {
            Some(f) => encode_delete(b, family, f, seq, 0),
            None => Err(Error::InvalidArgument("index out of range".into())),
        })
    }

    /// Creates entries (tests and benchmarks fill tables with this), many per `sendmsg`.
    pub fn create(&mut self, family: Family, flows: &[Flow]) -> Result<BatchReport> {
        self.run_batch(flows.len(), libc::EEXIST, |b, i, seq| match flows.get(i) {
            Some(f) => encode_new(b, family, f, seq, 0),
            None => Err(Error::InvalidArgument("index out of range".into())),
        })
    }

    /// Entries in the table of this handle's network namespace, all families.
    pub fn table_count(&mut self) -> Result<u64> {
        self.global_stats().map(|(count, _)| u64::from(count))
    }

    /// Whether filtered deletes were found to work on this handle (probed at open).
    pub fn flush_support(&self) -> FlushSupport {
        self.flush_support
    }

    /// Tests filtered-flush support with a request no kernel walks the table for
    /// ([`encode_flush_probe`]); the answer is remembered on the handle. A socket error counts
    /// as "unsupported" (the full pass reports its own errors).
    pub fn probe_flush(&mut self, family: Family) -> FlushSupport {
        // nfnetlink answers a request for an absent ctnetlink with a bare EINVAL too; a stats
        // request (per-CPU counters, no walk) tells that case apart.
        if self.table_count().is_err() {
            self.flush_support = FlushSupport::Unsupported;
            return self.flush_support;
        }
        let seq = self.next_seq();
        self.out.clear();
        encode_flush_probe(&mut self.out, family, seq);
        self.flush_support = match self.request_ack("probe filtered flush", seq, |_| {}) {
            Ok((errno, _)) => flush_support_from_errno(errno),
            Err(_) => FlushSupport::Unsupported,
        };
        self.flush_support
    }

    /// Probes filtered-flush support once, at open: one request and one ack, whatever the
    /// table's size. Never fails: a kernel or a socket that cannot flush gets full passes.
    fn probe_at_open(&mut self) {
        self.probe_flush(Family::V4);
    }

    /// Sends the request in the output buffer and reads its replies up to the ack with `seq`;
    /// `on_msg` sees the other replies to it.
    pub(crate) fn request(
        &mut self,
        op: &'static str,
        seq: u32,
        on_msg: impl FnMut(&crate::attr::Msg<'_>),
    ) -> Result<()> {
        match self.request_ack(op, seq, on_msg)? {
            (0, _) => Ok(()),
            (errno, msg) => Err(from_errno(op, errno, msg)),
        }
    }

    /// Like [`Self::request`], but the ack's errno (0 for success) and extended message are
    /// returned as they are, for callers that decide by errno.
    pub(crate) fn request_ack(
        &mut self,
        op: &'static str,
        seq: u32,
        mut on_msg: impl FnMut(&crate::attr::Msg<'_>),
    ) -> Result<(i32, String)> {
        self.sock.send(&self.out.buf)?;
        loop {
            let n = match self.sock.recv(&mut self.rbuf, false) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(e) => return Err(recv_failure(op, e)),
            };
            let data = self.rbuf.get(..n).unwrap_or(&[]);
            for m in Msgs::new(data) {
                let m = m?;
                if m.seq != seq {
                    continue; // a late reply to an earlier request
                }
                if m.ty != NLMSG_ERROR {
                    on_msg(&m);
                    continue;
                }
                let ack = parse_ack(&m)?;
                let msg = ack.msg.map(|b| String::from_utf8_lossy(b).into_owned());
                return Ok((ack.errno, msg.unwrap_or_default()));
            }
        }
    }

    /// Sends `n` requests produced by `encode` in as few `sendmsg` calls as the socket allows.
    /// Only failures are acked by the kernel (plus the explicit ack asked for on each batch's
    /// last request, which marks the end of its replies). If acks are dropped (ENOBUFS), the
    /// requests without a known outcome are sent again; a successful request is not acked, so
    /// its re-send fails with `resent_ok` (ENOENT for a delete, EEXIST for a create), which then
    /// counts as the success of the earlier send.
    fn run_batch<E>(&mut self, n: usize, resent_ok: i32, encode: E) -> Result<BatchReport>
    where
        E: Fn(&mut MsgBuf, usize, u32) -> Result<()>,
    {
        let mut rep = BatchReport {
            requested: entry_count(n),
            ..Default::default()
        };
        let limit = self.sock.send_limit();
        let max_items = self.sock.ack_capacity().min(8192);
        let mut status: Vec<i32> = vec![PENDING; n];
        let mut items: Vec<usize> = Vec::new();
        let mut next = 0usize;
        while next < n {
            items.clear();
            while next < n && items.len() < max_items {
                items.push(next);
                next += 1;
                // Requests are at most ~120 bytes; stop well before the socket's limit.
                if items.len() * 128 + 512 > limit {
                    break;
                }
            }
            let mut round = 0;
            loop {
                round += 1;
                let (first_seq, last_seq) =
                    self.encode_items(&items, &encode, &mut status, &mut rep);
                if self.out.is_empty() {
                    break;
                }
                let seqs = (first_seq, last_seq);
                let resent = (round > 1).then_some(resent_ok);
                let lost = self.send_and_collect(&items, seqs, resent, &mut status, &mut rep)?;
                if !lost {
                    break;
                }
                // Keep only the requests whose outcome is unknown.
                items.retain(|&i| status.get(i) == Some(&PENDING));
                if round >= MAX_BATCH_ROUNDS {
                    for &i in &items {
                        if let Some(s) = status.get_mut(i) {
                            *s = libc::ENOBUFS;
                        }
                    }
                    rep.first_error.get_or_insert_with(|| {
                        "acks dropped (ENOBUFS) after repeated re-sends".to_string()
                    });
                    break;
                }
                rep.resent = rep.resent.saturating_add(entry_count(items.len()));
            }
        }
        for s in status {
            match s {
                0 | PENDING => rep.ok = rep.ok.saturating_add(1),
                libc::ENOENT => rep.not_found = rep.not_found.saturating_add(1),
                _ => rep.failed = rep.failed.saturating_add(1),
            }
        }
        Ok(rep)
    }

    /// Encodes `items` into the output buffer with consecutive sequence numbers; the last one
    /// asks for an ack. Items that cannot be encoded fail on their own. Returns the first seq and
    /// the seq of the last request actually encoded.
    fn encode_items<E>(
        &mut self,
        items: &[usize],
        encode: &E,
        status: &mut [i32],
        rep: &mut BatchReport,
    ) -> (u32, u32)
    where
        E: Fn(&mut MsgBuf, usize, u32) -> Result<()>,
    {
        self.out.clear();
        // Sequence numbers are consecutive within a batch, so an ack maps to its item by offset.
        if self.seq > u32::MAX - 1 - items.len() as u32 {
            self.seq = 0;
        }
        let first_seq = self.seq + 1;
        let mut last_start = None;
        let mut last_seq = first_seq;
        for &i in items {
            let seq = self.next_seq();
            let start = self.out.len();
            match encode(&mut self.out, i, seq) {
                Ok(()) => {
                    last_start = Some(start);
                    last_seq = seq;
                }
                Err(e) => {
                    self.out.buf.truncate(start);
                    if let Some(s) = status.get_mut(i) {
                        *s = libc::EINVAL;
                    }
                    rep.first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
        if let Some(start) = last_start {
            if let Some(fl) = self.out.buf.get_mut(start + 6..start + 8) {
                let flags = u16::from_ne_bytes([fl[0], fl[1]]) | NLM_F_ACK;
                fl.copy_from_slice(&flags.to_ne_bytes());
            }
        }
        (first_seq, last_seq)
    }

    /// Sends the encoded batch and records error acks. Returns true when acks were lost.
    fn send_and_collect(
        &mut self,
        items: &[usize],
        (first_seq, last_seq): (u32, u32),
        resent_ok: Option<i32>,
        status: &mut [i32],
        rep: &mut BatchReport,
    ) -> Result<bool> {
        const OP: &str = "conntrack batch";
        self.sock.send(&self.out.buf)?;
        rep.sendmsgs = rep.sendmsgs.saturating_add(1);
        let mut lost = false;
        let mut got_last = false;
        while !got_last {
            // The kernel handles a sendmsg to completion before returning, so after a loss
            // everything that survived is already queued: read it without blocking.
            let n = match self.sock.recv(&mut self.rbuf, lost) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    lost = true;
                    continue;
                }
                Err(e) => return Err(recv_failure(OP, e)),
            };
            let data = self.rbuf.get(..n).unwrap_or(&[]);
            for m in Msgs::new(data) {
                let m = m?;
                if m.ty != NLMSG_ERROR {
                    continue;
                }
                let off = m.seq.wrapping_sub(first_seq) as usize;
                let Some(&item) = items.get(off) else {
                    continue;
                };
                let ack = parse_ack(&m)?;
                // A re-sent request whose earlier send already succeeded (its ack was dropped).
                let errno = if Some(ack.errno) == resent_ok {
                    0
                } else {
                    ack.errno
                };
                if let Some(s) = status.get_mut(item) {
                    *s = errno;
                }
                if errno != 0 && errno != libc::ENOENT {
                    rep.first_error.get_or_insert_with(|| {
                        let msg = ack.msg.map(|b| String::from_utf8_lossy(b).into_owned());
                        from_errno(OP, errno, msg.unwrap_or_default()).to_string()
                    });
                }
                if m.seq == last_seq {
                    got_last = true;
                }
            }
        }
        if !lost {
            // No error ack means success for every request of the batch.
            for &i in items {
                if let Some(s) = status.get_mut(i) {
                    if *s == PENDING {
                        *s = 0;
                    }
                }
            }
        }
        Ok(lost)
    }
}

/// Table health (`stats.rs` decodes the replies and owns the rule).
impl Conntrack {
    /// The entry count and limit of this handle's namespace, in one request.
    pub(crate) fn global_stats(&mut self) -> Result<(u32, Option<u32>)> {
        let seq = self.next_seq();
        self.out.clear();
        let ty = ct_type(IPCTNL_MSG_CT_GET_STATS);
        let m = self
            .out
            .begin_msg(ty, NLM_F_REQUEST | NLM_F_ACK, seq, libc::AF_UNSPEC as u8);
        self.out.end_msg(m);
        let mut reply = None;
        self.request("read conntrack stats", seq, |m| {
            if m.ty == ty && reply.is_none() {
                reply = Some(parse_global_stats(m.payload));
            }
        })?;
        reply.unwrap_or(Err(Error::Malformed("no stats reply")))
    }

    /// The per-CPU counters of this handle's namespace: one dump, one message per CPU.
    pub fn cpu_stats(&mut self) -> Result<Vec<CpuStats>> {
        const OP: &str = "read conntrack per-CPU stats";
        let seq = self.next_seq();
        self.out.clear();
        let ty = ct_type(IPCTNL_MSG_CT_GET_STATS_CPU);
        let m = self
            .out
            .begin_msg(ty, NLM_F_REQUEST | NLM_F_DUMP, seq, libc::AF_UNSPEC as u8);
        self.out.end_msg(m);
        self.sock.send(&self.out.buf)?;
        let mut cpus = Vec::new();
        // The first error is kept while the dump is read to its end, so the socket is clean
        // for the next request.
        let mut failure: Option<Error> = None;
        loop {
            let n = match self.sock.recv(&mut self.rbuf, false) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(e) => return Err(failure.unwrap_or(recv_failure(OP, e))),
            };
            for m in Msgs::new(self.rbuf.get(..n).unwrap_or(&[])) {
                let m = match m {
                    Ok(m) => m,
                    Err(e) => return Err(failure.unwrap_or(e)),
                };
                if m.seq != seq {
                    continue; // a late reply to an earlier request
                }
                match m.ty {
                    NLMSG_DONE => return failure.map_or(Ok(cpus), Err),
                    NLMSG_ERROR => {
                        let ack = parse_ack(&m)?;
                        if ack.errno == 0 {
                            return failure.map_or(Ok(cpus), Err);
                        }
                        let msg = ack.msg.map(|b| String::from_utf8_lossy(b).into_owned());
                        return Err(from_dump_errno(OP, ack.errno, msg.unwrap_or_default()));
                    }
                    t if t == ty => match parse_cpu_stats(m.payload) {
                        Ok(s) => cpus.push(s),
                        Err(e) => {
                            failure.get_or_insert(e);
                        }
                    },
                    _ => {}
                }
            }
        }
    }

    /// Count, limit and per-CPU counters of this handle's namespace: two small requests, no
    /// walk of the table.
    pub fn stats(&mut self) -> Result<TableStats> {
        let (count, max) = self.global_stats()?;
        let max = match max {
            Some(m) => m,
            None => max_from_proc()?,
        };
        let per_cpu = self.cpu_stats()?;
        let mut total = StatsTotal::default();
        for c in &per_cpu {
            total.add(c);
        }
        Ok(TableStats {
            count,
            max,
            per_cpu,
            total,
        })
    }
}
