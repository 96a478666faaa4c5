//! The tools this runner offers, their catalogue, and the dispatch of a call.
//!
//! Every tool gets a [`ToolContext`] (workspace boundary, permission file,
//! the environment's policy, the [`Toolbox`] of what this machine has) and a
//! [`CallScope`] (call id, cancellation, deadline, and where streamed output
//! goes), and answers with a [`ToolOutcome`]; it never panics or returns
//! `Err` to its caller: failures are part of the answer, so one bad call
//! cannot take the runner down. Whether a call may run is decided by the
//! gate ([`crate::gate`]); processes are started by [`crate::exec`], from
//! the gate's checked commands only.

pub mod argv;
pub mod browser;
pub mod claude;
pub mod command;
pub mod context;
pub mod files;
pub mod hosted;
pub mod http;
pub mod link_local;
pub mod mcp;
pub mod mcp_http;
pub mod no_follow;
pub mod ping;
pub mod registry;
pub mod search;
pub mod shell;
pub mod tool;
pub mod toolbox;

use std::time::Duration;

use serde_json::Value;

pub use crate::call::{
    CallScope, Outbound, OutboundQueue, OutputSink, QueueClosed, Queued, Room, ToolOutcome,
};
pub use context::ToolContext;
use tool::Running;
pub use toolbox::Toolbox;

/// The catalogue of built-in tools and tool binaries on PATH now (without
/// MCP servers, which need the runner's config and a runtime).
pub fn catalogue() -> Vec<runner_proto::ws::ToolSpec> {
    Toolbox::discovered().catalogue()
}

/// Runs one call to completion, cancellation, or its deadline.
pub async fn dispatch(
    tool: &str,
    args: Value,
    approval: Option<&str>,
    context: &ToolContext,
    scope: &CallScope,
) -> ToolOutcome {
    if let Err(reason) = context.gate().tool(tool, approval) {
        return ToolOutcome::error(reason);
    }
    if !args.is_object() {
        return ToolOutcome::error("args must be a JSON object");
    }
    // Each tool's future is boxed on its own ([`Running`]): the call task
    // holds this future, so it must not be as large as the largest tool's
    // state for every call, a `ping` included.
    let work: Running<'_> = match (context.toolbox.hosted(), registry::find(tool)) {
        (Some(hosted), _) => hosted.call(tool, args, scope),
        (None, Some(entry)) => entry.call(args, context, scope),
        (None, None) if tool.contains(mcp::SEPARATOR) => match context.toolbox.mcp() {
            Some(manager) => Box::pin(manager.call(tool, args, scope)),
            None => Box::pin(std::future::ready(ToolOutcome::error(format!(
                "this runner has no tool {tool:?}"
            )))),
        },
        (None, None) => Box::pin(std::future::ready(ToolOutcome::error(format!(
            "this runner has no tool {tool:?}"
        )))),
    };
    // Tools that do not watch the deadline themselves are cut off here; the
    // process tools stop their process trees before this fires.
    let grace = crate::exec::KILL_GRACE + Duration::from_secs(3);
    tokio::select! {
        outcome = work => outcome,
        () = tokio::time::sleep(scope.timeout + grace) => {
            ToolOutcome::error(scope.limit.timed_out())
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// Every call's task holds this future: it must not carry the largest
    /// tool's state inline (it would be copied on spawn and again on
    /// completion, for a `ping` too).
    #[tokio::test]
    async fn the_dispatch_future_is_small_whatever_the_tool() {
        let root = tempfile::tempdir().expect("tempdir");
        let context = ToolContext::allowing_all(root.path());
        let scope = CallScope {
            call_id: "c1".to_owned(),
            cancel: CancellationToken::new(),
            timeout: Duration::from_secs(5),
            limit: crate::call::Limit::call(5),
            output: None,
            binary_output: true,
        };
        let args = serde_json::json!({"command": "true"});
        let future = dispatch("shell", args.clone(), None, &context, &scope);
        // Debug builds lay futures out larger than release builds; the
        // bound holds for both, and an inline shell state breaks it in both.
        let size = std::mem::size_of_val(&future);
        assert!(size <= 2048, "dispatch future is {size} bytes");
        // It still runs the tool.
        let outcome = future.await;
        assert_eq!(outcome.exit_code, Some(0), "{:?}", outcome.error);
        let pong = dispatch("ping", args.clone(), None, &context, &scope).await;
        assert_eq!(pong.result, args);
    }
}
