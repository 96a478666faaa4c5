//! Running a command the gate checked as a tool's call: the tool's own
//! `timeout_s`, then the standard result of a process tool.

use std::path::PathBuf;

use super::context::ToolContext;
use crate::call::{CallScope, ToolOutcome};
use crate::exec::{self, Finished};
use crate::gate::CheckedCommand;

/// The standard result of a process tool, from what [`run_finished`]
/// answered.
pub fn outcome(finished: Result<(Finished, PathBuf), String>) -> ToolOutcome {
    match finished {
        Ok((finished, workspace)) => finished.into_outcome(&workspace),
        Err(message) => ToolOutcome::error(message),
    }
}

/// Runs a command the gate checked (or answers why it did not pass), with
/// the tool's own `timeout_s`: how the process ended, and the workspace
/// its kept output files are under.
pub async fn run_finished(
    checked: Result<CheckedCommand, String>,
    stdin: Option<Vec<u8>>,
    timeout_s: Option<u64>,
    context: &ToolContext,
    scope: &CallScope,
) -> Result<(Finished, PathBuf), String> {
    let checked = checked?;
    let workspace = checked.workspace().to_owned();
    // A tool's own `timeout_s` shortens the call's deadline, never extends it.
    let scope = scope.shortened_to(timeout_s);
    let finished = exec::run(checked, stdin, &scope, context.isolation).await?;
    Ok((finished, workspace))
}
