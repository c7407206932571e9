//! Differential test against Go's encoding/json: every case in go_decode_cases.jsonl was
//! decoded by Go 1.26 into upstream's struct types (package renamed to `userns`), recording
//! either the error text or the decoded value.

use kubenode_userns::json::{decode, encode, IdMapping, UserNamespace};
use serde_json::{json, Value};

fn list(v: &[IdMapping]) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    Value::Array(
        v.iter()
            .map(
                |m| json!({"hostId": m.host_id, "containerId": m.container_id, "length": m.length}),
            )
            .collect(),
    )
}

#[test]
fn decode_matches_go_on_every_recorded_case() {
    let data = include_str!("go_decode_cases.jsonl");
    let mut n = 0;
    for line in data.lines() {
        let case: Value = serde_json::from_str(line).expect("fixture line");
        let input = case["in"].as_str().expect("in");
        let got = decode(input.as_bytes());
        match (&got, case.get("err")) {
            (Err(e), Some(want)) => assert_eq!(e, want.as_str().unwrap_or(""), "input {input:?}"),
            (Ok(ns), None) => {
                let want = &case["ok"];
                assert_eq!(
                    list(&ns.uid_mappings),
                    want["uidMappings"],
                    "uid of {input:?}"
                );
                assert_eq!(
                    list(&ns.gid_mappings),
                    want["gidMappings"],
                    "gid of {input:?}"
                );
            }
            (got, want) => panic!("input {input:?}: got {got:?}, Go says {want:?}"),
        }
        n += 1;
    }
    assert!(n > 800, "fixture has {n} cases");
}

#[test]
fn nesting_limit_matches_go() {
    // Go: "invalid character '[' exceeded max depth" at depth 10001; 10000 is fine.
    let deep = "[".repeat(10001);
    assert_eq!(
        decode(deep.as_bytes()).unwrap_err(),
        "invalid character '[' exceeded max depth"
    );
    let ok = format!("{{\"a\":{}{}}}", "[".repeat(9999), "]".repeat(9999));
    assert!(decode(ok.as_bytes()).is_ok());
    let top = format!("{}{}", "[".repeat(10000), "]".repeat(10000));
    assert_eq!(
        decode(top.as_bytes()).unwrap_err(),
        "json: cannot unmarshal array into Go value of type userns.userNamespace"
    );
}

#[test]
fn encode_is_byte_identical_to_json_marshal() {
    let ns = UserNamespace::single(131072, 65536);
    assert_eq!(
        encode(&ns),
        r#"{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}"#
    );
    assert_eq!(
        encode(&UserNamespace::default()),
        r#"{"uidMappings":null,"gidMappings":null}"#
    );
    let max = UserNamespace::single(u32::MAX, u32::MAX);
    assert_eq!(decode(encode(&max).as_bytes()), Ok(max));
}
