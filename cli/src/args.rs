//! The command-line interface: every clap type of `runner` lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::env_vars;

/// Examples shown after `--help` and in the man pages' EXAMPLES section,
/// line for line: clap would join the lines of a doc comment, and roff
/// would fill them (see `assets::examples_section`). The first line is the
/// heading; every other line is a command or a `#` comment, short enough
/// not to wrap at 80 columns.
pub mod examples {
    pub const RUNNER: &str = "\
Examples:
  # First steps on a machine (the token from RUNNER_TOKEN or a prompt):
  runner register --url https://relay.example.com
  runner run

  # Administration from a terminal (needs an API key, see `runner login`):
  runner env list
  runner invoke my-env shell --arg command='uname -a'";

    pub const SESSION: &str = "\
Examples:
  # CI: one session across steps
  export RUNNER_SESSION=$(runner session create --tag linux)
  runner invoke shell --arg command='make test'
  runner session end \"$RUNNER_SESSION\"";

    pub const APPROVALS: &str = "\
Examples:
  # the pending calls you may decide
  runner approvals list
  # one call in full (env values masked)
  runner approvals show apr_…
  runner approvals approve apr_… --comment 'ticket 123'
  runner approvals deny apr_… --comment 'not during the freeze'";

    pub const AUDIT: &str = "\
Examples:
  runner audit --env prod-box --since 2026-01-01T00:00:00Z
  runner audit --action tool.invoke --follow
  runner audit --json > audit.jsonl";

    pub const STATUS: &str = "\
Examples:
  # the relay's view (needs an API key)
  runner status prod-box
  # the local runner: no relay, no key
  runner status --local
  # for scripts and watchdogs
  runner status --local --json";

    pub const TEMPLATE: &str = "\
Examples:
  # variables from a .env file, a setup script, only the package index
  runner template create py --env-file .env --setup-script setup.sh
  runner template edit py --network allowlist --allow-domain pypi.org
  runner template list
  runner template edit py --idle-timeout 30m --env-file .env
  # remove the setup script
  runner template edit py --setup-script /dev/null
  runner template delete py --yes";

    pub const INVOKE: &str = "\
Examples:
  runner invoke prod-box shell --arg command='df -h'
  runner invoke prod-box file_read --arg path=/etc/hosts --arg limit:=4096";
}

