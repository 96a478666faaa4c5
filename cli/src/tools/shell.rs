//! The `shell` tool: `bash -c COMMAND` in the workspace, checked against the
//! permission file by the gate, run through [`crate::exec`] (streamed output,
//! bounded result with the full output kept in a file, process tree stopped
//! on timeout or cancel).

use std::collections::HashMap;

use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;

use super::command::{outcome, run_finished};
use super::context::ToolContext;
use super::tool::{Running, Tool};
use crate::call::CallScope;
use crate::gate::CommandLine;

pub struct Shell;

/// The arguments of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    /// Bash script to run
    pub command: String,
    /// Working directory (relative: inside the workspace)
    pub workdir: Option<String>,
    pub env: Option<HashMap<String, String>>,
    /// Text written to the command's standard input
    pub stdin: Option<String>,
    /// Stop the command after this many seconds (at most the call's timeout)
    #[schemars(range(min = 1))]
    pub timeout_s: Option<u64>,
}

impl Tool for Shell {
    type Args = ShellArgs;

    fn name(&self) -> &'static str {
        tools::SHELL
    }

    fn description(&self) -> String {
        "Run a command with bash -c in the workspace; output streams as produced, stdout and stderr apart; long output is cut in the middle and kept whole in a file.".into()
    }

    fn run<'a>(
        &'a self,
        args: ShellArgs,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        Box::pin(async move {
            let checked = context.gate().command(
                CommandLine::Script(args.command),
                "bash",
                args.env.unwrap_or_default(),
                args.workdir.as_deref(),
            );
            let stdin = args.stdin.map(String::into_bytes);
            outcome(run_finished(checked, stdin, args.timeout_s, context, scope).await)
        })
    }
}
