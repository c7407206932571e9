//! Binding for kubenode-conntrack: a `Conntrack` handle whose netlink work runs as AsyncTasks.
//! Task outcomes carry `error: NativeError` (`crate::errors`), since a Task can only reject
//! with a plain status; the TypeScript façade turns them into typed errors. Every rule and message
//! is the core's: `types` are the JS shapes, `convert` maps them, `handle` is the class,
//! `tasks` run off the JS thread, `events` is the event stream.

mod convert;
mod events;
mod handle;
mod health;
#[cfg(feature = "test-hooks")]
mod hooks;
mod protocols;
mod tasks;
mod types;
