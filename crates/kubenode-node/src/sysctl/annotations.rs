//! Binding for the alpha sysctl annotations of `kubenode-sysctl`: parsing one annotation, and
//! converting both (with their field errors) in one call per pod.

use std::collections::HashSet;

use kubenode_sysctl::{parse_sysctl_annotation, sysctls_from_annotations};
// Imported under its JS name, which the generated typings then use.
use kubenode_sysctl::Sysctl as SysctlPair;
use napi_derive::napi;

use super::convert::field_errors;
use super::types::SysctlFieldError;

#[napi(object)]
pub struct SysctlAnnotationParse {
    pub sysctls: Vec<SysctlPair>,
    /// Upstream's message when an item is not `name=value` (then `sysctls` is empty).
    pub error: Option<String>,
}

#[napi(object)]
pub struct SysctlAnnotationConversion {
    /// Safe then unsafe.
    pub sysctls: Vec<SysctlPair>,
    pub errors: Vec<SysctlFieldError>,
}

fn pairs(v: Vec<(String, String)>) -> Vec<SysctlPair> {
    v.into_iter().map(SysctlPair::from).collect()
}

/// `SysctlsFromPodAnnotation` for one annotation value.
#[napi]
pub fn sysctl_parse_annotation(value: String) -> SysctlAnnotationParse {
    match parse_sysctl_annotation(&value) {
        Ok(v) => SysctlAnnotationParse {
            sysctls: pairs(v),
            error: None,
        },
        Err(e) => SysctlAnnotationParse {
            sysctls: Vec::new(),
            error: Some(e.to_string()),
        },
    }
}

/// A safe-sysctl list, converted once and reused for many pods.
#[napi(js_name = "SysctlSafeSet")]
pub struct JsSysctlSafeSet {
    names: HashSet<String>,
}

#[napi]
impl JsSysctlSafeSet {
    #[napi(constructor)]
    pub fn new(names: Vec<String>) -> Self {
        Self {
            names: names.into_iter().collect(),
        }
    }

    /// Both annotations (absent as null) in the `securityContext.sysctls` form, with the field
    /// errors upstream's validation gives; sysctls in this set may be listed as safe.
    #[napi]
    pub fn convert_annotations(
        &self,
        safe: Option<String>,
        unsafe_sysctls: Option<String>,
    ) -> SysctlAnnotationConversion {
        let (sysctls, errors) =
            sysctls_from_annotations(safe.as_deref(), unsafe_sysctls.as_deref(), |n| {
                self.names.contains(n)
            });
        SysctlAnnotationConversion {
            sysctls: pairs(sysctls),
            errors: field_errors(errors),
        }
    }
}
