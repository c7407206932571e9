//! Binding for the SysctlPolicy / SysctlNamePolicy rules of `kubenode-sysctl`: a policy is
//! compiled once into a native object, then each pod is admitted or validated in one call
//! (its names, and values, as two arrays).

use kubenode_sysctl::{
    bad_value_message, integer_fields_source, not_allowed_message, value_syntax, SysctlNamePolicy,
    SysctlPolicy,
};
// Imported under their JS names, which the generated typings then use.
use kubenode_sysctl::{
    NamePolicyRules as SysctlNamePolicyRules, PolicyEntry as SysctlPolicyEntryInput,
    PolicyRule as SysctlPolicyRule, ValueSyntax as SysctlPolicySyntax,
};
use napi::Env;
use napi_derive::napi;

use super::convert::field_errors;
use super::types::SysctlFieldError;
use crate::errors::{err, throwing, ErrorCode, Result};

/// The value syntax as regex sources RE2 and JavaScript read alike, and its limits.
#[napi]
pub fn sysctl_policy_syntax() -> SysctlPolicySyntax {
    value_syntax()
}

/// Whole-value regex source for `count` whitespace-separated integer fields.
#[napi]
pub fn sysctl_policy_integer_fields_source(count: u32) -> String {
    integer_fields_source(count as usize)
}

/// Kubelet-style text for a name a policy refuses.
#[napi]
pub fn sysctl_policy_not_allowed_message(name: String) -> String {
    not_allowed_message(&name)
}

/// Kubelet-style text for a value a policy refuses; `detail` says which rule.
#[napi]
pub fn sysctl_policy_bad_value_message(name: String, detail: String) -> String {
    bad_value_message(&name, &detail)
}

fn pairs<'a>(
    names: &'a [String],
    values: &'a [String],
) -> Result<impl Iterator<Item = (&'a str, &'a str)>> {
    if names.len() != values.len() {
        return Err(err(
            ErrorCode::InvalidArg,
            format!(
                "names and values differ in length ({} and {})",
                names.len(),
                values.len()
            ),
        ));
    }
    Ok(names
        .iter()
        .map(String::as_str)
        .zip(values.iter().map(String::as_str)))
}

/// A compiled SysctlPolicy (alternative 2 of the pod-level sysctl design).
#[napi(js_name = "SysctlPolicyCore")]
pub struct JsSysctlPolicy {
    inner: SysctlPolicy,
}

#[napi]
impl JsSysctlPolicy {
    /// Compiles the entries; errors name the first bad one by the caller's `path` to the list
    /// (`<path>[i]…`).
    #[napi(constructor)]
    pub fn new(env: Env, entries: Vec<SysctlPolicyEntryInput>, path: String) -> napi::Result<Self> {
        throwing(&env, || {
            let inner =
                SysctlPolicy::new_at(&entries, &path).map_err(|e| err(ErrorCode::InvalidArg, e))?;
            Ok(Self { inner })
        })
    }

    /// The alpha annotation form (`name`, `name=min:1:max:9`, `name=values:a b`).
    #[napi(factory)]
    pub fn from_annotation(env: Env, value: String) -> napi::Result<Self> {
        throwing(&env, || {
            let inner =
                SysctlPolicy::from_annotation(&value).map_err(|e| err(ErrorCode::InvalidArg, e))?;
            Ok(Self { inner })
        })
    }

    /// One pod: null when admitted, else the message for the first refused sysctl.
    #[napi]
    pub fn admit(
        &self,
        env: Env,
        names: Vec<String>,
        values: Vec<String>,
    ) -> napi::Result<Option<String>> {
        throwing(&env, || Ok(self.inner.admit(pairs(&names, &values)?)))
    }

    /// True when an entry matches `name`.
    #[napi]
    pub fn matches(&self, name: String) -> bool {
        self.inner.matches(&name)
    }

    /// One pod: a field error per refused sysctl.
    #[napi]
    pub fn validate(
        &self,
        env: Env,
        names: Vec<String>,
        values: Vec<String>,
    ) -> napi::Result<Vec<SysctlFieldError>> {
        throwing(&env, || {
            Ok(field_errors(self.inner.validate(pairs(&names, &values)?)))
        })
    }

    /// The compiled entries in order, with their detail texts.
    #[napi]
    pub fn rules(&self) -> Vec<SysctlPolicyRule> {
        self.inner.rules()
    }
}

/// A compiled SysctlNamePolicy (alternative 1 of the pod-level sysctl design).
#[napi(js_name = "SysctlNamePolicyCore")]
pub struct JsSysctlNamePolicy {
    inner: SysctlNamePolicy,
}

#[napi]
impl JsSysctlNamePolicy {
    #[napi(constructor)]
    pub fn new(env: Env, allowed: Vec<String>) -> napi::Result<Self> {
        throwing(&env, || {
            let inner =
                SysctlNamePolicy::new(&allowed).map_err(|e| err(ErrorCode::InvalidArg, e))?;
            Ok(Self { inner })
        })
    }

    /// The alpha PodSecurityPolicy annotation form (`a.b,c.*`).
    #[napi(factory)]
    pub fn from_annotation(env: Env, value: String) -> napi::Result<Self> {
        throwing(&env, || {
            let inner = SysctlNamePolicy::from_annotation(&value)
                .map_err(|e| err(ErrorCode::InvalidArg, e))?;
            Ok(Self { inner })
        })
    }

    #[napi]
    pub fn allows(&self, name: String) -> bool {
        self.inner.allows(&name)
    }

    /// One pod: null when admitted, else the message for the first refused name.
    #[napi]
    pub fn admit(&self, names: Vec<String>) -> Option<String> {
        self.inner.admit(names.iter().map(String::as_str))
    }

    /// One pod: a Forbidden field error per refused name.
    #[napi]
    pub fn validate(&self, names: Vec<String>) -> Vec<SysctlFieldError> {
        field_errors(self.inner.validate(names.iter().map(String::as_str)))
    }

    #[napi]
    pub fn rules(&self) -> SysctlNamePolicyRules {
        self.inner.rules()
    }
}
