//! Command-line interface: every clap type, and the environment variables
//! that back flags (flag > environment > default).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `--listen` of `serve`.
pub const ENV_LISTEN: &str = "RUNNER_RELAY_LISTEN";
/// `--data-dir`.
pub const ENV_DATA_DIR: &str = "RUNNER_RELAY_DATA_DIR";
/// `--database-url`.
pub const ENV_DATABASE_URL: &str = "RUNNER_RELAY_DATABASE_URL";
/// `--nats-url` of `serve`: shared mode.
pub const ENV_NATS_URL: &str = "RUNNER_RELAY_NATS_URL";
/// `--nats-subject-prefix`.
pub const ENV_NATS_SUBJECT_PREFIX: &str = "RUNNER_RELAY_NATS_SUBJECT_PREFIX";
/// `--instance-id`.
pub const ENV_INSTANCE_ID: &str = "RUNNER_RELAY_INSTANCE_ID";
/// `--drain-grace`.
pub const ENV_DRAIN_GRACE: &str = "RUNNER_RELAY_DRAIN_GRACE";
pub const ENV_STREAM_KEEP_ALIVE: &str = "RUNNER_RELAY_STREAM_KEEP_ALIVE";
pub const ENV_OUTPUT_STALL_TIMEOUT: &str = "RUNNER_RELAY_OUTPUT_STALL_TIMEOUT";
/// `--session-idle-timeout`.
pub const ENV_SESSION_IDLE_TIMEOUT: &str = "RUNNER_RELAY_SESSION_IDLE_TIMEOUT";
/// `--approval-ttl`.
pub const ENV_APPROVAL_TTL: &str = "RUNNER_RELAY_APPROVAL_TTL";
/// `--approval-webhook`.
pub const ENV_APPROVAL_WEBHOOK: &str = "RUNNER_RELAY_APPROVAL_WEBHOOK";
/// `--approval-webhook-secret-file`.
pub const ENV_APPROVAL_WEBHOOK_SECRET_FILE: &str = "RUNNER_RELAY_APPROVAL_WEBHOOK_SECRET_FILE";
/// `--public-url`.
pub const ENV_PUBLIC_URL: &str = "RUNNER_RELAY_PUBLIC_URL";
/// `--max-handshakes`.
pub const ENV_MAX_HANDSHAKES: &str = "RUNNER_RELAY_MAX_HANDSHAKES";
/// Env var of `--releases-dir`.
pub const ENV_RELEASES_DIR: &str = "RUNNER_RELAY_RELEASES_DIR";
/// Env var of `--tls-cert`.
pub const ENV_TLS_CERT: &str = "RUNNER_RELAY_TLS_CERT";
/// Env var of `--tls-key`.
pub const ENV_TLS_KEY: &str = "RUNNER_RELAY_TLS_KEY";
/// `--metrics-addr`.
pub const ENV_METRICS_ADDR: &str = "RUNNER_RELAY_METRICS_ADDR";
/// `--metrics-addr-public`.
pub const ENV_METRICS_ADDR_PUBLIC: &str = "RUNNER_RELAY_METRICS_ADDR_PUBLIC";
/// `--metrics-token-file`.
pub const ENV_METRICS_TOKEN_FILE: &str = "RUNNER_RELAY_METRICS_TOKEN_FILE";
/// `--no-metrics`.
pub const ENV_NO_METRICS: &str = "RUNNER_RELAY_NO_METRICS";
pub const ENV_NO_MCP: &str = "RUNNER_RELAY_NO_MCP";
pub const ENV_NO_CONSOLE: &str = "RUNNER_RELAY_NO_CONSOLE";
pub const ENV_CONSOLE_DOCKER_IMAGE: &str = "RUNNER_RELAY_CONSOLE_DOCKER_IMAGE";
pub const ENV_MCP_MAX_ENVIRONMENTS: &str = "RUNNER_RELAY_MCP_MAX_ENVIRONMENTS";
pub const ENV_MCP_ALLOWED_HOSTS: &str = "RUNNER_RELAY_MCP_ALLOWED_HOSTS";
pub const ENV_MCP_ALLOWED_ORIGINS: &str = "RUNNER_RELAY_MCP_ALLOWED_ORIGINS";
pub const ENV_NO_AUDIT: &str = "RUNNER_RELAY_NO_AUDIT";
pub const ENV_AUDIT_ARGUMENTS: &str = "RUNNER_RELAY_AUDIT_ARGUMENTS";
pub const ENV_AUDIT_RETENTION_DAYS: &str = "RUNNER_RELAY_AUDIT_RETENTION_DAYS";
pub const ENV_JOURNAL_RESULT_MAX_KB: &str = "RUNNER_RELAY_JOURNAL_RESULT_MAX_KB";
pub const ENV_JOURNAL_MAX_MB: &str = "RUNNER_RELAY_JOURNAL_MAX_MB";
/// `--log-format`.
pub const ENV_LOG_FORMAT: &str = "RUNNER_RELAY_LOG_FORMAT";
/// `--access-log`.
pub const ENV_ACCESS_LOG: &str = "RUNNER_RELAY_ACCESS_LOG";
/// `--worker-threads`.
pub const ENV_WORKER_THREADS: &str = "RUNNER_RELAY_WORKER_THREADS";

