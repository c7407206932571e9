//! Kubelet sysctl admission with the semantics of upstream Kubernetes
//! (`component-helpers/node/util/sysctl`, `pkg/kubelet/sysctl`, the sysctl part of
//! `pkg/apis/core/validation`), plus applying sysctls inside a pod's namespaces on Linux.
//!
//! Admitting a pod allocates nothing unless it is rejected (the message is built then) or a
//! slash-separated name exceeds 256 bytes; the name and pattern syntax is checked by
//! hand-written matchers equivalent to upstream's regexes.
// Input reaches every library path, and a panic would cross napi: errors are returned, never
// unwrapped. Tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod allowlist;
mod annotations;
mod apply;
mod baseline;
mod batch;
mod default_sysctls;
mod host_flags;
mod interned;
mod k8s_version;
mod kernel;
mod lookup;
mod name;
mod namespace;
mod normalize;
mod policy;
mod policy_value;
mod probe;
mod quote;
mod safe;
mod string_enum;
mod validation;
mod validation_actions;

pub use allowlist::{
    AdmitError, Allowlist, AllowlistEntry, AllowlistError, Verdict, FORBIDDEN_REASON,
};
pub use annotations::{
    parse_sysctl_annotation, sysctls_from_annotations, AnnotationFormatError, SYSCTLS_ANNOTATION,
    UNSAFE_SYSCTLS_ANNOTATION,
};
pub use apply::{apply_sysctls, proc_path, Applied, ApplyError, NsTarget, Sysctl, Target};
pub use baseline::{check_baseline, BASELINE_FORBIDDEN_REASON};
pub use batch::{BatchError, Rejection, Rejections};
pub use default_sysctls::{
    default_pod_sysctls_enabled, sandbox_sysctls, validate_default_pod_sysctls,
    DEFAULT_POD_SYSCTLS_GATE,
};
pub use host_flags::{host_flags, HOST_IPC, HOST_NETWORK, POD_USERNS};
pub use interned::{NameTable, UnknownName};
pub use k8s_version::{parse_policy_version, KubernetesVersion, KubernetesVersionError};
pub use kernel::{read_kernel_version, KernelVersion, VersionError};
pub use name::{
    is_valid_sysctl_name, is_valid_sysctl_pattern, SYSCTL_CONTAIN_SLASH_FMT,
    SYSCTL_CONTAIN_SLASH_PATTERN_FMT, SYSCTL_MAX_LENGTH,
};
pub use namespace::{
    get_namespace, get_namespace_at, namespace_of, namespace_of_at, Namespace, NamespaceInfo,
    ADDED as NAMESPACE_ADDED, EXACT as NAMESPACE_EXACT, PREFIXES as NAMESPACE_PREFIXES,
};
pub use normalize::normalize_name;
pub use policy::{
    bad_value_message, not_allowed_message, CompiledEntry, NamePolicyRules, PolicyEntry,
    PolicyError, PolicyRule, SysctlNamePolicy, SysctlPolicy, POLICY_ENTRY_NAME_PATTERN,
};
pub use policy_value::{
    canonical_value, integer_fields, integer_fields_source, value_syntax, IntRange, RuleDetails,
    ValueRule, ValueSyntax, INT_FIELD, MAX_MAGNITUDE, MAX_VALUE_LENGTH, SPACE,
};
pub use probe::{default_probe_names, probe, ProbeOutcome, ProbeResult};
pub use quote::{go_quote, go_quote_bytes};
pub use safe::{
    baseline_allowed_sysctls, safe_list, safe_sysctl_allowlist, SafeList, SafeSysctl, SAFE_SYSCTLS,
};
pub use validation::{validate_host_sysctl, validate_sysctls, FieldError, FieldErrorType};
pub use validation_actions::{validation_actions_errors, VALIDATION_ACTIONS};
