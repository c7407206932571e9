//! The filtered-flush support probe costs no walk of the table, against the real kernel.

mod common;

use std::time::{Duration, Instant};

use common::{dns_flows, Netns};
use kubenode_conntrack::{Conntrack, DumpFilter, Family, FlushSupport};

fn fill(ct: &mut Conntrack, n: u32) {
    let r = ct.create(Family::V4, &dns_flows(n)).unwrap();
    assert_eq!(r.ok, n, "{r:?}");
}

/// A kernel-filtered dump no entry matches: exactly one walk of the table.
fn walk(ct: &mut Conntrack) -> Duration {
    let nothing = DumpFilter {
        proto: Some(17),
        orig_dst: Some("0.0.0.0".parse().unwrap()),
        orig_dst_port: Some(0),
        ..Default::default()
    };
    let t = Instant::now();
    let (flows, _) = ct.list(Family::V4, &nothing).unwrap();
    assert!(flows.is_empty());
    t.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

const ENTRIES: u32 = 200_000;

#[test]
fn opening_a_handle_on_a_large_table_does_not_walk_it() {
    let ns = Netns::new();
    let mut ct = ns.open();
    fill(&mut ct, ENTRIES);
    let walks = median((0..3).map(|_| walk(&mut ct)).collect());
    let opens: Vec<Duration> = (0..3)
        .map(|_| {
            let t = Instant::now();
            let opened = ns.open();
            let took = t.elapsed();
            assert_eq!(opened.flush_support(), FlushSupport::Supported);
            took
        })
        .collect();
    let open = median(opens);
    eprintln!("{ENTRIES} entries: one walk {walks:?}, open {open:?}");
    // Opening costs a thread, a socket and two small requests; a walk of this table costs
    // tens of milliseconds, which an open that walked would include in full.
    assert!(
        open * 4 < walks,
        "open took {open:?}, a walk of the table {walks:?}"
    );
    assert_eq!(ct.table_count().unwrap(), u64::from(ENTRIES));
}

/// The measurement behind `cost::FILL_PER_ENTRY_IN_WALKS`: a walk against a dump returning
/// every entry. Run with `--ignored --nocapture`.
#[test]
#[ignore = "a measurement, run by hand"]
fn dump_against_walk() {
    let ns = Netns::new();
    let mut ct = ns.open();
    fill(&mut ct, ENTRIES);
    let udp = DumpFilter {
        proto: Some(17),
        ..Default::default()
    };
    let mut walks = vec![];
    let mut dumps = vec![];
    for _ in 0..5 {
        walks.push(walk(&mut ct));
        let t = Instant::now();
        let mut n = 0u64;
        ct.dump(Family::V4, &udp, |_| n += 1).unwrap();
        dumps.push(t.elapsed());
        assert_eq!(
            n,
            u64::from(ENTRIES) + 1,
            "one attempt event and every entry"
        );
    }
    let (w, d) = (median(walks), median(dumps));
    let k = (d.as_secs_f64() - w.as_secs_f64()) / w.as_secs_f64();
    eprintln!("{ENTRIES} entries: walk {w:?}, dump {d:?}, fill per entry in walks {k:.2}");
    assert!(k > 0.0);
}