/// Default address of `serve` and `dev`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7700";

/// The relay of `runner`: HTTP API for agents and CI, WebSocket endpoint for
/// runners, policy enforcement.
#[derive(Debug, Parser)]
#[command(name = "runner-relay", version, about, propagate_version = true)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = ENV_LOG_FORMAT)]
    pub log_format: LogFormat,

    /// Log every API request ("answered": method, path, status, ms) and
    /// every tool call ("call finished": environment, call id, tool,
    /// member, exit code, ms) at info, target `runner_relay::access`. Off
    /// by default: every call is in the relay's journal already
    /// (`GET /invocations/{call_id}`), and these lines would cost a busy
    /// relay a sixth of its instructions per call and run into journald's
    /// rate limit, which then drops the warnings that matter.
    #[arg(long, global = true, env = ENV_ACCESS_LOG,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub access_log: bool,

    /// Threads that serve the API and the runners' sockets (default: one
    /// per CPU). Fewer leave more of a small host to other processes.
    #[arg(long, global = true, env = ENV_WORKER_THREADS, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,

    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the relay.
    Serve(Box<ServeArgs>),
    /// Manage members, API keys and teams in the relay's store.
    Admin(AdminArgs),
    /// Start a relay and a local runner in one command, for development.
    Dev(DevArgs),
    /// Regenerate completions/ and man/ from these definitions (for developers).
    #[command(hide = true)]
    GenerateAssets {
        /// Repository root to write into.
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
}

