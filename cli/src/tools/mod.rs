//! The tools this runner offers, their catalogue, and the dispatch of a call.
//!
//! Every tool gets a [`ToolContext`] (workspace boundary, permission file,
//! the environment's policy) and a cancellation token, and answers with a
//! [`ToolOutcome`]; it never panics or returns `Err` to its caller: failures
//! are part of the answer, so one bad call cannot take the runner down.

pub mod capture;
pub mod files;
pub mod shell;
pub mod workspace;

use std::sync::Arc;
use std::time::Duration;

use runner_policy::PermissionSet;
use runner_proto::ws::{Policy, ToolAccess, ToolSpec};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use workspace::Boundary;

/// What every tool call can see.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub boundary: Boundary,
    /// The local permission file; `None`: every command allowed (SPEC §5).
    pub permissions: Option<Arc<PermissionSet>>,
    /// The environment's policy as the relay sent it.
    pub policy: Arc<Policy>,
}

/// The answer of a tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutcome {
    pub result: Value,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

impl ToolOutcome {
    pub fn ok(result: Value) -> ToolOutcome {
        ToolOutcome {
            result,
            exit_code: None,
            error: None,
        }
    }

    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            result: Value::Null,
            exit_code: None,
            error: Some(message.into()),
        }
    }
}

/// The catalogue announced in `hello`.
pub fn catalogue() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "ping".into(),
            description: "Echo the arguments back without running anything (health probe).".into(),
            input_schema: json!({"type": "object"}),
        },
        ToolSpec {
            name: "shell".into(),
            description: "Run a command with bash -c in the workspace; returns stdout, stderr and the exit code.".into(),
            input_schema: json!({
                "type": "object",
                "required": ["command"],
                "properties": {
                    "command": {"type": "string", "description": "Bash script to run"},
                    "workdir": {"type": "string", "description": "Working directory (relative: inside the workspace)"},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}}
                }
            }),
        },
        ToolSpec {
            name: "file_read".into(),
            description: "Read a file (binary-safe: non-UTF-8 content comes back base64-encoded).".into(),
            input_schema: json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 0}
                }
            }),
        },
        ToolSpec {
            name: "file_write".into(),
            description: "Write a file atomically (create, overwrite or append).".into(),
            input_schema: json!({
                "type": "object",
                "required": ["path", "content"],
                "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"},
                    "encoding": {"enum": ["utf-8", "base64"]},
                    "mode": {"enum": ["overwrite", "create", "append"]}
                }
            }),
        },
    ]
}

/// Whether the environment's policy lets `tool` run (the relay checks this
/// first; the runner checks again so a compromised relay cannot widen it).
pub fn policy_allows(policy: &Policy, tool: &str) -> Result<(), String> {
    if tool == "ping" {
        return Ok(());
    }
    if let ToolAccess::List { tools } = &policy.tools {
        if !tools.iter().any(|t| t == tool) {
            return Err(format!(
                "tool {tool:?} is not allowed by the environment's policy"
            ));
        }
    }
    if policy.approval_required.iter().any(|t| t == tool) {
        return Err(format!(
            "tool {tool:?} needs a person's approval and cannot be called directly"
        ));
    }
    Ok(())
}

/// Runs one call to completion, cancellation, or `timeout`.
pub async fn dispatch(
    tool: &str,
    args: Value,
    context: &ToolContext,
    cancel: CancellationToken,
    timeout: Duration,
) -> ToolOutcome {
    if let Err(reason) = policy_allows(&context.policy, tool) {
        return ToolOutcome::error(reason);
    }
    if !args.is_object() {
        return ToolOutcome::error("args must be a JSON object");
    }
    match tool {
        "ping" => ToolOutcome::ok(args),
        "shell" => shell::run(args, context, cancel, timeout).await,
        "file_read" => files::read(args, context).await,
        "file_write" => files::write(args, context).await,
        other => ToolOutcome::error(format!("this runner has no tool {other:?}")),
    }
}

/// A string argument, or an error naming it.
pub fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        Some(Value::String(value)) => Ok(value),
        Some(_) => Err(format!("argument {name:?} must be a string")),
        None => Err(format!("argument {name:?} is required")),
    }
}

/// An optional string argument.
pub fn optional_string_arg<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(_) => Err(format!("argument {name:?} must be a string")),
    }
}

/// An optional non-negative integer argument.
pub fn optional_u64_arg(args: &Value, name: &str) -> Result<Option<u64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("argument {name:?} must be a non-negative integer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists_and_approvals_are_enforced_locally_too() {
        let policy = Policy {
            tools: ToolAccess::List {
                tools: vec!["shell".into(), "git".into()],
            },
            file_paths: vec![],
            approval_required: vec!["git".into()],
        };
        assert!(policy_allows(&policy, "shell").is_ok());
        assert!(policy_allows(&policy, "ping").is_ok());
        assert!(policy_allows(&policy, "file_write").is_err());
        assert!(policy_allows(&policy, "git").is_err());
    }

    #[test]
    fn every_catalogue_entry_has_an_object_schema() {
        for tool in catalogue() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        }
    }
}
