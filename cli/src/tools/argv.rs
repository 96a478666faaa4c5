//! `git`, `kubectl`, `helm`, `docker`, `terraform`: a binary run with an
//! argv, no shell in between, so nothing in an argument is ever
//! interpreted (`; rm -rf /` is just a strange file name to git).
//!
//! Announced only where the binary is on PATH (see [`super::catalogue`]).
//! The command line (`kubectl get pods`) is checked against the runner's
//! permission file like a shell command before anything runs.

use serde_json::{json, Value};

use super::process::{self, Join, Spec};
use super::shell::{scope_with_own_timeout, workdir};
use super::{optional_string_arg, optional_strings_arg, CallScope, ToolContext, ToolOutcome};

/// The argv tools, by binary name.
pub const TOOLS: [&str; 5] = ["git", "kubectl", "helm", "docker", "terraform"];

pub fn spec(name: &str) -> runner_proto::ws::ToolSpec {
    runner_proto::ws::ToolSpec {
        name: name.to_owned(),
        description: format!(
            "Run {name} with these arguments (no shell: arguments are passed as they are); output streams as produced."
        ),
        input_schema: json!({
            "type": "object",
            "required": ["args"],
            "additionalProperties": false,
            "properties": {
                "args": {"type": "array", "items": {"type": "string"}, "description": format!("Arguments after `{name}`, e.g. [\"status\"]")},
                "workdir": {"type": "string", "description": "Working directory (relative: inside the workspace)"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "stdin": {"type": "string"},
                "timeout_s": {"type": "integer", "minimum": 1}
            }
        }),
    }
}

pub async fn run(name: &str, args: Value, context: &ToolContext, scope: &CallScope) -> ToolOutcome {
    match run_inner(name, &args, context, scope).await {
        Ok(outcome) => outcome,
        Err(message) => ToolOutcome::error(message),
    }
}

async fn run_inner(
    name: &str,
    args: &Value,
    context: &ToolContext,
    scope: &CallScope,
) -> Result<ToolOutcome, String> {
    let arguments = optional_strings_arg(args, "args")?
        .ok_or_else(|| "argument \"args\" is required (an array of strings)".to_owned())?;
    let mut command_line = vec![name.to_owned()];
    command_line.extend(arguments.iter().cloned());
    if let Some(permissions) = &context.permissions {
        let decision = permissions.check_argv(&command_line);
        if !decision.allowed {
            return Err(format!(
                "denied by the runner's permission file: {}",
                decision.summary()
            ));
        }
    }
    let env = process::parse_env(args)?;
    if let Some(permissions) = &context.permissions {
        super::check_env(permissions, &env)?;
    }
    let program = context.toolbox.binary(name).ok_or_else(|| {
        format!("{name} is not installed on this runner's machine (not found on PATH)")
    })?;
    let spec = Spec {
        arg0: None,
        program: program.into_os_string(),
        args: arguments,
        workdir: workdir(args, context)?,
        env,
        stdin: optional_string_arg(args, "stdin")?.map(|text| text.as_bytes().to_vec()),
        join: Join::Wrapper,
    };
    let scope = scope_with_own_timeout(args, scope)?;
    let finished = process::run(spec, context, &scope).await?;
    Ok(finished.into_outcome(context.boundary.root()))
}
