//! Names of every environment variable `runner` reads, in one place.
//!
//! Precedence everywhere is flag > environment > config file > default; clap
//! applies the first two (`#[arg(env = ...)]`), the config file is merged
//! after parsing.

pub const CONFIG_DIR: &str = "RUNNER_CONFIG_DIR";
pub const STATE_DIR: &str = "RUNNER_STATE_DIR";
pub const URL: &str = "RUNNER_URL";
pub const API_KEY: &str = "RUNNER_API_KEY";
/// The environment admin commands act on when none is named.
pub const ENV: &str = "RUNNER_ENV";
/// Session `runner invoke TOOL` runs in when no environment is named.
pub const SESSION: &str = "RUNNER_SESSION";
pub const TOKEN: &str = "RUNNER_TOKEN";
/// The variables that carry a secret of the runner's: never passed on to
/// the processes tools start ([`crate::exec::keep_secrets_from`]).
pub const SECRETS: [&str; 2] = [TOKEN, API_KEY];
pub const CREDENTIAL_STORE: &str = "RUNNER_CREDENTIAL_STORE";
pub const WORKSPACE: &str = "RUNNER_WORKSPACE";
pub const PERMISSION_CONFIG: &str = "RUNNER_PERMISSION_CONFIG";
pub const MAX_CONCURRENT_CALLS: &str = "RUNNER_MAX_CONCURRENT_CALLS";
pub const KEPT_OUTPUT_MAX_MB: &str = "RUNNER_KEPT_OUTPUT_MAX_MB";
pub const WORKER_THREADS: &str = "RUNNER_WORKER_THREADS";
pub const CALL_LOG: &str = "RUNNER_CALL_LOG";
pub const MCP_CONFIG: &str = "RUNNER_MCP_CONFIG";
pub const BROWSER_INSTALL_COMMAND: &str = "RUNNER_BROWSER_INSTALL_COMMAND";
pub const LOG_FORMAT: &str = "RUNNER_LOG_FORMAT";
pub const LOG: &str = "RUNNER_LOG";
pub const CA_FILE: &str = "RUNNER_CA_FILE";
pub const INSECURE_SKIP_TLS_VERIFY: &str = "RUNNER_INSECURE_SKIP_TLS_VERIFY";
pub const UPDATE_MIRROR: &str = "RUNNER_UPDATE_MIRROR";
/// Test builds only (feature `test-release-key`): replaces the release key
/// they trust, or `off` to run as a build without one. Every other build
/// ignores it; their key is fixed at build time (`RUNNER_RELEASE_PUBKEY`
/// given to cargo, docs/self-update.md).
pub const TEST_RELEASE_PUBKEY: &str = "RUNNER_TEST_RELEASE_PUBKEY";
/// `true`: `http_local` may reach link-local and cloud metadata addresses
/// (refused by default, `tools/link_local.rs`).
pub const HTTP_ALLOW_LINK_LOCAL: &str = "RUNNER_HTTP_ALLOW_LINK_LOCAL";
pub const HEALTH_ADDR: &str = "RUNNER_HEALTH_ADDR";
pub const AUTO_UPDATE: &str = "RUNNER_AUTO_UPDATE";
pub const CALL_CGROUPS: &str = "RUNNER_CALL_CGROUPS";
/// `auto`, `on` or `off`: whether tools run with the runner's own files
/// hidden (`crate::exec::tool_view`).
pub const HIDE_RUNNER_FILES: &str = "RUNNER_HIDE_RUNNER_FILES";
/// `runner service install --run-as`. (install.sh reads an unprefixed
/// `RUN_AS` of its own and passes it on as the flag.)
pub const RUN_AS: &str = "RUNNER_RUN_AS";
/// Seconds an updated binary gets to connect before it is rolled back.
pub const UPDATE_PROBATION_SECS: &str = "RUNNER_UPDATE_PROBATION_SECS";
