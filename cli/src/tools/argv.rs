//! `git`, `kubectl`, `helm`, `docker`, `terraform`: a binary run with an
//! argv, no shell in between, so nothing in an argument is ever
//! interpreted (`; rm -rf /` is just a strange file name to git).
//!
//! Announced only where the binary is on PATH (see [`Tool::offered`]).
//! The command line (`kubectl get pods`) is checked against the runner's
//! permission file by the gate, like a shell command, before anything runs.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::command::{outcome, run_finished};
use super::context::ToolContext;
use super::tool::{Running, Tool};
use super::toolbox::Toolbox;
use crate::call::{CallScope, ToolOutcome};
use crate::gate::CommandLine;

/// One argv tool: the binary of this name.
pub struct Argv(pub &'static str);

/// The arguments of an argv tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArgvArgs {
    /// Arguments after the program's name, e.g. ["status"]
    pub args: Vec<String>,
    /// Working directory (relative: inside the workspace)
    pub workdir: Option<String>,
    pub env: Option<HashMap<String, String>>,
    pub stdin: Option<String>,
    #[schemars(range(min = 1))]
    pub timeout_s: Option<u64>,
}

impl Tool for Argv {
    type Args = ArgvArgs;

    fn name(&self) -> &'static str {
        self.0
    }

    fn description(&self) -> String {
        format!(
            "Run {} with these arguments (no shell: arguments are passed as they are); output streams as produced.",
            self.0
        )
    }

    fn offered(&self, toolbox: &Toolbox) -> bool {
        toolbox.binary(self.0).is_some()
    }

    fn run<'a>(
        &'a self,
        args: ArgvArgs,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        let name = self.0;
        Box::pin(async move {
            let Some(program) = context.toolbox.binary(name) else {
                return ToolOutcome::error(format!(
                    "{name} is not installed on this runner's machine (not found on PATH)"
                ));
            };
            let line = CommandLine::Program {
                path: program,
                args: args.args,
            };
            let checked = context.gate().command(
                line,
                name,
                args.env.unwrap_or_default(),
                args.workdir.as_deref(),
            );
            let stdin = args.stdin.map(String::into_bytes);
            outcome(run_finished(checked, stdin, args.timeout_s, context, scope).await)
        })
    }
}
