//! Benchmark helper: fills a namespace's conntrack table with synthetic DNATed UDP flows
//! (batched `IPCTNL_MSG_CT_NEW`) and measures the floor (a bare filtered dump that parses
//! nothing beyond the message headers that end it, plus batched deletes of the known stale
//! tuples).
//!
//! ```text
//! ct-bench fill  NETNS FLOWS SERVICES ENDPOINTS [--stale-only]
//! ct-bench floor NETNS FLOWS SERVICES ENDPOINTS
//! ct-bench delete-floor NETNS FLOWS SERVICES ENDPOINTS
//! ```
//! `delete-floor` times the deletes alone: the known stale tuples in batches, no dump (what a
//! pass that already knows its stale flows cannot beat). With `--subscribed` a thread drains a
//! conntrack event socket (NEW and DESTROY, as the flow index subscribes) meanwhile, so the
//! kernel builds and queues a DESTROY event per delete, as it does under an event-fed index.
//! Flow k goes to service k % S (VIP 10.96.0.(s+1):53) and is answered by endpoint
//! (k / S) % E (10.244.s.(e+1):5353). The last endpoint of each service is the one the
//! benchmark removes, so 1/E of the flows are stale.

use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubenode_conntrack::codec::{NlSocket, NLMSG_DONE, NLMSG_ERROR, RECV_BUF};
use kubenode_conntrack::{
    encode_dump, Conntrack, DumpFilter, EventSocket, EventWaker, Family, Flow, MsgBuf, Msgs, Tuple,
    INDEX_GROUPS, IPPROTO_UDP,
};

fn flow(k: u32, s: u32, e: u32) -> Flow {
    let svc = k % s;
    let ep = (k / s) % e;
    let client = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 1, 0, 0)) + k / 50_000);
    let sport = 1024 + (k % 50_000) as u16;
    let vip = Ipv4Addr::new(10, 96, (svc / 250) as u8, (svc % 250 + 1) as u8);
    let backend = Ipv4Addr::new(10, 244, svc as u8, (ep + 1) as u8);
    Flow {
        orig: Tuple {
            src: Some(IpAddr::V4(client)),
            dst: Some(IpAddr::V4(vip)),
            proto: IPPROTO_UDP,
            src_port: sport,
            dst_port: 53,
        },
        reply: Tuple {
            src: Some(IpAddr::V4(backend)),
            dst: Some(IpAddr::V4(client)),
            proto: IPPROTO_UDP,
            src_port: 5353,
            dst_port: sport,
        },
        timeout: 3600,
        ..Default::default()
    }
}

fn is_stale(k: u32, s: u32, e: u32) -> bool {
    (k / s) % e == e - 1
}

/// A dump that reads every datagram but parses nothing beyond the message headers needed to
/// find its end: the floor any listing pays. Returns (bytes, recvs).
fn dump_raw(family: Family, filter: &DumpFilter) -> Result<(u64, u64), String> {
    let mut sock = NlSocket::open().map_err(|e| e.to_string())?;
    let mut out = MsgBuf::with_capacity(4096);
    let seq = 1;
    encode_dump(&mut out, family, filter, seq);
    sock.send(&out.buf).map_err(|e| e.to_string())?;
    let mut rbuf = vec![0u8; RECV_BUF];
    let (mut bytes, mut recvs) = (0u64, 0u64);
    loop {
        let n = match sock.recv(&mut rbuf, false) {
            Ok(Some(n)) => n,
            Ok(None) => continue,
            Err(e) => return Err(format!("dump conntrack table: {e}")),
        };
        bytes += n as u64;
        recvs += 1;
        let data = rbuf.get(..n).unwrap_or(&[]);
        let end = |m: &kubenode_conntrack::codec::Msg<'_>| {
            m.seq == seq && (m.ty == NLMSG_DONE || m.ty == NLMSG_ERROR)
        };
        if Msgs::new(data).any(|m| m.is_ok_and(|m| end(&m))) {
            return Ok((bytes, recvs));
        }
    }
}

type Listener = (EventWaker, Arc<AtomicBool>, std::thread::JoinHandle<u64>);

