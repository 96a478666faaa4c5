//! The host's two tools, called by the relay only: [`START_TOOL`]
//! (arguments [`StartSandbox`], result [`Started`]) and [`DESTROY_TOOL`]
//! ([`DestroySandbox`] → [`Destroyed`]). The result is the JSON of the
//! answer; a failed start is a result too (`state: failed`, with why).

use std::sync::Arc;

use runner_proto::sandbox::{Capacity, DestroySandbox, StartSandbox, DESTROY_TOOL, START_TOOL};
use runner_proto::ws::ToolSpec;
use serde_json::Value;

use super::Host;
use crate::call::{CallScope, ToolOutcome};
use crate::tools::hosted::HostedTools;
use crate::tools::tool::{parse, schema_of, Running};

/// The tools of a [`Host`].
pub struct HostTools(pub Arc<Host>);

impl HostedTools for HostTools {
    fn catalogue(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: START_TOOL.to_owned(),
                description: "Start a sandbox: an isolated, temporary runner that dials the relay with a single-use token (called by the relay).".to_owned(),
                input_schema: schema_of::<StartSandbox>(),
            },
            ToolSpec {
                name: DESTROY_TOOL.to_owned(),
                description: "Destroy a sandbox: stop every process in it and remove its files (called by the relay; idempotent).".to_owned(),
                input_schema: schema_of::<DestroySandbox>(),
            },
        ]
    }

    fn call<'a>(&'a self, tool: &'a str, args: Value, _scope: &'a CallScope) -> Running<'a> {
        Box::pin(async move {
            let result = match tool {
                START_TOOL => match parse::<StartSandbox>(args) {
                    // On a task of its own: a call cut short (timeout,
                    // cancel) must not leave a sandbox half made.
                    Ok(request) => {
                        let host = Arc::clone(&self.0);
                        match tokio::spawn(async move { host.start_sandbox(request).await }).await {
                            Ok(started) => serde_json::to_value(started),
                            Err(error) => {
                                return ToolOutcome::error(format!("starting the sandbox: {error}"))
                            }
                        }
                    }
                    Err(message) => return ToolOutcome::error(message),
                },
                DESTROY_TOOL => match parse::<DestroySandbox>(args) {
                    Ok(request) => serde_json::to_value(self.0.destroy(&request.sandbox_id).await),
                    Err(message) => return ToolOutcome::error(message),
                },
                other => {
                    return ToolOutcome::error(format!("this sandbox host has no tool {other:?}"))
                }
            };
            match result {
                Ok(value) => ToolOutcome::ok(value),
                Err(error) => ToolOutcome::error(format!("encoding the answer: {error}")),
            }
        })
    }

    fn sandbox_capacity(&self) -> Option<Capacity> {
        Some(self.0.capacity())
    }
}
