//! The core's nearly-full table rule, called by `TableHealth` at each reading.

use kubenode_conntrack::FullAlarm as ConntrackFullAlarm;
use napi::Env;
use napi_derive::napi;

use super::convert::{to_js, u32_of};
use crate::errors::throwing;

/// The nearly-full table rule for one reading: `raised` is whether the warning stood before it;
/// the result says whether it stands now and, on a new crossing, the warning's message. Throws
/// the typed error for a threshold outside 0 (off) to 1.
#[napi]
pub fn conntrack_full_alarm(
    env: Env,
    raised: bool,
    count: f64,
    max: f64,
    threshold: f64,
) -> napi::Result<ConntrackFullAlarm> {
    throwing(&env, || {
        let (count, max) = (u32_of("count", count)?, u32_of("max", max)?);
        kubenode_conntrack::full_alarm(raised, count, max, threshold).map_err(to_js)
    })
}