/// Run tool calls from AI agents and CI pipelines on this machine.
///
/// `runner` dials out to a relay over WebSocket (no inbound port), announces
/// the tools this machine offers, and executes the calls that agents and CI
/// send through the relay's HTTP API, under the environment's policy and this
/// machine's own permission file.
#[derive(Debug, Parser)]
#[command(
    name = "runner",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = examples::RUNNER
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Directory holding config.yaml and (when no keychain is usable) the
    /// credential files.
    #[arg(long, global = true, env = env_vars::CONFIG_DIR, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,

    /// Directory for run-time state: the single-instance lock, the default
    /// workspace.
    #[arg(long, global = true, env = env_vars::STATE_DIR, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Also trust the CA certificates in this PEM file for the relay
    /// connection (added to the system's roots).
    #[arg(long, global = true, env = env_vars::CA_FILE, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// Do not verify the relay's TLS certificate (control connection only).
    /// Use only inside a trusted network; `=false` turns verification back
    /// on over RUNNER_INSECURE_SKIP_TLS_VERIFY.
    #[arg(
        long,
        global = true,
        env = env_vars::INSECURE_SKIP_TLS_VERIFY,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    pub insecure_skip_tls_verify: Option<bool>,

    /// Log format on stderr.
    #[arg(long, global = true, env = env_vars::LOG_FORMAT, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Check a registration token against the relay and store it for `runner run`.
    ///
    /// The token is read from RUNNER_TOKEN, or from standard input with
    /// --token-stdin, or prompted for on a terminal. Passing it with --token
    /// works but leaves it in your shell history and visible to `ps`.
    Register(RegisterArgs),

    /// Remove the stored registration (config and token).
    ///
    /// Asks first, since the token is shown once and cannot be read back;
    /// --yes for scripts (without a terminal it refuses, exit 2).
    Unregister(UnregisterArgs),

    /// Connect to the relay and execute tool calls until stopped.
    Run(RunArgs),

    /// Store the relay URL and an API key for the admin commands.
    ///
    /// The key is read from RUNNER_API_KEY, standard input (--api-key-stdin),
    /// or a prompt. RUNNER_URL and RUNNER_API_KEY always win over what is
    /// stored, so CI needs no login.
    Login(LoginArgs),

    /// Forget the relay URL and API key `runner login` stored (the key is
    /// removed from the keychain and the credentials file). RUNNER_URL and
    /// RUNNER_API_KEY are not touched.
    Logout(LogoutArgs),

    /// Create, list, show, update and delete execution environments.
    #[command(subcommand)]
    Env(EnvCommand),

    /// Generate, inspect and revoke an environment's registration token.
    #[command(subcommand)]
    Token(TokenCommand),

    /// Create, list, show, edit and delete sandbox templates.
    ///
    /// A template is the network, environment variables and setup script a
    /// new sandbox gets. Variables come from a `.env` file and are visible in plain text to
    /// everyone who may use the template: a value that looks like a secret
    /// is saved, with a warning on stderr.
    #[command(subcommand, after_help = examples::TEMPLATE)]
    Template(TemplateCommand),

    /// Start, list, show and end sessions: calls that stay on one machine.
    ///
    /// A session's first call picks the environment (`auto`: an online
    /// runner you may use, preferring --tag; or the one named) and every
    /// later call goes to the same machine, or fails if it is gone; it is
    /// never moved. For CI, hold one session across steps (see the
    /// examples).
    #[command(subcommand, after_help = examples::SESSION)]
    Session(SessionCommand),

    /// List, show, approve and deny calls that wait for a person's approval.
    ///
    /// A tool an environment's policy lists under approval_required runs
    /// only once someone else who may manage the environment approves the
    /// exact call (`runner invoke … --wait-approval` asks and waits).
    #[command(subcommand, after_help = examples::APPROVALS)]
    Approvals(ApprovalsCommand),
    /// Read the relay's audit log (organisation admins): who invoked which
    /// tool, changed which environment, token, member or team, and failed
    /// authentications.
    ///
    /// A table of the newest entries by default; --json prints every
    /// matching entry as JSON Lines, oldest first (an export: one entry a
    /// line, with its hash-chain fields); --follow keeps printing new ones.
    #[command(
        about = "Read the relay's audit log (organisation admins)",
        after_help = examples::AUDIT
    )]
    Audit(AuditArgs),

    /// List the tools an environment offers (its runner's catalogue, filtered by policy).
    Tools(EnvTarget),

    /// Show an environment's status (pending, online, degraded, offline), or
    /// with --local this machine's runner as it sees itself.
    ///
    /// With --local, exits 0 when the runner is connected (degraded
    /// included: busy is not broken) and 69 when it is not running or not
    /// connected; the reason is printed either way.
    #[command(
        about = "Show an environment's status, or with --local this machine's runner as it sees itself",
        after_help = examples::STATUS
    )]
    Status(StatusArgs),

    /// Run a tool on an environment's runner and print its output.
    ///
    /// Exits with the tool's own exit code; relay-side failures have their own
    /// codes (see EXIT STATUS in the man page).
    #[command(after_help = examples::INVOKE)]
    Invoke(InvokeArgs),

    /// Explain what is wrong when the runner or the admin commands can't
    /// reach the relay.
    ///
    /// Checks, in order: config, the runner's token and the API key; URL,
    /// proxy, DNS, TCP, TLS and the relay's answer ("can't reach the
    /// relay"); the token's verdict and the WebSocket upgrade, the API key's
    /// member and role ("reached it, but it refuses"); clock skew; this
    /// machine's permission file, workspace, running runner and service.
    /// The URL is --url / RUNNER_URL, else the registration's, else `runner
    /// login`'s. Doctor changes nothing: it registers nothing, creates no
    /// directory and records no token use. Each failure says what to do.
    /// Exits 1 when any check fails; --json prints a report to attach to a
    /// bug report.
    Doctor(DoctorArgs),

    /// Install, start, stop and inspect the runner as a system service.
    ///
    /// Linux: a hardened systemd unit running as a dedicated `runner` user
    /// (or --run-as an existing user), settings in /etc/runner/env (0600).
    /// macOS: a launchd daemon. The token comes from RUNNER_TOKEN or from
    /// this user's `runner register`.
    #[command(subcommand)]
    Service(ServiceCommand),

    /// Update this binary from the release mirror (default: the registered relay).
    ///
    /// Downloads runner-OS-ARCH of the mirror's latest release, checks the
    /// ed25519 signature over its SHA256SUMS with the key built into runner,
    /// the file's SHA-256, length and architecture, then replaces this
    /// executable, keeping the old one as runner.previous. Nothing is
    /// replaced when any check fails.
    ///
    /// `runner update --check` exits 0 when up to date and 11 when an update
    /// is available; `runner update --rollback` puts runner.previous back.
    /// A build made without a release key (RUNNER_RELEASE_PUBKEY given to
    /// cargo, as scripts/make-release.sh does) has self-update off:
    /// `runner update` exits 14 and `runner doctor` says so.
    Update(UpdateArgs),

    /// Check commands against a permission file and lint permission files.
    #[command(subcommand)]
    Policy(PolicyCommand),

    /// Make this machine a sandbox host: start isolated, temporary runners
    /// (sandboxes) when the relay asks.
    ///
    /// Connects like `runner run` (RUNNER_TOKEN with --url, or the
    /// registration), with the token of an environment of type
    /// `sandbox-host`, and serves only the relay's `sandbox_start` and
    /// `sandbox_destroy`. Each sandbox is bubblewrap (user, PID, mount,
    /// IPC, UTS and network namespaces) over an overlay root, with cgroup
    /// limits; see docs/sandboxes.md. Refuses to start (exit 15) when this
    /// machine cannot isolate: `runner doctor --sandbox-host` says what is
    /// missing.
    SandboxHost(SandboxHostArgs),

    /// Become bubblewrap in a private mount namespace with the sandbox's
    /// root mounted (started by the sandbox host).
    #[command(hide = true)]
    SandboxEnter {
        #[arg(long, value_name = "FILE")]
        plan: PathBuf,
    },

    /// A sandbox's first process (started by bubblewrap).
    #[command(hide = true)]
    SandboxInit,

    /// Make the namespace tools run in and hold it (started by `run`).
    #[command(hide = true)]
    ToolView,

    /// Regenerate completions/ and man/ from these definitions (for developers).
    #[command(hide = true)]
    GenerateAssets {
        /// Repository root to write into.
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CredentialStoreChoice {
    /// The OS keychain when one answers, else a 0600 file.
    Auto,
    /// The OS keychain only (fails if none is usable).
    Keyring,
    /// A file readable by its owner only.
    File,
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// Base URL of the relay, e.g. https://relay.example.com (required:
    /// this flag or RUNNER_URL).
    #[arg(long, env = env_vars::URL)]
    pub url: Option<String>,

    /// The registration token (prefer RUNNER_TOKEN or --token-stdin).
    #[arg(long, env = env_vars::TOKEN, hide_env_values = true)]
    pub token: Option<String>,

    /// Read the token from standard input.
    #[arg(long, conflicts_with = "token")]
    pub token_stdin: bool,

    /// Where to keep the token.
    #[arg(long, env = env_vars::CREDENTIAL_STORE, value_enum, default_value_t = CredentialStoreChoice::Auto)]
    pub credential_store: CredentialStoreChoice,

    /// Register even though a runner on another machine is connected to
    /// the environment: `runner run` here will replace it (it stops).
    #[arg(long)]
    pub replace: bool,

    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Relay URL. With RUNNER_TOKEN also set in the environment, `run` needs
    /// no prior `register` (how the service and the container image run);
    /// otherwise the registration from `runner register` is used.
    #[arg(long, env = env_vars::URL)]
    pub url: Option<String>,

    /// Root directory for relative paths of file tools and the default
    /// working directory of `shell` (default: STATE_DIR/workspace).
    #[arg(long, env = env_vars::WORKSPACE, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Local permission file (YAML, key `permission`) checked before any
    /// command runs. Unset: every command is allowed. Set but missing or
    /// invalid: the runner refuses to start.
    #[arg(long, env = env_vars::PERMISSION_CONFIG, value_name = "FILE")]
    pub permission_config: Option<PathBuf>,

    /// Log every call that ran ("call finished": call id, tool, exit
    /// code, ms) at info, target `runner_cli::calls`: this machine's own
    /// record of what ran on it, whoever runs the relay. `false` leaves
    /// it to the relay's journal, for a runner taking thousands of calls
    /// a second (the line is a measurable share of a short call's CPU,
    /// and journald's rate limit drops every line of a service past
    /// 10,000 in 30 s). Calls that fail (refused by the permission file, bad
    /// arguments, a command that cannot start) are logged either way
    /// ("call failed").
    #[arg(long, env = env_vars::CALL_LOG, default_value_t = true,
          action = clap::ArgAction::Set, value_name = "BOOL",
          value_parser = clap::builder::BoolishValueParser::new())]
    pub call_log: bool,

    /// Calls executed at once; more wait in a queue (reported as backlog).
    #[arg(long, env = env_vars::MAX_CONCURRENT_CALLS, default_value_t = 32)]
    pub max_concurrent_calls: usize,

    /// Most MiB the files keeping large outputs (WORKSPACE/.runner/output)
    /// may hold; past it the oldest are removed when a new one is written
    /// (they are also removed after 7 days).
    #[arg(long, env = env_vars::KEPT_OUTPUT_MAX_MB, value_name = "MIB",
          default_value_t = crate::exec::kept::DEFAULT_OUTPUT_CAP_MB,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub kept_output_max_mb: u64,

    /// Threads that run the connection and the calls' I/O. One is enough
    /// for most hosts and the fastest: commands run in their own
    /// processes, file and search tools on a separate pool, and one thread
    /// never has to wake another to hand a call on (`ping` 0.88× and 28 %
    /// less CPU per call than two threads, output streams as fast). Raise
    /// it for many large output streams at once.
    #[arg(long, env = env_vars::WORKER_THREADS, default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=1024), value_name = "N")]
    pub worker_threads: u16,

    /// MCP servers to start and relay (YAML, key `servers`); their tools are
    /// announced as SERVER__TOOL. Set but unusable: the runner refuses to start.
    #[arg(long, env = env_vars::MCP_CONFIG, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,

    /// How to install Chromium when the environment asks for browser tools
    /// and no browser is on PATH: a program and its arguments separated by
    /// spaces (no quoting; run without a shell, as the runner's user). Beats
    /// `browser_install_command` in config.yaml. Unset: the package manager
    /// on PATH (apt-get, dnf, apk, zypper, pacman), as root only.
    #[arg(long, env = env_vars::BROWSER_INSTALL_COMMAND, value_name = "COMMAND")]
    pub browser_install_command: Option<String>,

    /// Serve /healthz (200 when connected, 503 otherwise), /status.json
    /// and /metrics (Prometheus) on this address, e.g. 127.0.0.1:9464, for
    /// load balancers, watchdogs and monitoring. `runner status --local`
    /// works without it.
    #[arg(long, env = env_vars::HEALTH_ADDR, value_name = "ADDR")]
    pub health_addr: Option<std::net::SocketAddr>,

    /// Install newer releases the relay announces (signature and SHA-256
    /// verified, rolled back if the new binary does not connect). `false`
    /// only logs that an update exists.
    #[arg(long, env = env_vars::AUTO_UPDATE, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub auto_update: bool,

    /// Give each process-running call a cgroup of its own where cgroup v2
    /// is writable (the service unit delegates one), so that stopping the
    /// call also stops processes that left its process group and wiped
    /// their environment (`env -i setsid …`). Where the kernel allows
    /// `clone3`, the process is created inside its cgroup, and cgroups are
    /// reused between calls; elsewhere it moves itself in first (≈ 0.5 ms,
    /// more without cgroup2's `favordynmods`: `runner doctor` says which).
    /// `false` keeps to the process group and the RUNNER_CALL_ID marker.
    #[arg(long, env = env_vars::CALL_CGROUPS, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub call_cgroups: bool,

    /// Run tools with the runner's config and state directories (the
    /// credential files among them), the service's environment file and,
    /// when the keychain holds a runner secret, the session bus hidden
    /// from them, the workspace left visible: in a mount namespace (as
    /// root) or a user namespace mapping the runner's own uid (otherwise;
    /// there setuid programs such as sudo do not raise privileges). `auto`
    /// does it where this host allows and says once where it does not,
    /// `on` refuses to start there; `runner doctor` says which applies.
    #[arg(long, env = env_vars::HIDE_RUNNER_FILES, value_enum, value_name = "WHEN",
          default_value_t = crate::exec::tool_view::HideRunnerFiles::Auto)]
    pub hide_runner_files: crate::exec::tool_view::HideRunnerFiles,

    /// Exit (0) after this many seconds without a call: a sandbox's runner,
    /// whose host then destroys the sandbox.
    #[arg(long, hide = true, value_name = "SECONDS")]
    pub idle_exit_s: Option<u64>,

    /// Exit (0) this many seconds after start, whatever it is doing.
    #[arg(long, hide = true, value_name = "SECONDS")]
    pub max_lifetime_s: Option<u64>,

    /// HTTP proxy for the relay connection only, not passed to tools (a
    /// sandbox's way out to its relay).
    #[arg(long, hide = true, value_name = "URL")]
    pub relay_proxy: Option<String>,
}

