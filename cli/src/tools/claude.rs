//! `claude_code`, `claude_sessions`, `claude_status`: the Claude Code CLI
//! on the runner's machine, announced only where `claude` is on PATH.
//!
//! * `claude_code` runs `claude -p PROMPT --output-format json` (plus
//!   `--resume ID`, `--continue`, `--model`, `--max-turns`,
//!   `--allowedTools`) in a working directory, through
//!   [`crate::exec`] like any command (streamed, bounded, stopped as a
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

use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;

use super::command::run_finished;
use super::context::ToolContext;
use super::tool::{Running, Tool};
use super::toolbox::Toolbox;
use crate::call::{CallScope, ToolOutcome};
use crate::exec;
use crate::gate::CommandLine;

/// Time `claude --version` gets in `claude_status`.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(15);
/// Sessions listed by default.
pub const DEFAULT_SESSIONS: u64 = 20;
/// Bytes read from the start of a session file to find its first prompt.
const SESSION_HEAD_BYTES: u64 = 64 * 1024;

pub struct ClaudeCode;
pub struct ClaudeSessions;
pub struct ClaudeStatus;

/// The arguments of `claude_code`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeArgs {
    pub prompt: String,
    /// Working directory (relative: inside the workspace)
    pub workdir: Option<String>,
    /// Resume this session (see claude_sessions)
    pub session_id: Option<String>,
    /// Continue the most recent session in workdir
    #[serde(rename = "continue")]
    pub continue_: Option<bool>,
    pub model: Option<String>,
    #[schemars(range(min = 1))]
    pub max_turns: Option<u64>,
    pub allowed_tools: Option<Vec<String>>,
    #[schemars(range(min = 1))]
    pub timeout_s: Option<u64>,
}

/// The arguments of `claude_sessions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionsArgs {
    /// Only sessions of this project directory
    pub workdir: Option<String>,
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u64>,
}

/// `claude_status` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The `claude` binary, or why the Claude tools cannot run.
fn claude_binary(context: &ToolContext) -> Result<PathBuf, ToolOutcome> {
    context.toolbox.binary("claude").ok_or_else(|| {
        ToolOutcome::error("the Claude Code CLI (claude) is not on this runner's PATH")
    })
}

impl Tool for ClaudeCode {
    type Args = CodeArgs;

    fn name(&self) -> &'static str {
        tools::CLAUDE_CODE
    }

    fn description(&self) -> String {
        "Run Claude Code non-interactively (claude -p) in a working directory; resume a session with session_id.".into()
    }

    fn offered(&self, toolbox: &Toolbox) -> bool {
        toolbox.binary("claude").is_some()
    }

    fn run<'a>(
        &'a self,
        args: CodeArgs,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        Box::pin(async move {
            match claude_binary(context) {
                Ok(binary) => code(&binary, args, context, scope).await,
                Err(outcome) => outcome,
            }
        })
    }
}

impl Tool for ClaudeSessions {
    type Args = SessionsArgs;

    fn name(&self) -> &'static str {
        tools::CLAUDE_SESSIONS
    }

    fn description(&self) -> String {
        "List Claude Code sessions on this machine, newest first (optionally of one working directory).".into()
    }

    fn offered(&self, toolbox: &Toolbox) -> bool {
        toolbox.binary("claude").is_some()
    }

    fn run<'a>(
        &'a self,
        args: SessionsArgs,
        context: &'a ToolContext,
        _scope: &'a CallScope,
    ) -> Running<'a> {
        Box::pin(async move {
            if let Err(outcome) = claude_binary(context) {
                return outcome;
            }
            let context = context.clone();
            match tokio::task::spawn_blocking(move || sessions(&args, &context)).await {
                Ok(result) => ToolOutcome::from_result(result),
                Err(error) => ToolOutcome::error(format!("listing sessions failed: {error}")),
            }
        })
    }
}

impl Tool for ClaudeStatus {
    type Args = NoArgs;

    fn name(&self) -> &'static str {
        tools::CLAUDE_STATUS
    }

    fn description(&self) -> String {
        "Claude Code's version and whether it has credentials.".into()
    }

    fn offered(&self, toolbox: &Toolbox) -> bool {
        toolbox.binary("claude").is_some()
    }

    fn run<'a>(
        &'a self,
        _args: NoArgs,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        Box::pin(async move {
            match claude_binary(context) {
                Ok(binary) => ToolOutcome::from_result(status(&binary, context, scope).await),
                Err(outcome) => outcome,
            }
        })
    }
}

async fn code(
    binary: &Path,
    args: CodeArgs,
    context: &ToolContext,
    scope: &CallScope,
) -> ToolOutcome {
    let mut argv = vec![
        "-p".to_owned(),
        args.prompt,
        "--output-format".to_owned(),
        "json".to_owned(),
    ];
    if let Some(id) = args.session_id {
        argv.extend(["--resume".to_owned(), id]);
    }
    if args.continue_.unwrap_or(false) {
        argv.push("--continue".to_owned());
    }
    if let Some(model) = args.model {
        argv.extend(["--model".to_owned(), model]);
    }
    if let Some(turns) = args.max_turns {
        argv.extend(["--max-turns".to_owned(), turns.to_string()]);
    }
    if let Some(tools) = args.allowed_tools {
        argv.extend(["--allowedTools".to_owned(), tools.join(",")]);
    }
    let line = CommandLine::Program {
        path: binary.to_owned(),
        args: argv,
    };
    let checked =
        context
            .gate()
            .command(line, "claude", Default::default(), args.workdir.as_deref());
    let (finished, workspace) =
        match run_finished(checked, None, args.timeout_s, context, scope).await {
            Ok(done) => done,
            Err(message) => return ToolOutcome::error(message),
        };
    let mut outcome = finished.into_outcome(&workspace);
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
    outcome
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

fn sessions(args: &SessionsArgs, context: &ToolContext) -> Result<Value, String> {
    let limit = args.limit.unwrap_or(DEFAULT_SESSIONS) as usize;
    let only = match args.workdir.as_deref() {
        Some(dir) => Some(project_key(&context.gate().workdir(Some(dir))?)),
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
    let checked = context
        .gate()
        .own_command(binary.to_owned(), vec!["--version".to_owned()]);
    let finished = exec::run(checked, None, &scope, context.isolation).await?;
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
