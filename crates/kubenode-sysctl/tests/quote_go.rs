//! `go_quote` against Go's own `strconv.Quote` (benches/peers/cmd/quote-peer, built by
//! prepare.sh into $KUBENODE_PEERS_BIN or .cache/peers/bin): every code point, invalid UTF-8,
//! and the generated table of printable code points.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kubenode_sysctl::go_quote_bytes;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn peer() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("benches/peers/prepare.sh"))
        .arg("quote-peer")
        .stderr(Stdio::inherit())
        .output()
        .expect("run benches/peers/prepare.sh");
    assert!(
        out.status.success(),
        "prepare.sh quote-peer failed: {}",
        out.status
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("prepare.sh printed the binary's path"),
    )
}

/// Go's quoting of each input, one line each.
fn go_quotes(peer: &Path, inputs: &[Vec<u8>]) -> Vec<String> {
    let mut stdin = Vec::new();
    for i in inputs {
        stdin.extend_from_slice(&u32::try_from(i.len()).expect("short input").to_le_bytes());
        stdin.extend_from_slice(i);
    }
    let mut child = Command::new(peer)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start quote-peer");
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || pipe.write_all(&stdin));
    let out = child.wait_with_output().expect("quote-peer output");
    writer
        .join()
        .expect("writer thread")
        .expect("write to quote-peer");
    assert!(out.status.success(), "quote-peer failed: {}", out.status);
    String::from_utf8(out.stdout)
        .expect("Go's quoting is UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn invalid_utf8() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0x80..=0xffu8).map(|b| vec![b]).collect();
    v.extend((0x80..=0xffu8).map(|b| vec![b'a', b, b'z']));
    // Truncated sequences, overlong forms, surrogates, past U+10FFFF.
    for s in [
        &b"\xc3"[..],
        b"\xe2\x82",
        b"\xf0\x9f\x98",
        b"\xc0\x80",
        b"\xe0\x80\x80",
        b"\xf0\x80\x80\x80",
        b"\xed\xa0\x80",
        b"\xed\xbf\xbf",
        b"\xf4\x90\x80\x80",
        b"\xf5\x80\x80\x80",
        b"\xe2\x82\xac\xe2\x82",
        b"\"\\\xff\x00\x7f\xef\xbf\xbd",
    ] {
        v.push(s.to_vec());
    }
    v
}

#[test]
fn every_code_point_and_invalid_byte_quotes_as_go() {
    let mut inputs: Vec<Vec<u8>> = (0..=0x10ffffu32)
        .filter_map(char::from_u32)
        .map(|c| c.to_string().into_bytes())
        .collect();
    let code_points = inputs.len();
    inputs.extend(invalid_utf8());
    let go = go_quotes(&peer(), &inputs);
    assert_eq!(go.len(), inputs.len(), "one line per input");
    let mismatches: Vec<String> = inputs
        .iter()
        .zip(&go)
        .filter_map(|(i, g)| {
            let ours = go_quote_bytes(i);
            (&ours != g).then(|| format!("{i:02x?}: go {g}, kubenode {ours}"))
        })
        .collect();
    assert_eq!(code_points, 0x110000 - 0x800);
    assert!(
        mismatches.is_empty(),
        "{} of {} inputs differ from Go, e.g.:\n{}",
        mismatches.len(),
        inputs.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}

#[test]
fn printable_table_is_what_the_generator_prints() {
    let out = Command::new(peer())
        .arg("-rust-table")
        .output()
        .expect("run quote-peer -rust-table");
    assert!(out.status.success());
    let committed =
        std::fs::read_to_string(repo().join("crates/kubenode-sysctl/src/quote_table.rs"))
            .expect("read quote_table.rs");
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "src/quote_table.rs is stale: regenerate it with `quote-peer -rust-table > crates/kubenode-sysctl/src/quote_table.rs`"
    );
}
