//! The async tasks: each runs one core call on the thread pool and resolves with its outcome
//! (outcomes carry errors, so a task itself never fails).

use napi::bindgen_prelude::{AsyncTask, ToNapiValue, TypeName};
use napi::{Env, Task};

/// What a task resolves with: a JS value built on the thread pool.
pub trait Outcome: ToNapiValue + TypeName + Send + 'static {}

impl<T: ToNapiValue + TypeName + Send + 'static> Outcome for T {}

/// One core call, run once on the thread pool.
pub struct CoreTask<T>(Option<Box<dyn FnOnce() -> T + Send>>);

impl<T: Outcome> CoreTask<T> {
    pub fn run(call: impl FnOnce() -> T + Send + 'static) -> AsyncTask<Self> {
        AsyncTask::new(Self(Some(Box::new(call))))
    }
}

impl<T: Outcome> Task for CoreTask<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<T> {
        // napi computes a task once; a second run would be a binding bug, not a panic.
        let call = self
            .0
            .take()
            .ok_or_else(|| napi::Error::from_reason("a user namespace task ran twice"))?;
        Ok(call())
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<T> {
        Ok(output)
    }
}
