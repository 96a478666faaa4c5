//! Relayed MCP servers: the runner starts (or reaches) the MCP servers
//! listed in its local config, lists their tools, announces each as
//! `server__tool`, and relays calls to them through the official Rust SDK
//! (`rmcp`).
//!
//! Config (`--mcp-config FILE` / `RUNNER_MCP_CONFIG`), YAML:
//!
//! ```yaml
//! servers:
//!   files:                       # tools appear as files__<tool>
//!     command: npx               # a server over stdio, started by the runner
//!     args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
//!     env: {LOG_LEVEL: warn}
//!     cwd: /srv                  # optional
//!   tracker:                     # a server already listening (streamable HTTP)
//!     url: http://127.0.0.1:8931/mcp
//!     headers: {Authorization: "Bearer …"}   # optional, sent with every request
//! ```
//!
//! Each server has a supervisor task: it starts the process (or connects to
//! the URL), performs the MCP handshake, lists the tools, and waits for the
//! server to end. A stdio server ends when its process exits. An HTTP server
//! has no process of ours to watch, so its tool list is fetched again every
//! [`HEALTH_INTERVAL`] (and at once after a call fails on the transport):
//! a refused or failed request, or [`HEALTH_STRIKES`] listings in a row
//! that time out, mean it went away; a changed list is announced. A server
//! that ended loses its tools from the catalogue at once and is started (or
//! reconnected) again after a backoff (reset after a healthy run); when it
//! is back its tools are announced again. Every change notifies the
//! toolbox, so the session re-announces the catalogue without reconnecting.
//!
//! The HTTP requests go through [`super::mcp_http`], over the workspace's
//! reqwest (the SDK's own HTTP client would bring a second major version).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{Peer, RoleClient};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt as _;
use runner_proto::ws::ToolSpec;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{oneshot, Notify};

use super::mcp_http;
use crate::call::{CallScope, ToolOutcome};

/// Between a server's name and its tool's name in the catalogue.
pub const SEPARATOR: &str = runner_proto::tools::MCP_SEPARATOR;
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
/// How often the tools of an HTTP server are listed again (liveness and
/// changes).
pub const HEALTH_INTERVAL: Duration = Duration::from_secs(5);
/// Time for one such listing; a busy server may be slow, so only
/// [`HEALTH_STRIKES`] slow answers in a row count as gone.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);
pub const HEALTH_STRIKES: u32 = 3;

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

/// One server of the config: `command` (stdio) or `url` (streamable HTTP).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    /// Sent with every HTTP request (e.g. `Authorization`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Environment and header values are where credentials go: names only.
        f.debug_struct("ServerConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
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
            (Some(command), None) if !command.trim().is_empty() => {
                if !server.headers.is_empty() {
                    return Err(format!(
                        "server {name:?}: headers are for url servers, not command ones"
                    ));
                }
            }
            (None, Some(url)) => check_url_server(name, url, server)?,
            (Some(_), Some(_)) => {
                return Err(format!(
                    "server {name:?}: give either command or url, not both"
                ))
            }
            _ => return Err(format!("server {name:?} needs a command or a url")),
        }
    }
    Ok(file.servers)
}

fn check_url_server(name: &str, url: &str, server: &ServerConfig) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|error| format!("server {name:?}: url {url:?} is not valid: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "server {name:?}: url {url:?} must be http:// or https://"
        ));
    }
    if parsed.password().is_some() {
        // It would show in error messages and logs: headers are not printed.
        return Err(format!(
            "server {name:?}: put credentials in headers (Authorization), not in the url"
        ));
    }
    if !server.args.is_empty() || !server.env.is_empty() || server.cwd.is_some() {
        return Err(format!(
            "server {name:?}: args, env and cwd are for command servers, not url ones"
        ));
    }
    for header in server.headers.keys() {
        if mcp_http::RESERVED_HEADERS
            .iter()
            .any(|reserved| header.eq_ignore_ascii_case(reserved))
        {
            return Err(format!(
                "server {name:?}: header {header:?} is set by the MCP protocol itself"
            ));
        }
    }
    // Names and values are checked the way the client will use them.
    mcp_http::HttpClient::new(&server.headers)
        .map(drop)
        .map_err(|error| format!("server {name:?}: {error}"))
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
    /// A call failed on the transport: check an HTTP server now rather
    /// than at the next [`HEALTH_INTERVAL`].
    suspect: Notify,
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
                suspect: Notify::new(),
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
                return ToolOutcome::error(scope.limit.timed_out())
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
            Err(error) => {
                if matches!(
                    error,
                    rmcp::ServiceError::TransportSend(_) | rmcp::ServiceError::TransportClosed
                ) {
                    state.suspect.notify_one();
                }
                ToolOutcome::error(format!("MCP server {server:?}: {error}"))
            }
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
                let peer = running.peer().clone();
                let is_http = state.config.url.is_some();
                // Dropping the running service (when the health watch
                // wins) closes its transport.
                let reason = tokio::select! {
                    reason = running.waiting() => format!("{reason:?}"),
                    reason = watch_http(&state, peer, &changed), if is_http => reason,
                };
                *state.lock() = None;
                changed.notify_one();
                tracing::warn!(server = %state.name, %reason, "MCP server ended; restarting it");
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