#[derive(Debug, Args)]
pub struct SandboxHostArgs {
    /// Relay URL (with RUNNER_TOKEN in the environment; otherwise the
    /// registration's).
    #[arg(long, env = env_vars::URL)]
    pub url: Option<String>,

    /// Sandboxes run at once at most (default: eight per CPU, at most one
    /// per 256 MiB of memory, at least one).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub slots: Option<u32>,

    /// A sandbox's memory limit, MiB, unless the relay's request sets one.
    #[arg(long, default_value_t = 2048, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(16..))]
    pub sandbox_memory_mb: u64,

    /// A sandbox's limit of processes and threads, unless the request sets one.
    #[arg(long, default_value_t = 1024, value_name = "N",
          value_parser = clap::value_parser!(u32).range(8..))]
    pub sandbox_pids: u32,

    /// A sandbox's CPU quota in CPUs (1.5: one and a half), unless the
    /// request sets one. Default: no quota.
    #[arg(long, value_name = "CPUS")]
    pub sandbox_cpus: Option<f64>,

    /// A full root file system (made by mmdebstrap or debootstrap) to use
    /// as every sandbox's read-only lower layer, instead of the
    /// host-derived base (the host's /usr and a filtered copy of /etc).
    #[arg(long, value_name = "DIR")]
    pub base_image: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Also check that this machine can run sandboxes (`runner sandbox-host`).
    #[arg(long)]
    pub sandbox_host: bool,
    /// Permission file to validate (as `runner run` would load it).
    #[arg(long, env = env_vars::PERMISSION_CONFIG, value_name = "FILE")]
    pub permission_config: Option<PathBuf>,
    /// Workspace to check (default: STATE_DIR/workspace). Checked, never
    /// created.
    #[arg(long, env = env_vars::WORKSPACE, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The cap `runner run` keeps large outputs under, to compare the
    /// workspace's kept output with.
    #[arg(long, env = env_vars::KEPT_OUTPUT_MAX_MB, value_name = "MIB",
          default_value_t = crate::exec::kept::DEFAULT_OUTPUT_CAP_MB,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub kept_output_max_mb: u64,
    /// The install command `runner run` would use for Chromium (as its
    /// `--browser-install-command`), to say whether it can install one.
    #[arg(long, env = env_vars::BROWSER_INSTALL_COMMAND, value_name = "COMMAND")]
    pub browser_install_command: Option<String>,
    /// Whether `runner run` hides its files from tools (as it would be
    /// started), to check that this machine allows it.
    #[arg(long, env = env_vars::HIDE_RUNNER_FILES, value_enum, value_name = "WHEN",
          default_value_t = crate::exec::tool_view::HideRunnerFiles::Auto)]
    pub hide_runner_files: crate::exec::tool_view::HideRunnerFiles,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ServiceCommand {
    /// Write the service definition and /etc/runner/env, create the user, enable and start it.
    Install(ServiceInstallArgs),
    /// Stop and remove the service (keeps /etc/runner/env unless --purge).
    Uninstall(ServiceUninstallArgs),
    /// Start the service.
    Start,
    /// Stop the service.
    Stop,
    /// Show the service manager's view of the service (where there is
    /// none, says so and how to run the runner instead).
    Status,
    /// Show the service's logs.
    Logs {
        /// Keep printing new lines.
        #[arg(long, short)]
        follow: bool,
        /// How many recent lines to show.
        #[arg(long, short = 'n', default_value_t = 100)]
        lines: u32,
    },
}

