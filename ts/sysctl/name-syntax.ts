// Generated from crates/kubenode-sysctl/src/{name,policy}.rs by its test ts_name_syntax
// (KUBENODE_REGENERATE=1 cargo test -p kubenode-sysctl --test ts_name_syntax); regenerate
// instead of editing. Names are checked by the binding, not with these.

/** Upstream's `SysctlMaxLength`: longest sysctl name, in bytes. */
export const SYSCTL_MAX_LENGTH = 253;
/** Upstream's `SysctlContainSlashFmt`: a sysctl name, dotted or slash form. */
export const SYSCTL_CONTAIN_SLASH_FMT = String.raw`([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?`;
/** Upstream's `SysctlContainSlashPatternFmt`: like a name, may end in `*`. */
export const SYSCTL_CONTAIN_SLASH_PATTERN_FMT = String.raw`([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`;
/** A sysctl policy entry's name (segments or `*`), as the policy file's schema checks it. */
export const POLICY_ENTRY_NAME_PATTERN = String.raw`^([a-z]+[a-z0-9_-]*|\*)(\.([a-z]+[a-z0-9_-]*|\*))*$`;
