//! Binding for Pod Security's baseline `sysctls` check of `kubenode-sysctl`: one call per pod.

use kubenode_sysctl::{check_baseline, parse_policy_version, BASELINE_FORBIDDEN_REASON};
use napi::Env;
use napi_derive::napi;

use crate::errors::{err, throwing, ErrorCode};

/// `policy.CheckResult` of the baseline `sysctls` check.
#[napi(object)]
pub struct SysctlBaselineCheck {
    pub allowed: bool,
    /// `forbidden sysctls` when not allowed.
    pub forbidden_reason: Option<String>,
    /// The forbidden names, comma-separated, in the pod's order.
    pub forbidden_detail: Option<String>,
}

/// The minor of a PSA policy version (`v1.<minor>`), or null for `latest`.
#[napi]
pub fn sysctl_parse_policy_version(env: Env, policy_version: String) -> napi::Result<Option<u32>> {
    throwing(&env, || {
        parse_policy_version(&policy_version).map_err(|e| err(ErrorCode::InvalidArg, e))
    })
}

/// The baseline check of a pod's sysctl names at `policyVersion` (`latest` or `v1.<minor>`).
#[napi]
pub fn sysctl_check_baseline(
    env: Env,
    names: Vec<String>,
    policy_version: String,
) -> napi::Result<SysctlBaselineCheck> {
    throwing(&env, || {
        let minor =
            parse_policy_version(&policy_version).map_err(|e| err(ErrorCode::InvalidArg, e))?;
        let detail = check_baseline(names.iter().map(String::as_str), minor);
        Ok(SysctlBaselineCheck {
            allowed: detail.is_none(),
            forbidden_reason: detail
                .as_ref()
                .map(|_| BASELINE_FORBIDDEN_REASON.to_string()),
            forbidden_detail: detail,
        })
    })
}
