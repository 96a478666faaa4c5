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
/// `--log-format`.
pub const ENV_LOG_FORMAT: &str = "RUNNER_RELAY_LOG_FORMAT";

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
    Serve(ServeArgs),
    /// Manage members, API keys and teams in the relay's store.
    Admin(AdminArgs),
    /// Start a relay and a local runner in one command, for development.
    Dev(DevArgs),
}

/// Where the store lives.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Directory for the relay's data (default: the platform data directory).
    #[arg(long, env = ENV_DATA_DIR, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Database URL (default: sqlite://<data-dir>/relay.db).
    #[arg(long, env = ENV_DATABASE_URL, value_name = "URL")]
    pub database_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = ENV_LISTEN, default_value = DEFAULT_LISTEN, value_name = "ADDR")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    pub store: StoreArgs,
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
    },
    /// Create a team (no-op if it exists).
    CreateTeam {
        /// Team name, as used in the `team:<name>` scope.
        name: String,
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
}