/// Where the store lives. Global: `admin --data-dir X create-key` and
/// `admin create-key --data-dir X` mean the same.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Directory for the relay's data (default: the platform data directory).
    #[arg(long, global = true, env = ENV_DATA_DIR, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Database URL (default: sqlite://<data-dir>/relay.db).
    #[arg(long, global = true, env = ENV_DATABASE_URL, value_name = "URL")]
    pub database_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = ENV_LISTEN, default_value = DEFAULT_LISTEN, value_name = "ADDR")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub store: StoreArgs,
    /// NATS server routing calls between relays (shared mode; needs a
    /// postgres:// database URL). Without it the relay runs alone.
    #[arg(long, env = ENV_NATS_URL, value_name = "URL")]
    pub nats_url: Option<String>,
    /// First token of every NATS subject this deployment uses.
    #[arg(long, env = ENV_NATS_SUBJECT_PREFIX, default_value = "runner", value_name = "PREFIX")]
    pub nats_subject_prefix: String,
    /// This relay instance's id in shared mode (default: random per start).
    #[arg(long, env = ENV_INSTANCE_ID, value_name = "ID")]
    pub instance_id: Option<String>,
    /// Newest relay-to-relay message version to speak (default: this
    /// build's). Lower only to stand in for an older build when rehearsing
    /// a rolling upgrade (docs/relay.md).
    #[arg(
        long,
        hide = true,
        value_name = "VERSION",
        default_value_t = crate::routing::RELAY_PROTOCOL,
        value_parser = clap::value_parser!(u32).range(
            i64::from(crate::routing::OLDEST_RELAY_PROTOCOL)..=i64::from(crate::routing::RELAY_PROTOCOL)
        )
    )]
    pub relay_protocol: u32,
    /// Seconds a stopping relay (SIGTERM) gives calls in flight before it
    /// sends its runners elsewhere.
    #[arg(long, env = ENV_DRAIN_GRACE, default_value_t = 8, value_name = "SECONDS")]
    pub drain_grace: u64,
    /// Seconds between a runner's heartbeats (asked in `welcome`); a runner
    /// silent for six of them is dropped and its calls fail. Hidden: for
    /// tests of a stopped runner, which would otherwise wait 90 s.
    #[arg(long, hide = true, default_value_t = crate::state::DEFAULT_HEARTBEAT_INTERVAL_S,
          value_parser = clap::value_parser!(u64).range(1..=300), value_name = "SECONDS")]
    pub heartbeat_interval: u64,
    /// Seconds of silence after which a streamed call's body carries a
    /// keep-alive frame (SSE: a comment line), so proxies in front of the
    /// relay keep the connection. Keep it under their idle timeout.
    #[arg(long, env = ENV_STREAM_KEEP_ALIVE, default_value_t = 15,
          value_parser = positive_seconds, value_name = "SECONDS")]
    pub stream_keep_alive: u64,
    /// Seconds a streamed call's output waits for a caller that reads none
    /// of it before the call is cancelled (the runner's socket waits
    /// meanwhile, so this bounds how long one slow reader holds it).
    #[arg(long, env = ENV_OUTPUT_STALL_TIMEOUT, default_value_t = 5,
          value_parser = positive_seconds, value_name = "SECONDS")]
    pub output_stall_timeout: u64,
    /// Seconds a work session (`POST /sessions`) may stay unused before it
    /// expires; its calls then fail with `session_expired` (410). Counted
    /// from the last call, with up to 10 s of grace.
    #[arg(long, env = ENV_SESSION_IDLE_TIMEOUT,
          default_value_t = crate::sessions::DEFAULT_IDLE_TIMEOUT_S,
          value_parser = positive_seconds, value_name = "SECONDS")]
    pub session_idle_timeout: u64,
    /// Seconds an approval (a call to a tool that needs a person's
    /// approval, asked with `"on_approval": "wait"`) stays open; one not
    /// decided by then expires, which counts as denied.
    #[arg(long, env = ENV_APPROVAL_TTL,
          default_value_t = runner_proto::approvals::DEFAULT_APPROVAL_TTL_S,
          value_parser = positive_seconds, value_name = "SECONDS")]
    pub approval_ttl: u64,
    /// Post each new approval to this URL (JSON a chat tool can post,
    /// signed with HMAC-SHA256: docs/approvals.md). Needs
    /// --approval-webhook-secret-file. A chat webhook URL holds a token:
    /// set it in the environment (a 0600 env file), not on the command
    /// line; the relay never logs more than its origin.
    #[arg(long, env = ENV_APPROVAL_WEBHOOK, value_name = "URL",
          requires = "approval_webhook_secret_file")]
    pub approval_webhook: Option<String>,
    /// File holding the webhook's signing secret (at least 16 characters;
    /// readable by its owner only, else the relay refuses to start).
    #[arg(long, env = ENV_APPROVAL_WEBHOOK_SECRET_FILE, value_name = "FILE",
          requires = "approval_webhook")]
    pub approval_webhook_secret_file: Option<PathBuf>,
    /// The URL people and runners reach this relay at (e.g. behind a proxy),
    /// for the links the relay sends out (approval webhooks) and the
    /// console's setup commands. An `https` URL makes the console's cookie
    /// `Secure` (TLS ended at the proxy).
    #[arg(long, env = ENV_PUBLIC_URL, value_name = "URL")]
    pub public_url: Option<String>,
    /// Runner connections allowed between their request and their
    /// `welcome` at once; more wait up to 5 s for a slot (at most 64 per
    /// slot), else are answered 503 with Retry-After (runners retry with
    /// backoff), so a reconnect storm never queues work the runners'
    /// timeouts would throw away.
    #[arg(long, env = ENV_MAX_HANDSHAKES, default_value_t = crate::state::DEFAULT_MAX_HANDSHAKES,
          value_parser = handshake_limit, value_name = "N")]
    pub max_handshakes: usize,
    /// Serve a runner release mirror from DIR (`install.sh`,
    /// `releases/latest`, `releases/download/<version>/…`) and tell older
    /// runners in heartbeat answers that a newer version exists.
    #[arg(long, env = ENV_RELEASES_DIR, value_name = "DIR")]
    pub releases_dir: Option<PathBuf>,
    /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
    #[arg(long, env = ENV_TLS_CERT, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, env = ENV_TLS_KEY, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Record nothing in the audit log (who invoked what, token, member
    /// and environment changes, failed authentications). On by default;
    /// see docs/audit.md.
    #[arg(long, env = ENV_NO_AUDIT, conflicts_with = "audit_arguments")]
    pub no_audit: bool,
    /// Keep each call's arguments in its audit entry (the values of the
    /// `env` argument masked), not only their SHA-256 digest.
    #[arg(long, env = ENV_AUDIT_ARGUMENTS)]
    pub audit_arguments: bool,
    /// Days audit entries are kept; older ones are pruned daily (the rest
    /// still verifies).
    #[arg(long, env = ENV_AUDIT_RETENTION_DAYS, default_value_t = 400,
          value_parser = retention_days, value_name = "DAYS")]
    pub audit_retention_days: u32,
    /// KiB of each call's result the call journal keeps (what `GET
    /// /invocations/{call_id}` and a repeated `call_id` get); the end of
    /// longer output is kept, marked. The caller that waited got it all.
    #[arg(long, env = ENV_JOURNAL_RESULT_MAX_KB, default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=16_384), value_name = "KIB")]
    pub journal_result_max_kb: u64,
    /// MiB of results the call journal holds at most: past it, the oldest
    /// finished calls are pruned (checked every 5 min) before their 7 days.
    #[arg(long, env = ENV_JOURNAL_MAX_MB, default_value_t = 1024,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576), value_name = "MIB")]
    pub journal_max_mb: u64,
    /// Boxed: it would make `Command` too large to move around cheaply.
    #[command(flatten)]
    pub metrics: Box<MetricsArgs>,
    #[command(flatten)]
    pub mcp: McpArgs,
    /// Do not serve the web console at `/console` (docs/console.md).
    #[arg(long, env = ENV_NO_CONSOLE, value_parser = clap::builder::BoolishValueParser::new())]
    pub no_console: bool,
    /// The image the console's setup guide tells Docker to run (built from
    /// installers/Dockerfile). Default: runner:<this relay's version>.
    #[arg(long, env = ENV_CONSOLE_DOCKER_IMAGE, value_name = "IMAGE")]
    pub console_docker_image: Option<String>,
}

