//! `claude_code`, `claude_sessions`, `claude_status`: the Claude Code CLI
//! on the runner's machine, announced only where `claude` is on PATH.
//!
//! * `claude_code` runs `claude -p PROMPT --output-format json` (plus
//!   `--resume ID`, `--continue`, `--model`, `--max-turns`,
//!   `--allowedTools`) in a working directory, through
//!   [`super::process`] like any command (streamed, bounded, stopped as a
//!   tree), checked against the permission file as `claude -p …`. The CLI's
//!   JSON answer (`result`, `session_id`, `is_error`, cost) is decoded into
//!   the result.
//! * `claude_sessions` lists the sessions the CLI keeps under
//!   `~/.claude/projects/<project>/<session id>.jsonl` (`CLAUDE_CONFIG_DIR`
//!   moves `~/.claude`), newest first, with the first prompt or summary, so
//!   an agent can pick one to resume with `claude_code`'s `session_id`.
//! * `claude_status` reports `claude --version` and whether credentials
//!   are present (an API key variable, an OAuth token variable, or the
//!   credentials file), never their values.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use super::process::{self, Join, Spec};
use super::shell::{scope_with_own_timeout, workdir};
use super::{
    optional_bool_arg, optional_string_arg, optional_strings_arg, optional_u64_arg, string_arg,
    CallScope, ToolContext, ToolOutcome,
};

/// Time `claude --version` gets in `claude_status`.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(15);
/// Sessions listed by default.
pub const DEFAULT_SESSIONS: u64 = 20;
/// Bytes read from the start of a session file to find its first prompt.
const SESSION_HEAD_BYTES: u64 = 64 * 1024;

pub fn specs() -> Vec<runner_proto::ws::ToolSpec> {
    vec![
        runner_proto::ws::ToolSpec {
            name: "claude_code".into(),
            description: "Run Claude Code non-interactively (claude -p) in a working directory; resume a session with session_id.".into(),
            input_schema: json!({
                "type": "object",
                "required": ["prompt"],
                "additionalProperties": false,
                "properties": {
                    "prompt": {"type": "string"},
                    "workdir": {"type": "string", "description": "Working directory (relative: inside the workspace)"},
                    "session_id": {"type": "string", "description": "Resume this session (see claude_sessions)"},
                    "continue": {"type": "boolean", "description": "Continue the most recent session in workdir"},
                    "model": {"type": "string"},
                    "max_turns": {"type": "integer", "minimum": 1},
                    "allowed_tools": {"type": "array", "items": {"type": "string"}},
                    "timeout_s": {"type": "integer", "minimum": 1}
                }
            }),
        },
        runner_proto::ws::ToolSpec {
            name: "claude_sessions".into(),
            description: "List Claude Code sessions on this machine, newest first (optionally of one working directory).".into(),
            input_schema: json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "workdir": {"type": "string", "description": "Only sessions of this project directory"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000}
                }
            }),
        },
        runner_proto::ws::ToolSpec {
            name: "claude_status".into(),
            description: "Claude Code's version and whether it has credentials.".into(),
            input_schema: json!({"type": "object", "additionalProperties": false, "properties": {}}),
        },
    ]
}

pub async fn run(tool: &str, args: Value, context: &ToolContext, scope: &CallScope) -> ToolOutcome {
    let Some(binary) = context.toolbox.binary("claude") else {
        return ToolOutcome::error("the Claude Code CLI (claude) is not on this runner's PATH");
    };
    match tool {
        "claude_code" => match code(&binary, &args, context, scope).await {
            Ok(outcome) => outcome,
            Err(message) => ToolOutcome::error(message),
        },
        "claude_sessions" => {
            let context = context.clone();
            match tokio::task::spawn_blocking(move || sessions(&args, &context)).await {
                Ok(result) => ToolOutcome::from_result(result),
                Err(error) => ToolOutcome::error(format!("listing sessions failed: {error}")),
            }
        }
        _ => ToolOutcome::from_result(status(&binary, context, scope).await),
    }
}

async fn code(
    binary: &Path,
    args: &Value,
    context: &ToolContext,
    scope: &CallScope,
) -> Result<ToolOutcome, String> {
    let prompt = string_arg(args, "prompt")?;
    let mut argv = vec![
        "-p".to_owned(),
        prompt.to_owned(),
        "--output-format".to_owned(),
        "json".to_owned(),
    ];
    if let Some(id) = optional_string_arg(args, "session_id")? {
        argv.extend(["--resume".to_owned(), id.to_owned()]);
    }
    if optional_bool_arg(args, "continue")?.unwrap_or(false) {
        argv.push("--continue".to_owned());
    }
    if let Some(model) = optional_string_arg(args, "model")? {
        argv.extend(["--model".to_owned(), model.to_owned()]);
    }
    if let Some(turns) = optional_u64_arg(args, "max_turns")? {
        argv.extend(["--max-turns".to_owned(), turns.to_string()]);
    }
    if let Some(tools) = optional_strings_arg(args, "allowed_tools")? {
        argv.extend(["--allowedTools".to_owned(), tools.join(",")]);
    }
    if let Some(permissions) = &context.permissions {
        let mut command_line = vec!["claude".to_owned()];
        command_line.extend(argv.iter().cloned());
        let decision = permissions.check_argv(&command_line);
        if !decision.allowed {
            return Err(format!(
                "denied by the runner's permission file: {}",
                decision.summary()
            ));
        }
    }
    let spec = Spec {
        arg0: None,
        program: binary.as_os_str().to_owned(),
        args: argv,
        workdir: workdir(args, context)?,
        env: Default::default(),
        stdin: None,
        join: Join::Wrapper,
    };
    let scope = scope_with_own_timeout(args, scope)?;
    let finished = process::run(spec, context, &scope).await?;
    let mut outcome = finished.into_outcome(context.boundary.root());
    let decoded = outcome
        .result
        .get("stdout")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text.trim()).ok());
    if let Some(answer) = decoded {
        for key in [
            "result",
            "session_id",
            "is_error",
            "num_turns",
            "total_cost_usd",
            "duration_ms",
        ] {
            if let Some(value) = answer.get(key) {
                outcome.result[key] = value.clone();
            }
        }
        if answer.get("is_error") == Some(&Value::Bool(true)) && outcome.error.is_none() {
            outcome.error = Some(format!(
                "claude reported an error: {}",
                answer
                    .get("result")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
            ));
        }
    }
    Ok(outcome)
}

