//! Binding for the ServiceCIDR guard (`kubenode_cidr::guard`): the file's checks, the verdict of
//! one request, and the texts the rendered admission policy reuses.

use kubenode_cidr::guard::{API_SERVER_USER, DEFAULT_PROTECTED_MESSAGE, DEFAULT_SERVICE_CIDR};
use kubenode_cidr::{Family, Guard, GuardRequest, Operation};
use napi::Env;
use napi_derive::napi;

use crate::errors::{err, throwing, ErrorCode};

/// A guard file's lists.
#[napi(object)]
pub struct ServiceCidrGuardConfig {
    /// Allowed parent prefixes of IPv4 ServiceCIDRs.
    pub ipv4: Vec<String>,
    /// Allowed parent prefixes of IPv6 ServiceCIDRs.
    pub ipv6: Vec<String>,
    /// Prefixes no ServiceCIDR may overlap.
    pub forbidden: Vec<String>,
    /// Refuse creating, deleting or re-addressing the default ServiceCIDR.
    pub protect_default: bool,
}

/// The fixed texts and names of the guard.
#[napi(object)]
pub struct ServiceCidrGuardTexts {
    pub api_server_user: String,
    pub default_name: String,
    pub default_protected: String,
    /// Around a CIDR and the forbidden prefix it overlaps: before, between, after.
    pub forbidden_parts: Vec<String>,
}

#[napi]
pub fn servicecidr_guard_texts() -> ServiceCidrGuardTexts {
    ServiceCidrGuardTexts {
        api_server_user: API_SERVER_USER.into(),
        default_name: DEFAULT_SERVICE_CIDR.into(),
        default_protected: DEFAULT_PROTECTED_MESSAGE.into(),
        forbidden_parts: Guard::forbidden_parts().map(String::from).to_vec(),
    }
}

#[napi(js_name = "ServiceCidrGuard")]
pub struct JsServiceCidrGuard {
    inner: Guard,
}

#[napi]
impl JsServiceCidrGuard {
    /// Checks the lists; throws `ERR_KUBENODE_INVALID_ARG` naming the bad entry.
    #[napi(constructor)]
    pub fn new(env: Env, config: ServiceCidrGuardConfig) -> napi::Result<Self> {
        throwing(&env, || {
            Guard::new(
                &config.ipv4,
                &config.ipv6,
                &config.forbidden,
                config.protect_default,
            )
            .map(|inner| Self { inner })
            .map_err(|m| err(ErrorCode::InvalidArg, m))
        })
    }

    /// The lists as checked (canonical text).
    #[napi]
    pub fn config(&self) -> ServiceCidrGuardConfig {
        let text = |v: &[kubenode_cidr::Prefix]| v.iter().map(|p| p.to_string()).collect();
        ServiceCidrGuardConfig {
            ipv4: text(self.inner.allowed(Family::V4)),
            ipv6: text(self.inner.allowed(Family::V6)),
            forbidden: text(self.inner.forbidden()),
            protect_default: self.inner.protect_default(),
        }
    }

    /// The refusal of a CIDR of `family` (`IPv4`/`IPv6`) outside the allowed prefixes: the
    /// text before the CIDR and after it.
    #[napi]
    pub fn not_allowed_parts(&self, env: Env, family: String) -> napi::Result<Vec<String>> {
        throwing(&env, || {
            let f = match family.as_str() {
                "IPv4" => Family::V4,
                "IPv6" => Family::V6,
                _ => return Err(err(ErrorCode::InvalidArg, "family must be IPv4 or IPv6")),
            };
            let (a, b) = self.inner.not_allowed_parts(f);
            Ok(vec![a, b])
        })
    }

    /// null when the request is allowed, else the refusal. `operation`: CREATE, UPDATE or DELETE.
    #[napi]
    pub fn decide(
        &self,
        env: Env,
        operation: String,
        name: String,
        cidrs: Vec<String>,
        old_cidrs: Vec<String>,
        username: String,
    ) -> napi::Result<Option<String>> {
        throwing(&env, || {
            let operation = match operation.as_str() {
                "CREATE" => Operation::Create,
                "UPDATE" => Operation::Update,
                "DELETE" => Operation::Delete,
                _ => {
                    return Err(err(
                        ErrorCode::InvalidArg,
                        "operation must be CREATE, UPDATE or DELETE",
                    ))
                }
            };
            Ok(self.inner.decide(&GuardRequest {
                operation,
                name: &name,
                cidrs: &cidrs,
                old_cidrs: &old_cidrs,
                username: &username,
            }))
        })
    }
}
