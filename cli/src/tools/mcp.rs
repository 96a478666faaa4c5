//! Relayed MCP servers: the runner starts the MCP servers listed in its
//! local config, lists their tools, announces each as `server__tool`, and
//! relays calls to them through the official Rust SDK (`rmcp`).
//!
//! Config (`--mcp-config FILE` / `RUNNER_MCP_CONFIG`), YAML:
//!
//! ```yaml
//! servers:
//!   files:                       # tools appear as files__<tool>
//!     command: npx
//!     args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
//!     env: {LOG_LEVEL: warn}
//!     cwd: /srv                  # optional
//! ```
//!
//! Each server has a supervisor task: it starts the process, performs the
//! MCP handshake, lists the tools, and waits for the server to end. A server
//! that exits or crashes loses its tools from the catalogue at once and is
//! started again after a backoff (reset after a healthy run); when it is back
//! its tools are announced again. Both changes notify the toolbox, so the
//! session re-announces the catalogue without reconnecting.
//!
//! Servers reached by URL (streamable HTTP) are not supported by this build:
//! the SDK's HTTP client brings a second major version of reqwest, which
//! the compile-time budget does not allow yet. Such an entry is refused at
//! start with a message saying so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt as _;
use runner_proto::ws::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{oneshot, Notify};

use super::{CallScope, ToolOutcome};

/// Between a server's name and its tool's name in the catalogue.
pub const SEPARATOR: &str = "__";
/// How long the runner waits at start for servers to list their tools
/// before it connects without them (they are announced when ready).
pub const STARTUP_WAIT: Duration = Duration::from_secs(15);
/// Time for a server's handshake and tool listing.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// First and largest delay before restarting a server that ended.
pub const RESTART_MIN: Duration = Duration::from_millis(200);
pub const RESTART_MAX: Duration = Duration::from_secs(60);
/// A server that ran this long is healthy: its next restart is quick again.
pub const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// Why the MCP config cannot be used. The runner refuses to start on any of
/// these (like a broken permission file: fail closed, say why).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read MCP config {path:?}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("MCP config {path:?} is not valid: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    servers: BTreeMap<String, ServerConfig>,
}

/// One server of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
}

/// Reads and checks the config file.
pub fn load_config(path: &Path) -> Result<BTreeMap<String, ServerConfig>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
        path: path.to_owned(),
        reason: error.to_string(),
    })?;
    parse_config(&text).map_err(|reason| ConfigError::Invalid {
        path: path.to_owned(),
        reason,
    })
}

fn parse_config(text: &str) -> Result<BTreeMap<String, ServerConfig>, String> {
    let file: ConfigFile = serde_norway::from_str(text).map_err(|error| error.to_string())?;
    for (name, server) in &file.servers {
        let valid_name = !name.is_empty()
            && !name.contains(SEPARATOR)
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_name {
            return Err(format!(
                "server name {name:?} must be letters, digits, '-' or '_' without \"{SEPARATOR}\""
            ));
        }
        match (&server.command, &server.url) {
            (Some(command), None) if !command.trim().is_empty() => {}
            (None, Some(url)) => {
                return Err(format!(
                    "server {name:?}: url servers ({url}) are not supported by this runner build; run the server over stdio (command) instead"
                ))
            }
            (Some(_), Some(_)) => {
                return Err(format!("server {name:?}: give either command or url, not both"))
            }
            _ => return Err(format!("server {name:?} needs a command")),
        }
    }
    Ok(file.servers)
}

/// A running server's peer and its tools.
struct Live {
    peer: Peer<RoleClient>,
    tools: Vec<ToolSpec>,
}

struct ServerState {
    name: String,
    config: ServerConfig,
    live: Mutex<Option<Live>>,
}

impl ServerState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Live>> {
        // Only whole-value replacement happens under this lock.
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The configured MCP servers.
pub struct Manager {
    servers: BTreeMap<String, Arc<ServerState>>,
}

impl Manager {
    /// Loads the config, starts every server's supervisor, and waits up to
    /// [`STARTUP_WAIT`] for their first tool lists.
    pub async fn start(path: &Path, changed: Arc<Notify>) -> Result<Arc<Manager>, ConfigError> {
        let configs = load_config(path)?;
        let mut servers = BTreeMap::new();
        let mut first_attempts = Vec::new();
        for (name, config) in configs {
            let state = Arc::new(ServerState {
                name: name.clone(),
                config,
                live: Mutex::new(None),
            });
            let (ready, first) = oneshot::channel();
            first_attempts.push(first);
            tokio::spawn(supervise(Arc::clone(&state), Arc::clone(&changed), ready));
            servers.insert(name, state);
        }
        let _ = tokio::time::timeout(STARTUP_WAIT, futures_util::future::join_all(first_attempts))
            .await;
        Ok(Arc::new(Manager { servers }))
    }

