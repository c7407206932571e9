//! Benchmark helper for the event stream's cost: sends one UDP datagram to each of FLOWS
//! destination ports of DST from one socket, as fast as it can, in the network namespace it runs
//! in (`ip netns exec`). Each datagram is a new flow through the namespace's nftables DNAT.
//! With `--subscribe`, a thread of this process reads every conntrack event meanwhile, in Rust
//! (no JavaScript), to isolate the kernel's and the reader's cost.
//!
//! ```text
//! udp-flows DST FLOWS [--subscribe]
//! ```
//! Prints one JSON line: flows sent, seconds, flows/s, and (subscribed) events read and losses.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubenode_conntrack::{EventSocket, Groups};

/// Receive buffer of the Rust subscriber: large enough that a reader that keeps up loses nothing.
const RCVBUF: usize = 8 << 20;

struct Subscriber {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<(u64, u64), String>>,
}

fn subscribe() -> Result<Subscriber, String> {
    let mut s = EventSocket::open(None, Groups::ALL, Some(RCVBUF)).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    let thread = std::thread::spawn(move || {
        let (mut events, mut out) = (0u64, Vec::with_capacity(1024));
        loop {
            out.clear();
            let r = s
                .read(&mut out, 1024, Duration::from_millis(50))
                .map_err(|e| e.to_string())?;
            events += r.events as u64;
            if r.events == 0 && !r.lost && done.load(Ordering::Relaxed) {
                return Ok((events, r.overflows));
            }
        }
    });
    Ok(Subscriber { stop, thread })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, dst, n, rest @ ..] = args.as_slice() else {
        eprintln!("usage: udp-flows DST FLOWS [--subscribe]");
        return ExitCode::from(2);
    };
    let (Ok(dst), Ok(n)) = (dst.parse::<Ipv4Addr>(), n.parse::<u16>()) else {
        eprintln!("udp-flows: DST must be an IPv4 address and FLOWS in 1..=65535");
        return ExitCode::from(2);
    };
    let sub = match rest.iter().any(|a| a == "--subscribe") {
        true => match subscribe() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("udp-flows: {e}");
                return ExitCode::FAILURE;
            }
        },
        false => None,
    };
    let sock = match UdpSocket::bind("0.0.0.0:0") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("udp-flows: bind: {e}");
            return ExitCode::FAILURE;
        }
    };
    let t = Instant::now();
    let mut failed = 0u32;
    for port in 1..=n {
        if sock.send_to(b"x", SocketAddrV4::new(dst, port)).is_err() {
            failed += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let (mut events, mut overflows) = (0, 0);
    if let Some(s) = sub {
        s.stop.store(true, Ordering::Relaxed);
        match s.thread.join() {
            Ok(Ok((e, o))) => (events, overflows) = (e, o),
            Ok(Err(e)) => {
                eprintln!("udp-flows: subscriber: {e}");
                return ExitCode::FAILURE;
            }
            Err(_) => return ExitCode::FAILURE,
        }
    }
    println!(
        "{{\"flows\":{n},\"failed\":{failed},\"seconds\":{secs},\"rate\":{},\"events\":{events},\"overflows\":{overflows}}}",
        f64::from(n) / secs
    );
    ExitCode::SUCCESS
}