/// Where Prometheus scrapes `/metrics` (docs/metrics.md).
#[derive(Debug, Clone, Args)]
pub struct MetricsArgs {
    /// Serve `GET /metrics` without a credential on its own listener, e.g.
    /// 127.0.0.1:9464. Only a loopback address, unless
    /// --metrics-addr-public.
    #[arg(long, env = ENV_METRICS_ADDR, value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Let --metrics-addr listen beyond this machine (anyone who reaches it
    /// reads the metrics: no ids or secrets, but counts of your traffic).
    #[arg(long, env = ENV_METRICS_ADDR_PUBLIC, requires = "metrics_addr",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub metrics_addr_public: bool,
    /// Serve `GET /metrics` on the API port too, to requests bearing this
    /// file's content as `Authorization: Bearer` (at least 32 characters,
    /// e.g. `openssl rand -hex 32`; the file must not be readable by group
    /// or others). A file, so the secret is never in argv.
    #[arg(long, env = ENV_METRICS_TOKEN_FILE, value_name = "FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// Record no metrics (every recording is skipped; `/metrics` answers
    /// 404).
    #[arg(long, env = ENV_NO_METRICS,
          conflicts_with_all = ["metrics_addr", "metrics_token_file"],
          value_parser = clap::builder::BoolishValueParser::new())]
    pub no_metrics: bool,
}