    /// The tools of every server that is up.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.servers
            .values()
            .flat_map(|state| {
                state
                    .lock()
                    .as_ref()
                    .map(|live| live.tools.clone())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Relays a call of `server__tool`.
    pub async fn call(&self, name: &str, args: Value, scope: &CallScope) -> ToolOutcome {
        let Some((server, tool)) = name.split_once(SEPARATOR) else {
            return ToolOutcome::error(format!("this runner has no tool {name:?}"));
        };
        let Some(state) = self.servers.get(server) else {
            return ToolOutcome::error(format!("this runner has no MCP server {server:?}"));
        };
        let Some(peer) = state.lock().as_ref().map(|live| live.peer.clone()) else {
            return ToolOutcome::error(format!(
                "MCP server {server:?} is not running right now (it is being restarted)"
            ));
        };
        let arguments = match args {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        // Dropping the request (cancel, deadline) sends the server
        // `notifications/cancelled`.
        let result = tokio::select! {
            result = peer.call_tool(params) => result,
            () = scope.cancel.cancelled() => return ToolOutcome::error("cancelled"),
            () = tokio::time::sleep(scope.timeout) => {
                return ToolOutcome::error(format!("timed out after {}s", scope.timeout.as_secs()))
            }
        };
        match result {
            Ok(result) => {
                let text: Vec<&str> = result
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text(text) => Some(text.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = text.join("\n");
                let mut value = json!({
                    "server": server,
                    "tool": tool,
                    "content": serde_json::to_value(&result.content).unwrap_or(Value::Null),
                    "text": text,
                });
                if let Some(structured) = &result.structured_content {
                    value["structured_content"] = structured.clone();
                }
                let error = (result.is_error == Some(true)).then(|| {
                    if text.is_empty() {
                        format!("{name} reported an error")
                    } else {
                        text.clone()
                    }
                });
                ToolOutcome {
                    result: value,
                    exit_code: None,
                    error,
                }
            }
            Err(error) => ToolOutcome::error(format!("MCP server {server:?}: {error}")),
        }
    }
}

/// Runs one server for ever: start, list tools, wait for it to end, restart.
async fn supervise(state: Arc<ServerState>, changed: Arc<Notify>, ready: oneshot::Sender<()>) {
    let mut ready = Some(ready);
    let mut delay = RESTART_MIN;
    loop {
        let started = Instant::now();
        match start_server(&state).await {
            Ok(running) => {
                let count = state.lock().as_ref().map_or(0, |live| live.tools.len());
                tracing::info!(server = %state.name, tools = count, "MCP server ready");
                changed.notify_one();
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
                let reason = running.waiting().await;
                *state.lock() = None;
                changed.notify_one();
                tracing::warn!(server = %state.name, ?reason, "MCP server ended; restarting it");
            }
            Err(error) => {
                tracing::warn!(server = %state.name, %error, "MCP server failed to start");
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                }
            }
        }
        if started.elapsed() >= HEALTHY_RUN {
            delay = RESTART_MIN;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(RESTART_MAX);
    }
}

type Running = rmcp::service::RunningService<RoleClient, ()>;

async fn start_server(state: &ServerState) -> Result<Running, String> {
    let config = &state.config;
    let command_name = config.command.as_deref().unwrap_or_default();
    let mut command = tokio::process::Command::new(command_name);
    command.args(&config.args).envs(&config.env);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start {command_name:?}: {error}"))?;
    if let Some(stderr) = stderr {
        let name = state.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %name, "{line}");
            }
        });
    }
    let handshake = async {
        let running = ().serve(transport).await.map_err(|error| error.to_string())?;
        let tools = running
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("listing tools: {error}"))?;
        Ok::<_, String>((running, tools))
    };
    let (running, tools) = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
        .await
        .map_err(|_| format!("no MCP handshake within {} s", HANDSHAKE_TIMEOUT.as_secs()))??;
    let specs = tools
        .into_iter()
        .map(|tool| ToolSpec {
            name: format!("{}{SEPARATOR}{}", state.name, tool.name),
            description: tool
                .description
                .map(|text| text.into_owned())
                .unwrap_or_default(),
            input_schema: Value::Object((*tool.input_schema).clone()),
        })
        .collect();
    *state.lock() = Some(Live {
        peer: running.peer().clone(),
        tools: specs,
    });
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_are_checked() {
        let ok =
            parse_config("servers:\n  files:\n    command: srv\n    args: [a]\n").expect("valid");
        assert_eq!(ok["files"].args, vec!["a".to_owned()]);
        for bad in [
            "servers:\n  a__b:\n    command: x\n",
            "servers:\n  a:\n    args: [x]\n",
            "servers:\n  a:\n    url: http://127.0.0.1:1/mcp\n",
            "servers:\n  a:\n    command: x\n    bogus: 1\n",
            "servers: [1]\n",
        ] {
            assert!(parse_config(bad).is_err(), "{bad}");
        }
        assert!(parse_config("{}").expect("empty").is_empty());
    }
}
