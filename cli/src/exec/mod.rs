//! The process layer under the tools: starting a call's process
//! ([`spawn`], with its cgroup where the runner may make one: [`cgroup`]),
//! reading its output ([`pipes`], [`capture`], [`kept`]), stopping its
//! whole process tree on timeout or cancel ([`tree`]), and stopping what a
//! killed previous run left ([`leftovers`], by the [`owner`] id); the
//! namespaces its processes see the runner's files hidden in
//! ([`tool_view`]).
//!
//! It runs nothing but a [`CheckedCommand`], which only the gate
//! ([`crate::gate`]) makes, and imports nothing from `tools/`: the tools
//! sit on top of it.

pub mod capture;
pub mod cgroup;
mod environment;
pub mod kept;
pub mod leftovers;
pub mod owner;
mod pipes;
mod plan;
mod procfs;
pub mod program;
mod run;
mod spawn;
mod spec;
pub mod throttle;
pub mod tool_view;
pub mod tree;

pub use environment::keep_secrets_from;
pub use run::Finished;
pub use spawn::describe;
pub use spec::Isolation;
pub use tree::KILL_GRACE;

use crate::call::{CallScope, CALL_OWNER_VAR};
use crate::gate::CheckedCommand;

/// A command for a tool's own process that is not a call's (the browser):
/// in the tools' view where one is installed ([`tool_view::command_in_view`]),
/// without the runner's secrets in its environment, and carrying the
/// runner's owner id, so that the next start stops it ([`leftovers`]) when
/// this runner is killed before it can.
pub fn tool_process(program: &std::path::Path) -> Result<tokio::process::Command, String> {
    let mut command = tool_view::command_in_view(program)?;
    tool_environment(&mut command);
    Ok(command)
}

/// What the environment of every process a tool starts (a call's, the
/// browser) holds: none of the runner's secrets, and the runner's owner
/// id, by which the next start finds what a killed runner left.
fn tool_environment(command: &mut tokio::process::Command) {
    keep_secrets_from(command);
    if let Some(owner) = owner::owner() {
        command.env(CALL_OWNER_VAR, owner);
    }
}

/// Makes the namespace tools run in with the runner's files hidden
/// ([`tool_view`]), and checks that a process can be started in it the
/// way calls are; not yet [`tool_view::install`]ed.
pub async fn prepare_tool_view(plan: tool_view::Plan) -> Result<tool_view::View, String> {
    if !cfg!(target_os = "linux") {
        return Err("only Linux has the namespaces this takes".to_owned());
    }
    let view = tool_view::View::prepare(plan).await?;
    spawn::try_view(&view).await?;
    Ok(view)
}

/// Runs `command` to completion, cancellation or the call's deadline, with
/// `stdin` written to it, its processes kept together as `isolation` asks.
pub async fn run(
    command: CheckedCommand,
    stdin: Option<Vec<u8>>,
    scope: &CallScope,
    isolation: Isolation,
) -> Result<Finished, String> {
    let workspace = command.workspace().to_owned();
    let spec = plan::spec(command, stdin);
    run::run_spec(spec, &workspace, scope, isolation).await
}
