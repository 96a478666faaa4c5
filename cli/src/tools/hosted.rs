//! Tools a runner serves *instead of* the built-in ones: a sandbox host
//! (`runner sandbox-host`) announces only its own two tools and answers
//! them itself. Defined here, implemented elsewhere ([`crate::sandbox`]),
//! so the toolbox and the dispatch do not depend on what serves them.

use std::future::Future;
use std::pin::Pin;

use runner_proto::sandbox::Capacity;
use runner_proto::ws::ToolSpec;
use serde_json::Value;

use crate::call::{CallScope, ToolOutcome};

/// A hosted call on its way (the same shape as a built-in tool's, spelt
/// out here so this module stays below the toolbox).
pub type Running<'a> = Pin<Box<dyn Future<Output = ToolOutcome> + Send + 'a>>;

/// A runner variant's whole catalogue and its calls.
pub trait HostedTools: Send + Sync {
    /// Everything announced: no built-in tool, no binary on PATH.
    fn catalogue(&self) -> Vec<ToolSpec>;

    /// Runs one call; an unknown tool is an error answer.
    fn call<'a>(&'a self, tool: &'a str, args: Value, scope: &'a CallScope) -> Running<'a>;

    /// What the hello and every heartbeat report, when this is a sandbox host.
    fn sandbox_capacity(&self) -> Option<Capacity>;
}