/// Lists an HTTP server's tools every [`HEALTH_INTERVAL`] (or when a call
/// failed on the transport); returns why the server counts as gone.
/// Changed tool lists are announced.
async fn watch_http(state: &ServerState, peer: Peer<RoleClient>, changed: &Notify) -> String {
    let mut strikes = 0;
    loop {
        tokio::select! {
            () = tokio::time::sleep(HEALTH_INTERVAL) => {}
            () = state.suspect.notified() => {}
        }
        match tokio::time::timeout(HEALTH_TIMEOUT, peer.list_all_tools()).await {
            Ok(Ok(tools)) => {
                strikes = 0;
                let specs = tool_specs(&state.name, tools);
                let mut live = state.lock();
                if let Some(live) = live.as_mut().filter(|live| live.tools != specs) {
                    tracing::info!(server = %state.name, tools = specs.len(), "MCP server's tools changed");
                    live.tools = specs;
                    changed.notify_one();
                }
            }
            Ok(Err(error)) => return format!("listing its tools failed: {error}"),
            Err(_) => {
                strikes += 1;
                if strikes >= HEALTH_STRIKES {
                    return format!(
                        "{strikes} tool listings in a row took longer than {} s",
                        HEALTH_TIMEOUT.as_secs()
                    );
                }
            }
        }
    }
}

type Running = rmcp::service::RunningService<RoleClient, ()>;

async fn start_server(state: &ServerState) -> Result<Running, String> {
    match &state.config.url {
        Some(url) => connect_http(state, url).await,
        None => start_stdio(state).await,
    }
}

/// Connects to a server that listens on `url` (streamable HTTP).
async fn connect_http(state: &ServerState, url: &str) -> Result<Running, String> {
    let client = mcp_http::HttpClient::new(&state.config.headers)?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    handshake(state, transport).await
}

/// Starts a stdio server's process.
async fn start_stdio(state: &ServerState) -> Result<Running, String> {
    let config = &state.config;
    let command_name = config.command.as_deref().unwrap_or_default();
    let mut command = tokio::process::Command::new(command_name);
    crate::exec::keep_secrets_from(&mut command);
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
    handshake(state, transport).await
}

/// The MCP handshake and the first tool list; the server's tools become
/// live.
async fn handshake<T, E, A>(state: &ServerState, transport: T) -> Result<Running, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
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
    *state.lock() = Some(Live {
        peer: running.peer().clone(),
        tools: tool_specs(&state.name, tools),
    });
    Ok(running)
}

/// A server's tools as the runner announces them.
fn tool_specs(server: &str, tools: Vec<rmcp::model::Tool>) -> Vec<ToolSpec> {
    tools
        .into_iter()
        .map(|tool| ToolSpec {
            name: format!("{server}{SEPARATOR}{}", tool.name),
            description: tool
                .description
                .map(|text| text.into_owned())
                .unwrap_or_default(),
            input_schema: Value::Object((*tool.input_schema).clone()),
        })
        .collect()
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
            "servers:\n  a:\n    url: ftp://127.0.0.1:1/mcp\n",
            "servers:\n  a:\n    url: not a url\n",
            "servers:\n  a:\n    url: http://u:secret@127.0.0.1:1/mcp\n",
            "servers:\n  a:\n    url: http://127.0.0.1:1/mcp\n    command: x\n",
            "servers:\n  a:\n    url: http://127.0.0.1:1/mcp\n    args: [x]\n",
            "servers:\n  a:\n    url: http://127.0.0.1:1/mcp\n    headers: {Accept: x}\n",
            "servers:\n  a:\n    url: http://127.0.0.1:1/mcp\n    headers: {\"a b\": x}\n",
            "servers:\n  a:\n    command: x\n    headers: {A: b}\n",
            "servers:\n  a:\n    command: x\n    bogus: 1\n",
            "servers: [1]\n",
        ] {
            assert!(parse_config(bad).is_err(), "{bad}");
        }
        assert!(parse_config("{}").expect("empty").is_empty());
        let http = parse_config(
            "servers:\n  web:\n    url: http://127.0.0.1:1/mcp\n    headers: {Authorization: Bearer s3cret}\n",
        )
        .expect("valid url server");
        assert_eq!(http["web"].url.as_deref(), Some("http://127.0.0.1:1/mcp"));
        let printed = format!("{:?}", http["web"]);
        assert!(
            printed.contains("Authorization") && !printed.contains("s3cret"),
            "{printed}"
        );
    }
}