/// A thread draining an event socket (in this thread's namespace) until told to stop; returns
/// the events it read.
fn subscribe() -> Result<Listener, String> {
    let mut sock =
        EventSocket::open(None, INDEX_GROUPS, Some(32 << 20)).map_err(|e| e.to_string())?;
    let waker = sock.waker();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let thread = std::thread::spawn(move || {
        let (mut out, mut n) = (Vec::with_capacity(1024), 0u64);
        while !st.load(Ordering::Acquire) {
            out.clear();
            match sock.read(&mut out, 1024, Duration::from_secs(1)) {
                Ok(_) => n += out.len() as u64,
                Err(_) => break,
            }
        }
        n
    });
    Ok((waker, stop, thread))
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: ct-bench fill|floor|delete-floor NETNS FLOWS SERVICES ENDPOINTS [--stale-only]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, cmd, netns, n, s, e, rest @ ..] = args.as_slice() else {
        return usage();
    };
    let (Ok(n), Ok(s), Ok(e)) = (n.parse::<u32>(), s.parse::<u32>(), e.parse::<u32>()) else {
        return usage();
    };
    if s == 0 || e == 0 || s > 250 {
        return usage();
    }
    let stale_only = rest.iter().any(|a| a == "--stale-only");
    // This thread joins the namespace, so the floor's bare socket is created in it too.
    let joined = kubenode_netns::open(std::path::Path::new(netns), kubenode_netns::Kind::Net)
        .map_err(|e| e.to_string())
        .and_then(|ns| ns.join().map_err(|e| e.to_string()));
    if let Err(err) = joined {
        eprintln!("ct-bench: {netns}: {err}");
        return ExitCode::FAILURE;
    }
    let mut ct = match Conntrack::open() {
        Ok(c) => c,
        Err(err) => {
            eprintln!("ct-bench: {err}");
            return ExitCode::FAILURE;
        }
    };
    let t = Instant::now();
    let result = match cmd.as_str() {
        "fill" => {
            let mut created = 0u64;
            let mut failed = 0u64;
            let mut chunk = Vec::with_capacity(65_536);
            let mut k = 0;
            while k < n {
                chunk.clear();
                while k < n && chunk.len() < 65_536 {
                    if !stale_only || is_stale(k, s, e) {
                        chunk.push(flow(k, s, e));
                    }
                    k += 1;
                }
                match ct.create(Family::V4, &chunk) {
                    Ok(r) => {
                        created += u64::from(r.ok);
                        failed += u64::from(r.failed) + u64::from(r.not_found);
                    }
                    Err(err) => {
                        eprintln!("ct-bench: {err}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            format!(
                r#"{{"created":{created},"failed":{failed},"seconds":{}}}"#,
                t.elapsed().as_secs_f64()
            )
        }
        "floor" => {
            let filter = DumpFilter {
                proto: Some(IPPROTO_UDP),
                ..Default::default()
            };
            let (bytes, recvs) = match dump_raw(Family::V4, &filter) {
                Ok(v) => v,
                Err(err) => {
                    eprintln!("ct-bench: {err}");
                    return ExitCode::FAILURE;
                }
            };
            let dump = t.elapsed().as_secs_f64();
            let stale: Vec<Flow> = (0..n)
                .filter(|&k| is_stale(k, s, e))
                .map(|k| flow(k, s, e))
                .collect();
            let t2 = Instant::now();
            let r = match ct.delete(Family::V4, &stale) {
                Ok(r) => r,
                Err(err) => {
                    eprintln!("ct-bench: {err}");
                    return ExitCode::FAILURE;
                }
            };
            format!(
                r#"{{"dumpSeconds":{dump},"deleteSeconds":{},"seconds":{},"bytes":{bytes},"recvs":{recvs},"deleted":{},"sendmsgs":{}}}"#,
                t2.elapsed().as_secs_f64(),
                t.elapsed().as_secs_f64(),
                r.deleted(),
                r.sendmsgs
            )
        }
        "delete-floor" => {
            let stale: Vec<Flow> = (0..n)
                .filter(|&k| is_stale(k, s, e))
                .map(|k| flow(k, s, e))
                .collect();
            let listener = if rest.iter().any(|a| a == "--subscribed") {
                // With `nf_conntrack_events` at its default (2) only flows created while a
                // listener exists carry events: the stale flows are made again under it.
                let again = subscribe().and_then(|l| {
                    ct.delete(Family::V4, &stale)
                        .and_then(|_| ct.create(Family::V4, &stale))
                        .map_err(|e| e.to_string())
                        .map(|_| l)
                });
                match again {
                    Ok(l) => Some(l),
                    Err(err) => {
                        eprintln!("ct-bench: {err}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                None
            };
            let t2 = Instant::now();
            let r = match ct.delete(Family::V4, &stale) {
                Ok(r) => r,
                Err(err) => {
                    eprintln!("ct-bench: {err}");
                    return ExitCode::FAILURE;
                }
            };
            let seconds = t2.elapsed().as_secs_f64();
            let events = listener.map_or(0, |(waker, stop, thread)| {
                stop.store(true, Ordering::Release);
                waker.wake();
                thread.join().unwrap_or(0)
            });
            format!(
                r#"{{"seconds":{seconds},"deleted":{},"events":{events}}}"#,
                r.deleted()
            )
        }
        _ => return usage(),
    };
    println!("{result}");
    ExitCode::SUCCESS
}
