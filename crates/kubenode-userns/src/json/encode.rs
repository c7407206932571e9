//! `json.Marshal` of upstream's `userNamespace`: compact, in field order, nil slices as `null`.

use std::fmt::Write as _;

use super::{IdMapping, UserNamespace};

/// `json.Marshal` output: no whitespace, no trailing newline, nil slices as `null`.
pub fn encode(ns: &UserNamespace) -> String {
    let mut out = String::with_capacity(140);
    out.push_str("{\"uidMappings\":");
    encode_list(&mut out, &ns.uid_mappings);
    out.push_str(",\"gidMappings\":");
    encode_list(&mut out, &ns.gid_mappings);
    out.push('}');
    out
}

fn encode_list(out: &mut String, list: &[IdMapping]) {
    if list.is_empty() {
        out.push_str("null");
        return;
    }
    out.push('[');
    for (i, m) in list.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "{{\"hostId\":{},\"containerId\":{},\"length\":{}}}",
            m.host_id, m.container_id, m.length
        );
    }
    out.push(']');
}
