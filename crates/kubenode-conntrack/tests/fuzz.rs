//! Parser robustness: arbitrary and mutated datagrams must give values or errors, never a
//! panic or an out-of-bounds read. `fuzz_ten_million` is the long run recorded in the README
//! (`cargo test --release -p kubenode-conntrack --test fuzz -- --ignored`).

use kubenode_conntrack::codec::parse_ack;
use kubenode_conntrack::{parse_cpu_stats, parse_entry_payload, parse_global_stats, Msgs};
use proptest::prelude::*;

fn seed_datagram() -> Vec<u8> {
    // Two entries (IPv4 UDP with zone and a nested-flag mix), then NLMSG_DONE.
    let entry: [u8; 164] = {
        let mut v = Vec::new();
        v.extend(164u32.to_ne_bytes());
        v.extend(0x0100u16.to_ne_bytes());
        v.extend(0x22u16.to_ne_bytes());
        v.extend([0u8; 8]);
        v.extend([2, 0, 0, 0]);
        for (nest, a, b) in [
            (1u16, [10, 0, 0, 1], [10, 96, 0, 10]),
            (2, [10, 244, 1, 5], [10, 0, 0, 1]),
        ] {
            v.extend(52u16.to_ne_bytes());
            v.extend((nest | 0x8000).to_ne_bytes());
            v.extend([20, 0, 0x01, 0x80, 8, 0, 1, 0]);
            v.extend(a);
            v.extend([8, 0, 2, 0]);
            v.extend(b);
            v.extend([28, 0, 0x02, 0x80, 5, 0, 1, 0, 17, 0, 0, 0]);
            v.extend([6, 0, 2, 0, 0x9c, 0x40, 0, 0, 6, 0, 3, 0, 0, 53, 0, 0]);
        }
        for (t, val) in [(3u16, 0x188u32), (8, 7), (12, 0x1234), (11, 1), (7, 30)] {
            v.extend(8u16.to_ne_bytes());
            v.extend(t.to_ne_bytes());
            v.extend(val.to_be_bytes());
        }
        v.try_into().unwrap_or([0; 164])
    };
    let mut d = entry.to_vec();
    d.extend(entry);
    d.extend(20u32.to_ne_bytes());
    d.extend(3u16.to_ne_bytes());
    d.extend(2u16.to_ne_bytes());
    d.extend([0u8; 8]);
    d.extend(0i32.to_ne_bytes());
    d
}

/// Walks a datagram the way the client does; returns the number of entries parsed.
fn walk(data: &[u8]) -> usize {
    let mut n = 0;
    for m in Msgs::new(data) {
        let Ok(m) = m else { break };
        match m.ty {
            2 => {
                let _ = parse_ack(&m);
            }
            0x0100 => {
                if let Ok(f) = parse_entry_payload(m.payload) {
                    n += usize::from(f.orig.proto == 17);
                }
            }
            // The replies of the table stats requests.
            0x0104 => {
                let _ = parse_cpu_stats(m.payload);
            }
            0x0105 => {
                let _ = parse_global_stats(m.payload);
            }
            _ => {}
        }
    }
    n
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn mutate(rng: &mut XorShift, seed: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(seed);
    let edits = 1 + rng.next() % 6;
    for _ in 0..edits {
        let r = rng.next();
        let len = out.len().max(1);
        let at = (r >> 8) as usize % len;
        match r % 5 {
            0 => {
                if let Some(b) = out.get_mut(at) {
                    *b = (r >> 40) as u8;
                }
            }
            1 => out.truncate(at),
            2 => {
                // Length fields are the interesting ones: poke small values.
                if let Some(b) = out.get_mut(at) {
                    *b = [0, 1, 3, 4, 7, 8, 0xff][(r >> 40) as usize % 7];
                }
            }
            3 => out.insert(at.min(out.len()), (r >> 40) as u8),
            _ => {
                if at < out.len() {
                    out.remove(at);
                }
            }
        }
    }
}

#[test]
fn seed_parses() {
    assert_eq!(walk(&seed_datagram()), 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..600)) {
        walk(&data);
        let _ = parse_entry_payload(&data);
        let _ = parse_cpu_stats(&data);
        let _ = parse_global_stats(&data);
    }

    #[test]
    fn mutated_entries_never_panic(seed in any::<u64>()) {
        let mut rng = XorShift(seed | 1);
        let base = seed_datagram();
        let mut buf = Vec::new();
        for _ in 0..50 {
            mutate(&mut rng, &base, &mut buf);
            walk(&buf);
        }
    }
}

#[test]
#[ignore = "long run: 10M inputs"]
fn fuzz_ten_million() {
    let base = seed_datagram();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut buf = Vec::new();
    let mut parsed = 0usize;
    let n: usize = std::env::var("FUZZ_INPUTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let t = std::time::Instant::now();
    for i in 0..n {
        if i % 4 == 0 {
            // Pure noise as well as mutations of valid data.
            let len = (rng.next() % 400) as usize;
            buf.clear();
            buf.extend((0..len).map(|_| rng.next() as u8));
        } else {
            mutate(&mut rng, &base, &mut buf);
        }
        parsed += walk(&buf);
    }
    println!(
        "fuzz: {n} inputs, 0 crashes, {parsed} entries parsed, {:.1}s",
        t.elapsed().as_secs_f64()
    );
}
