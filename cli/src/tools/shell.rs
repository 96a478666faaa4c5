//! The `shell` tool: `bash -c COMMAND` in the workspace, checked against the
//! permission file first, run through [`super::process`] (streamed output,
//! bounded result with the full output kept in a file, process tree stopped
//! on timeout or cancel).

use serde_json::{json, Value};

use super::process::{self, Spec};
use super::{optional_string_arg, string_arg, CallScope, ToolContext, ToolOutcome};

pub fn spec() -> runner_proto::ws::ToolSpec {
    runner_proto::ws::ToolSpec {
        name: "shell".into(),
        description: "Run a command with bash -c in the workspace; output streams as produced, stdout and stderr apart; long output is cut in the middle and kept whole in a file.".into(),
        input_schema: json!({
            "type": "object",
            "required": ["command"],
            "additionalProperties": false,
            "properties": {
                "command": {"type": "string", "description": "Bash script to run"},
                "workdir": {"type": "string", "description": "Working directory (relative: inside the workspace)"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "stdin": {"type": "string", "description": "Text written to the command's standard input"},
                "timeout_s": {"type": "integer", "minimum": 1, "description": "Stop the command after this many seconds (at most the call's timeout)"}
            }
        }),
    }
}

pub async fn run(args: Value, context: &ToolContext, scope: &CallScope) -> ToolOutcome {
    match run_inner(args, context, scope).await {
        Ok(outcome) => outcome,
        Err(message) => ToolOutcome::error(message),
    }
}

async fn run_inner(
    args: Value,
    context: &ToolContext,
    scope: &CallScope,
) -> Result<ToolOutcome, String> {
    let command = string_arg(&args, "command")?;
    if let Some(permissions) = &context.permissions {
        let decision = permissions.check(command);
        if !decision.allowed {
            return Err(format!(
                "denied by the runner's permission file: {}",
                decision.summary()
            ));
        }
    }
    let workdir = workdir(&args, context)?;
    let env = process::parse_env(&args)?;
    let stdin = optional_string_arg(&args, "stdin")?.map(|text| text.as_bytes().to_vec());
    let scope = scope_with_own_timeout(&args, scope)?;
    let spec = Spec {
        program: "bash".into(),
        args: vec!["-c".to_owned(), command.to_owned()],
        workdir,
        env,
        stdin,
    };
    let finished = process::run(spec, context, &scope).await?;
    Ok(finished.into_outcome(context.boundary.root()))
}

/// `workdir` through the boundary; the workspace root by default.
pub fn workdir(args: &Value, context: &ToolContext) -> Result<std::path::PathBuf, String> {
    match optional_string_arg(args, "workdir")? {
        Some(dir) => context
            .boundary
            .resolve_existing(dir)
            .map_err(|error| format!("workdir: {error}")),
        None => Ok(context.boundary.root().to_path_buf()),
    }
}

/// A tool's own `timeout_s` shortens the call's deadline, never extends it.
pub fn scope_with_own_timeout(args: &Value, scope: &CallScope) -> Result<CallScope, String> {
    let mut scope = scope.clone();
    if let Some(seconds) = super::optional_u64_arg(args, "timeout_s")? {
        scope.timeout = scope
            .timeout
            .min(std::time::Duration::from_secs(seconds.max(1)));
    }
    Ok(scope)
}