#[derive(Debug, Args)]
pub struct ServiceInstallArgs {
    /// Run as this existing user instead of a dedicated `runner` user (for
    /// their kubeconfig or docker group); home protection is relaxed for
    /// that user's home only.
    #[arg(long, env = env_vars::RUN_AS, value_name = "USER")]
    pub run_as: Option<String>,
    /// Print what would be written and run, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write every file under DIR instead of / and do not touch users or
    /// services (for packaging and tests).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Relay URL (default: this user's registration).
    #[arg(long, env = env_vars::URL)]
    pub url: Option<String>,
    /// Path of the installed runner binary the service starts (default
    /// /usr/local/bin/runner); it must exist (under --root, or as given).
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    /// Check the token against the relay before installing, and refuse a
    /// token it refuses. The default checks whenever the relay answers and
    /// only warns when it cannot be reached; --verify also refuses then.
    #[arg(long, overrides_with = "no_verify")]
    pub verify: bool,
    /// Install without checking the token against the relay.
    #[arg(long, overrides_with = "verify")]
    pub no_verify: bool,
    /// Permission file the service passes to `runner run`.
    #[arg(long, value_name = "FILE")]
    pub permission_config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServiceUninstallArgs {
    /// Also remove /etc/runner/env (the runner's token and settings); asks
    /// first, --yes for scripts.
    #[arg(long)]
    pub purge: bool,
    /// Do not ask for confirmation before --purge.
    #[arg(long, short)]
    pub yes: bool,
    /// Remove files under DIR instead of /.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Only compare this version with the mirror's latest; change nothing.
    /// Exits 0 when up to date, 11 when an update is available.
    #[arg(long)]
    pub check: bool,

    /// Restore the binary the last update replaced (runner.previous).
    #[arg(long, conflicts_with = "check")]
    pub rollback: bool,

    /// The root half of a service's self-update, run by the systemd unit's
    /// `ExecStartPre=` before each start: install the release the runner
    /// asked for (verified again, newer only), or roll back an update that
    /// failed its probation. Does nothing when nothing was asked. Always
    /// exits 0, so it can never keep the service from starting.
    #[arg(long, conflicts_with_all = ["check", "rollback"], hide_short_help = true)]
    pub service_step: bool,

    /// Release mirror serving releases/latest and releases/download/
    /// (default: the registered relay URL).
    #[arg(long, env = crate::update::MIRROR_ENV, value_name = "URL")]
    pub mirror: Option<String>,

    /// Do not ask for confirmation on a terminal.
    #[arg(long, short)]
    pub yes: bool,

    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UnregisterArgs {
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Base URL of the relay (required: this flag or RUNNER_URL).
    #[arg(long, env = env_vars::URL)]
    pub url: Option<String>,

    /// Read the API key from standard input.
    #[arg(long)]
    pub api_key_stdin: bool,

    /// Where to keep the API key.
    #[arg(long, env = env_vars::CREDENTIAL_STORE, value_enum, default_value_t = CredentialStoreChoice::Auto)]
    pub credential_store: CredentialStoreChoice,
}

// Connection to the relay's API, shared by the admin commands. (A `//`
// comment: a doc comment on a flattened struct would become the `about` of
// every deferred subcommand that flattens it.)
#[derive(Debug, Args, Clone)]
pub struct ApiArgs {
    /// Relay URL (default: the one stored by `runner login`).
    #[arg(long, env = env_vars::URL, global = true)]
    pub url: Option<String>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EnvTarget {
    /// Environment id or name.
    pub env: String,

    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Environment id or name (not with --local).
    #[arg(required_unless_present = "local", conflicts_with = "local")]
    pub env: Option<String>,

    /// Report the runner of this machine (its state directory): connected
    /// or not and why, relay, version, calls in flight and queued.
    #[arg(long)]
    pub local: bool,

    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TierArg {
    Production,
    Development,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum EnvCommand {
    /// Create an environment.
    Create(EnvCreateArgs),
    /// List the environments you can see.
    List(ApiArgs),
    /// Show one environment.
    Show(EnvTarget),
    /// Change an environment's fields or policy.
    Update(EnvUpdateArgs),
    /// Delete an environment (cannot be undone; its runner stops).
    Delete(EnvDeleteArgs),
    /// Run the environment's runner on a sandbox host (a managed runner
    /// with a new token nobody sees; the previous token keeps working for
    /// the grace period). Replaces a runner installed by hand.
    Deploy(EnvDeployArgs),
    /// Stop the environment's managed runner.
    Undeploy(EnvTarget),
    /// Show the environment's newest deployment and its state.
    Deployment(EnvTarget),
}

#[derive(Debug, Args)]
pub struct EnvDeployArgs {
    /// Environment id or name.
    pub env: String,
    /// Hours the previous token keeps working (0–168).
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(i64).range(0..=168))]
    pub grace_hours: i64,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct EnvCreateArgs {
    /// Unique name (≤128 characters); blank: the first runner's hostname.
    #[arg(long, default_value = "")]
    pub name: String,
    #[arg(long, default_value = "")]
    pub description: String,
    /// `shared` or `team:NAME`; fixed at creation.
    #[arg(long)]
    pub scope: Option<String>,
    #[arg(long, value_enum, default_value_t = TierArg::Production)]
    pub tier: TierArg,
    /// Routing tag; repeat for several.
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// Type label (default `Local`). `sandbox-host` makes a sandbox host's
    /// environment (organisation admins, shared scope; its policy is the
    /// relay's): run `runner sandbox-host` with its token.
    #[arg(long = "type", value_name = "TYPE")]
    pub env_type: Option<String>,
    #[command(flatten)]
    pub policy: PolicyFlags,
    #[command(flatten)]
    pub api: ApiArgs,
}

// Policy flags shared by `env create` and `env update` (`//`: see ApiArgs).
#[derive(Debug, Args)]
pub struct PolicyFlags {
    /// Allow every tool the runner announces.
    #[arg(long, conflicts_with = "allow_tool")]
    pub allow_all_tools: bool,
    /// Allow this tool; repeat for several (replaces the list; `''` allows
    /// none).
    #[arg(long = "allow-tool", value_name = "TOOL")]
    pub allow_tool: Vec<String>,
    /// Directory under which file tools work (`*` for all); repeat for
    /// several (replaces the list; `''` clears it).
    #[arg(long = "file-path", value_name = "DIR")]
    pub file_path: Vec<String>,
    /// Tool that needs a person's approval; repeat for several (replaces
    /// the list; `''` clears it).
    #[arg(long = "require-approval", value_name = "TOOL")]
    pub require_approval: Vec<String>,
}

#[derive(Debug, Args)]
pub struct EnvUpdateArgs {
    /// Environment id or name.
    pub env: String,
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    #[arg(long, value_enum)]
    pub tier: Option<TierArg>,
    /// Replace the tags; repeat for several.
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub policy: PolicyFlags,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct EnvDeleteArgs {
    /// Environment id or name.
    pub env: String,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TemplateCommand {
    /// Create a template.
    Create(TemplateCreateArgs),
    /// List the templates you can see.
    List(ApiArgs),
    /// Show one template (--json: with its variables and setup script).
    Show(TemplateTarget),
    /// Change a template's fields (not its scope).
    Edit(TemplateEditArgs),
    /// Delete a template (sessions using it keep working; their new
    /// sandboxes get the default configuration).
    Delete(TemplateDeleteArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NetworkArg {
    /// No network but loopback.
    None,
    /// The host's network, unfiltered.
    #[value(alias = "allow_all")]
    AllowAll,
    /// Only the --allow-domain domains, through a proxy.
    Allowlist,
}

#[derive(Debug, Args)]
pub struct TemplateTarget {
    /// Template id or name.
    pub template: String,
    #[command(flatten)]
    pub api: ApiArgs,
}

// Fields `template create` and `template edit` share (`//`: see ApiArgs).
#[derive(Debug, Args)]
pub struct TemplateFields {
    #[arg(long)]
    pub description: Option<String>,
    /// Where sandboxes may connect (default for a new template: none).
    #[arg(long, value_enum)]
    pub network: Option<NetworkArg>,
    /// A domain (and its subdomains) --network allowlist lets through;
    /// repeat for several (replaces the list; `''` clears it).
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    pub allow_domain: Vec<String>,
    /// Environment variables in `.env` form (KEY=value lines, comments,
    /// quoted values; at most 32 KiB); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
    /// Bash script run as root in each new sandbox before its first call
    /// (at most 64 KiB); `-` reads standard input, an empty file removes it.
    #[arg(long, value_name = "FILE")]
    pub setup_script: Option<PathBuf>,
    /// Stop a sandbox after this long without a call (e.g. 900, 15m, 2h;
    /// default for a new template: 15m).
    #[arg(long, value_name = "DURATION", value_parser = parse_seconds)]
    pub idle_timeout: Option<u64>,
    /// Stop a sandbox after this long whatever it does (e.g. 8h, 2d;
    /// default for a new template: 8h).
    #[arg(long, value_name = "DURATION", value_parser = parse_seconds)]
    pub max_lifetime: Option<u64>,
}

#[derive(Debug, Args)]
pub struct TemplateCreateArgs {
    /// Unique name (≤128 characters).
    pub name: String,
    /// `shared` or `team:NAME`; fixed at creation.
    #[arg(long)]
    pub scope: Option<String>,
    #[command(flatten)]
    pub fields: TemplateFields,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct TemplateEditArgs {
    /// Template id or name.
    pub template: String,
    /// A new name.
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub fields: TemplateFields,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct TemplateDeleteArgs {
    /// Template id or name.
    pub template: String,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TokenCommand {
    /// Generate a new token (the previous one keeps working for the grace
    /// period); `rotate` is the same command.
    #[command(visible_alias = "rotate")]
    Generate(TokenGenerateArgs),
    /// Show the token's age, last use and days to expiry (never the token).
    Status(EnvTarget),
    /// Invalidate every token of the environment and disconnect its runner
    /// (asks first, as `env delete` does; --yes for scripts).
    Revoke(TokenRevokeArgs),
}

#[derive(Debug, Args)]
pub struct TokenRevokeArgs {
    /// Environment id or name.
    pub env: String,
    /// Do not ask for confirmation.
    #[arg(long, short)]
    pub yes: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct TokenGenerateArgs {
    /// Environment id or name.
    pub env: String,
    /// Hours the previous token keeps working (0–168). 0 cuts the
    /// connected runner off at once, so it asks first (--yes for scripts).
    #[arg(long, default_value_t = 24)]
    pub grace_hours: u32,
    /// Do not ask for confirmation before --grace-hours 0.
    #[arg(long, short)]
    pub yes: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum SessionCommand {
    /// Start a session and print its id (alone: `$(runner session create)`).
    Create(SessionCreateArgs),
    /// List your sessions (every session for organisation admins).
    List(SessionListArgs),
    /// Show a session: its environment and that environment's status now,
    /// why it was chosen, last use and expiry.
    Show(SessionTarget),
    /// End a session; later calls through it fail.
    End(SessionTarget),
}

#[derive(Debug, Args)]
pub struct SessionCreateArgs {
    /// `auto` (an online runner you may use), `sandbox`, or an environment
    /// id or name. Default: the agent's default environment, else its
    /// team's, else `auto`.
    #[arg(long, value_name = "auto|sandbox|ENV")]
    pub env: Option<String>,
    /// Tag `auto` prefers (an environment carrying all of them wins);
    /// repeat for several.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// The agent (member id or name) the session works for, whose default
    /// environment applies.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// The template (id or name) that prepares the session's sandbox
    /// (with `--env sandbox`, or `auto` when it gets one).
    #[arg(long, value_name = "TEMPLATE")]
    pub template: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SessionStateArg {
    Open,
    Ended,
    Expired,
}

#[derive(Debug, Args)]
pub struct SessionListArgs {
    /// Only sessions in this state.
    #[arg(long, value_enum)]
    pub state: Option<SessionStateArg>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only entries about this environment (id).
    #[arg(long, value_name = "ENV_ID")]
    pub env: Option<String>,
    /// Only entries by this member (id).
    #[arg(long, value_name = "MEMBER_ID")]
    pub actor: Option<String>,
    /// Only this action, e.g. tool.invoke, token.generate, auth.failed.
    #[arg(long, value_name = "ACTION")]
    pub action: Option<String>,
    /// Only calls through this session.
    #[arg(long, value_name = "SESSION_ID")]
    pub session: Option<String>,
    /// Only calls of this tool.
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// Only entries at or after this time (RFC 3339 or Unix seconds).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only entries before this time (RFC 3339 or Unix seconds).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// At most this many entries (default: 50 in the table, all with
    /// --json).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Keep printing new entries as they are recorded (polls every 2 s;
    /// stop with Ctrl-C).
    #[arg(long)]
    pub follow: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct SessionTarget {
    /// Session id (`ses_…`).
    pub session: String,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ApprovalsCommand {
    /// List approvals you may see, newest first (default: pending ones).
    List(ApprovalsListArgs),
    /// Show one approval: the call in full (values of `env` masked), who
    /// asked, the rule, the decision, the call's end and the webhook's
    /// delivery.
    Show(ApprovalShowArgs),
    /// Approve: the stored call runs once, exactly as asked. Approving
    /// again changes nothing.
    Approve(ApprovalDecideArgs),
    /// Deny: the call never runs; its requester's invoke exits 66.
    Deny(ApprovalDecideArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalStatusArg {
    Pending,
    Approved,
    Denied,
    Expired,
    All,
}

#[derive(Debug, Args)]
pub struct ApprovalsListArgs {
    /// Only approvals in this state.
    #[arg(long, value_enum, default_value = "pending")]
    pub status: ApprovalStatusArg,
    /// Only approvals of this environment (id or name).
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct ApprovalShowArgs {
    /// Approval id (`apr_…`).
    pub approval: String,
    /// Wait until the approval is settled (denied, expired, or approved and
    /// its call ended), up to this long: 90s, 10m, 1h.
    #[arg(long, value_name = "DURATION", value_parser = parse_wait)]
    pub wait: Option<std::time::Duration>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct ApprovalDecideArgs {
    /// Approval id (`apr_…`).
    pub approval: String,
    /// Why, for the record (shown to the requester).
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Debug, Args)]
pub struct InvokeArgs {
    /// The environment (id or name), then the tool (e.g. shell, file_read,
    /// kubectl). The tool alone with --session (or RUNNER_SESSION), or
    /// with RUNNER_ENV set (dev mode's dev.env sets it): a named
    /// environment wins over both variables.
    #[arg(value_names = ["ENV", "TOOL"], num_args = 1..=2, required = true)]
    pub target: Vec<String>,
    /// Run the tool where this session runs its calls (the first call of a
    /// session picks the machine). Default: RUNNER_SESSION.
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// Argument as KEY=VALUE (a string) or KEY:=JSON (a number, bool, list…).
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// All arguments as one JSON object (merged under --arg).
    #[arg(long, value_name = "JSON")]
    pub args_json: Option<String>,
    /// Seconds before the relay gives up and cancels the call (1–3600).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Print the tool's output as it is produced, byte for byte (stdout to
    /// stdout, stderr to stderr: binary output can be piped), then exit
    /// with the tool's exit code.
    #[arg(long)]
    pub stream: bool,
    /// When the tool needs a person's approval, ask for one and wait up to
    /// DURATION (default 10m) for the decision and the call; its approval id
    /// goes to stderr. Denied or expired: exit 66; still pending: 75.
    /// Tools that need no approval run at once.
    #[arg(long, value_name = "DURATION", num_args = 0..=1, require_equals = true,
          default_missing_value = "10m", value_parser = parse_wait)]
    pub wait_approval: Option<std::time::Duration>,
    /// The call's id (1–128 of A-Z a-z 0-9 . _ : -): the relay runs a call
    /// id once, and answers it again with that call's answer. Default: a
    /// fresh one, with which invoke asks again when it loses the relay
    /// mid-call; pass the id a lost invoke printed to fetch that call's
    /// answer without running it twice.
    #[arg(long, value_name = "ID")]
    pub call_id: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// `--wait-approval` and `--wait`: `90`, `90s`, `10m`, `1h` (at most 24 h).
/// Parses a duration in whole seconds: `900`, `90s`, `15m`, `8h`, `2d`.
pub fn parse_seconds(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?} is not a duration like 900, 15m, 8h or 2d"
            ))
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|value| value.checked_mul(factor))
        .ok_or_else(|| format!("{text:?} is not a duration like 900, 15m, 8h or 2d"))
}

pub fn parse_wait(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(format!("{text:?} is not a duration like 90s, 10m or 1h")),
    };
    match number.parse::<u64>() {
        Ok(value) if value > 0 && value * factor <= 86_400 => {
            Ok(std::time::Duration::from_secs(value * factor))
        }
        _ => Err(format!(
            "{text:?} is not a duration from 1s to 24h (e.g. 90s, 10m, 1h)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `defer = true` on every subcommand enum: a process builds only the
    /// arguments of the command it runs, so a short command does not pay
    /// for building every other command's arguments.
    #[test]
    fn only_the_command_that_runs_builds_its_arguments() {
        fn own_arguments(command: &clap::Command) -> usize {
            command
                .get_arguments()
                .filter(|arg| !arg.is_global_set())
                .count()
        }
        let unbuilt = Cli::command();
        let mut built = Cli::command();
        built.build();
        for name in ["invoke", "run", "register", "status", "doctor", "tools"] {
            let deferred = unbuilt.find_subcommand(name).expect(name);
            let whole = built.find_subcommand(name).expect(name);
            assert_eq!(own_arguments(deferred), 0, "`{name}` was built eagerly");
            assert!(
                own_arguments(whole) > 0,
                "`{name}` has no arguments once built"
            );
        }
        for (parent, name) in [
            ("env", "create"),
            ("token", "generate"),
            ("service", "install"),
        ] {
            let deferred = unbuilt.find_subcommand(parent).expect(parent);
            let whole = built.find_subcommand(parent).expect(parent);
            let eager = deferred.find_subcommand(name).map_or(0, own_arguments);
            assert_eq!(eager, 0, "`{parent} {name}` was built eagerly");
            let arguments = whole.find_subcommand(name).map_or(0, own_arguments);
            assert!(
                arguments > 0,
                "`{parent} {name}` has no arguments once built"
            );
        }
    }
}

// `runner policy` (run by `commands::policy`).
#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum PolicyCommand {
    /// Check one command against a permission file: exit 0 allowed, 1 denied,
    /// 2 the file was refused
    Check(CheckArgs),
    /// Load a permission file and report errors and rules that can never
    /// decide anything: exit 0 clean, 1 warnings, 2 refused
    Lint(LintArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The permission file (YAML with a top-level `permission` mapping)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Print the decision as one JSON object on stdout
    #[arg(long)]
    pub json: bool,
    /// Read the command from standard input instead of the arguments
    #[arg(long, conflicts_with = "command")]
    pub stdin: bool,
    /// The shell command (several arguments are joined with spaces)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The permission file
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the result as one JSON object on stdout
    #[arg(long)]
    pub json: bool,
}
