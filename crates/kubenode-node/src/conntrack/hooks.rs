//! Test hooks on the `Conntrack` class, only in a build with the `test-hooks` feature (the
//! tests' build, `npm run build:test-hooks`); release builds have neither the methods nor the
//! core's hooks behind them.

use kubenode_conntrack::{Fault as ConntrackFault, Session};
use napi_derive::napi;

use super::handle::JsConntrack;
use crate::errors::NativeError;

impl JsConntrack {
    /// Changes the session's test hooks. Never waits for a running task (that would block the
    /// JS thread for a whole dump): reports `busy` instead.
    fn with_hooks(&self, change: impl FnOnce(&mut Session)) -> Option<NativeError> {
        self.inner
            .try_with(|s| {
                change(s);
                Ok(())
            })
            .err()
            .map(|e| (&e).into())
    }
}

#[napi]
impl JsConntrack {
    /// Test hook: the next `count` faults of `kind` (0 disarms it). Never waits for a running
    /// task: reports `busy`. Returns the failure, if any, like a task outcome's `error`.
    // The kinds as their string values: the declared enum has no runtime object to name them.
    #[napi(ts_args_type = "kind: `${ConntrackFault}`, count: number")]
    pub fn inject_fault(&self, kind: ConntrackFault, count: u32) -> Option<NativeError> {
        self.with_hooks(|s| s.ct.faults_mut().set(kind, count))
    }

    /// Test hook: pins the cleanup's targeted-vs-full choice (`true`: targeted whenever the
    /// handle may); none leaves it to the measured costs. Returns the failure like `injectFault`.
    #[napi]
    pub fn pin_cost_choice(&self, prefer_targeted: Option<bool>) -> Option<NativeError> {
        self.with_hooks(|s| s.cleaner.pin_choice(prefer_targeted))
    }
}
