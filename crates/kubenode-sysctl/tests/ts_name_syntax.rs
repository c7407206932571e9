//! The TypeScript package exports the name-syntax constants as plain values (they must be there
//! before, and without, the binding); ts/sysctl/name-syntax.ts is generated from the core's
//! constants here, so they have one owner. `KUBENODE_REGENERATE=1` rewrites the file.

use std::path::Path;

use kubenode_sysctl::{
    POLICY_ENTRY_NAME_PATTERN, SYSCTL_CONTAIN_SLASH_FMT, SYSCTL_CONTAIN_SLASH_PATTERN_FMT,
    SYSCTL_MAX_LENGTH,
};

fn render() -> String {
    format!(
        "// Generated from crates/kubenode-sysctl/src/{{name,policy}}.rs by its test ts_name_syntax
// (KUBENODE_REGENERATE=1 cargo test -p kubenode-sysctl --test ts_name_syntax); regenerate
// instead of editing. Names are checked by the binding, not with these.

/** Upstream's `SysctlMaxLength`: longest sysctl name, in bytes. */
export const SYSCTL_MAX_LENGTH = {SYSCTL_MAX_LENGTH};
/** Upstream's `SysctlContainSlashFmt`: a sysctl name, dotted or slash form. */
export const SYSCTL_CONTAIN_SLASH_FMT = String.raw`{SYSCTL_CONTAIN_SLASH_FMT}`;
/** Upstream's `SysctlContainSlashPatternFmt`: like a name, may end in `*`. */
export const SYSCTL_CONTAIN_SLASH_PATTERN_FMT = String.raw`{SYSCTL_CONTAIN_SLASH_PATTERN_FMT}`;
/** A sysctl policy entry's name (segments or `*`), as the policy file's schema checks it. */
export const POLICY_ENTRY_NAME_PATTERN = String.raw`{POLICY_ENTRY_NAME_PATTERN}`;
"
    )
}

#[test]
fn typescript_constants_are_the_cores() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ts/sysctl/name-syntax.ts");
    let want = render();
    if std::env::var_os("KUBENODE_REGENERATE").is_some() {
        std::fs::write(&path, &want).expect("write ts/sysctl/name-syntax.ts");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "ts/sysctl/name-syntax.ts differs from the core's constants: regenerate it with \
         KUBENODE_REGENERATE=1 cargo test -p kubenode-sysctl --test ts_name_syntax"
    );
}
