//! The process layer under the tools: starting a call's process
//! ([`spawn`], with its cgroup where the runner may make one: [`cgroup`]),
//! reading its output ([`pipes`], [`capture`], [`kept`]), stopping its
//! whole process tree on timeout or cancel ([`tree`]), and stopping what a
//! killed previous run left ([`leftovers`], by the [`owner`] id).
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
pub mod tree;

pub use environment::keep_secrets_from;
pub use run::Finished;
pub use spawn::describe;
pub use spec::Isolation;
pub use tree::KILL_GRACE;

use crate::call::CallScope;
use crate::gate::CheckedCommand;

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