/// How `/mcp` is served (docs/mcp.md).
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Do not serve `/mcp` (the relay as an MCP server; docs/mcp.md).
    #[arg(long, env = ENV_NO_MCP, value_parser = clap::builder::BoolishValueParser::new())]
    pub no_mcp: bool,
    /// Above this many usable environments, `/mcp` lists the compact
    /// `list_tools` and `run_tool` instead of every environment's tools.
    #[arg(long, env = ENV_MCP_MAX_ENVIRONMENTS, value_name = "N",
          default_value_t = crate::state::DEFAULT_MCP_MAX_ENVIRONMENTS)]
    pub mcp_max_environments: usize,
    /// Accept `/mcp` requests only with this `Host` (repeatable, or
    /// comma-separated in the environment variable; `host` or `host:port`).
    /// Default: any host; the API key is what lets a request in.
    #[arg(long = "mcp-allowed-host", env = ENV_MCP_ALLOWED_HOSTS, value_name = "HOST",
          value_delimiter = ',')]
    pub mcp_allowed_hosts: Vec<String>,
    /// Accept `/mcp` requests from browser pages of this origin
    /// (repeatable; e.g. `https://console.example.com`). Default: none, so
    /// a page cannot call `/mcp` with a key it holds.
    #[arg(long = "mcp-allowed-origin", env = ENV_MCP_ALLOWED_ORIGINS, value_name = "ORIGIN",
          value_delimiter = ',')]
    pub mcp_allowed_origins: Vec<String>,
    /// Serve every MCP request through the SDK's per-request service, even
    /// plain `tools/call`s (for comparing the two paths).
    #[arg(long, hide = true)]
    pub mcp_no_fast_path: bool,
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Create a new store if there is none at the data dir (or
    /// --database-url's SQLite file). Without it `admin` refuses, saying
    /// where it looked, rather than hand out a key of a store no relay
    /// serves.
    #[arg(long, global = true)]
    pub create: bool,
    #[command(subcommand)]
    pub command: AdminCommand,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a member with an API key and print the key (alone) on stdout.
    CreateKey {
        /// Make the member an organisation admin.
        #[arg(long)]
        admin: bool,
        /// Add the member to this team (repeatable; the team must exist).
        #[arg(long = "team", value_name = "TEAM")]
        teams: Vec<String>,
        /// The member's display name.
        #[arg(long, default_value = "member")]
        name: String,
        /// Make the member an agent (an API client acting for its teams,
        /// e.g. a coding agent or a CI pipeline) rather than a person.
        #[arg(long, conflicts_with = "admin")]
        agent: bool,
    },
    /// Add an existing member to a team (no-op if already in it).
    AddToTeam {
        /// The team.
        team: String,
        /// Member id, or a name only one member has.
        member: String,
    },
    /// Remove a member from a team.
    RemoveFromTeam {
        /// The team.
        team: String,
        /// Member id, or a name only one member has.
        member: String,
    },
    /// List the API keys: each key's hint (never the key), its member
    /// (id, name, kind, organisation admin, teams) and when it was made.
    ListKeys {
        /// Print JSON (one array) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a member's API keys: they stop working at once on a relay
    /// that is restarted, within 10 s on a running one (it keeps a key it
    /// has seen that long). The member, its teams and its audit trail stay;
    /// `create-key` makes a new member with a new key. Asks first on a
    /// terminal; --yes for scripts.
    RevokeKey {
        /// Member id, or a name only one member has.
        member: String,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
    },
    /// List the members: id, name, kind, organisation admin, teams and how
    /// many API keys each holds.
    ListMembers {
        /// Print JSON (one array) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Create a team (no-op if it exists).
    CreateTeam {
        /// Team name, as used in the `team:<name>` scope.
        name: String,
    },
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Walk the audit log's hash chain from its oldest entry and check that
    /// no entry was changed or deleted. Exits 1 naming the first bad entry
    /// (changed row, broken link, missing rows); 0 when intact.
    Verify {
        /// Print the result as one JSON object on stdout.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct DevArgs {
    /// Address to listen on.
    #[arg(long, default_value = DEFAULT_LISTEN, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Directory for everything (default: a new temporary directory, kept).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The `runner` binary (default: next to this binary, else on PATH).
    #[arg(long, value_name = "PATH")]
    pub runner_bin: Option<PathBuf>,
    /// Do not start a local sandbox host (by default one is started where
    /// this machine can isolate sandboxes, so sessions asking for
    /// `sandbox` work).
    #[arg(long)]
    pub no_sandbox_host: bool,
}

/// `--max-handshakes`: a positive count.
fn positive_seconds(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(seconds) if (1..=86_400).contains(&seconds) => Ok(seconds),
        _ => Err(format!(
            "{text:?} is not a number of seconds from 1 to 86400"
        )),
    }
}

fn retention_days(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(days) if (1..=36_500).contains(&days) => Ok(days),
        _ => Err(format!("{text:?} is not a number of days from 1 to 36500")),
    }
}

fn handshake_limit(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(limit) if limit >= 1 => Ok(limit),
        _ => Err(format!("{text:?} is not a positive number of handshakes")),
    }
}