/// `CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join(".claude"))
}

/// How the CLI names a project directory: every character that is not
/// alphanumeric becomes `-` (`/home/u/my.app` → `-home-u-my-app`).
pub fn project_key(dir: &Path) -> String {
    dir.display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn sessions(args: &Value, context: &ToolContext) -> Result<Value, String> {
    let limit = optional_u64_arg(args, "limit")?.unwrap_or(DEFAULT_SESSIONS) as usize;
    let only = match optional_string_arg(args, "workdir")? {
        Some(_) => Some(project_key(&workdir(args, context)?)),
        None => None,
    };
    let Some(projects) = config_dir().map(|dir| dir.join("projects")) else {
        return Ok(json!({"sessions": [], "note": "HOME is not set"}));
    };
    let mut found = Vec::new();
    let Ok(project_dirs) = std::fs::read_dir(&projects) else {
        return Ok(json!({"sessions": [], "projects_dir": projects.display().to_string()}));
    };
    for project in project_dirs.flatten() {
        let name = project.file_name().to_string_lossy().into_owned();
        if only.as_ref().is_some_and(|only| *only != name) {
            continue;
        }
        let Ok(files) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let modified = file
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
                .map(|age| age.as_secs())
                .unwrap_or(0);
            found.push((modified, name.clone(), path));
        }
    }
    found.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    let total = found.len();
    let sessions: Vec<Value> = found
        .into_iter()
        .take(limit)
        .map(|(modified, project, path)| {
            let (summary, cwd) = session_head(&path);
            json!({
                "session_id": path.file_stem().map(|s| s.to_string_lossy().into_owned()),
                "project": project,
                "cwd": cwd,
                "modified_unix": modified,
                "summary": summary,
            })
        })
        .collect();
    Ok(json!({"sessions": sessions, "total": total}))
}

/// The summary (or first prompt) and working directory of a session file.
fn session_head(path: &Path) -> (Option<String>, Option<String>) {
    let mut head = String::new();
    if let Ok(file) = std::fs::File::open(path) {
        let mut bytes = Vec::new();
        let _ = file.take(SESSION_HEAD_BYTES).read_to_end(&mut bytes);
        head = String::from_utf8_lossy(&bytes).into_owned();
    }
    let mut summary = None;
    let mut cwd = None;
    for line in head.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if cwd.is_none() {
            cwd = entry.get("cwd").and_then(Value::as_str).map(str::to_owned);
        }
        if summary.is_none() {
            summary = match entry.get("type").and_then(Value::as_str) {
                Some("summary") => entry
                    .get("summary")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                Some("user") => match entry.pointer("/message/content") {
                    Some(Value::String(text)) => Some(text.clone()),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .find_map(|part| part.get("text").and_then(Value::as_str))
                        .map(str::to_owned),
                    _ => None,
                },
                _ => None,
            };
        }
        if summary.is_some() && cwd.is_some() {
            break;
        }
    }
    (summary.map(|text| text.chars().take(200).collect()), cwd)
}

async fn status(binary: &Path, context: &ToolContext, scope: &CallScope) -> Result<Value, String> {
    let mut scope = scope.clone();
    scope.timeout = scope.timeout.min(VERSION_TIMEOUT);
    scope.output = None;
    let spec = Spec {
        arg0: None,
        program: binary.as_os_str().to_owned(),
        args: vec!["--version".to_owned()],
        workdir: context.boundary.root().to_path_buf(),
        env: Default::default(),
        stdin: None,
        join: Join::Wrapper,
    };
    let finished = process::run(spec, context, &scope).await?;
    let version_ok = finished.exit_code == Some(0);
    let version = finished.stdout.text.trim().to_owned();
    let credentials_file = config_dir().map(|dir| dir.join(".credentials.json"));
    let set = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
    Ok(json!({
        "installed": true,
        "path": binary.display().to_string(),
        "version": if version_ok { Value::String(version) } else { Value::Null },
        "version_error": if version_ok { Value::Null } else { Value::String(finished.stderr.text.trim().to_owned()) },
        "auth": {
            "api_key_env": set("ANTHROPIC_API_KEY"),
            "oauth_token_env": set("CLAUDE_CODE_OAUTH_TOKEN"),
            "credentials_file": credentials_file.as_ref().is_some_and(|file| file.is_file()),
            "authenticated": set("ANTHROPIC_API_KEY") || set("CLAUDE_CODE_OAUTH_TOKEN")
                || credentials_file.as_ref().is_some_and(|file| file.is_file()),
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_keys_follow_the_cli() {
        assert_eq!(project_key(Path::new("/home/u/my.app")), "-home-u-my-app");
        assert_eq!(project_key(Path::new("/srv/x_y")), "-srv-x-y");
    }
}
