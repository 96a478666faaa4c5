//! `runner`: the program a user installs on a machine they control.
//!
//! `main.rs` only calls [`main`]; everything else is here so tests can reach
//! it. Commands return `Result`; [`main`] is the one place that turns errors
//! into exit codes and prints them (`error:` / `Caused by:` / `hint:`).

pub mod agent;
pub mod args;
pub mod assets;
pub mod call;
pub mod client;
pub mod commands;
pub mod config;
pub mod credentials;
pub mod env_vars;
pub mod exec;
pub mod exit;
pub mod gate;
pub mod output;
pub mod sandbox;
pub mod secret;
pub mod service;
pub mod tls;
pub mod tools;
pub mod update;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command, LogFormat};
use config::Dirs;

/// Parses the command line, runs the command, and maps the outcome to an
/// exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before any runtime: `sandbox-enter` unshares its mount namespace,
    // which a process with more than one thread cannot, and `tool-view`
    // its user namespace.
    match &cli.command {
        Command::SandboxEnter { plan } => {
            init_tracing(cli.global.log_format, false);
            return report(&sandbox::isolation::enter::enter(plan));
        }
        Command::SandboxInit => {
            init_tracing(cli.global.log_format, false);
            return sandbox::init::main();
        }
        // `unshare(CLONE_NEWUSER)` too.
        Command::ToolView => return exec::tool_view::holder::main(),
        _ => {}
    }
    let call_log = matches!(&cli.command, Command::Run(args) if args.call_log);
    init_tracing(cli.global.log_format, call_log);
    // `policy` is synchronous and must not pay for a runtime.
    if let Command::Policy(command) = cli.command {
        return match commands::policy::run(command) {
            Ok(code) => code,
            Err(error) => report(&error),
        };
    }
    // `run` serves many calls at once on its worker threads (one unless
    // `--worker-threads` says more). Every other command is one
    // conversation with a relay or the local system, for which worker
    // threads only cost start-up (counting the cores, starting the
    // threads, waking them).
    let mut builder = if let Command::Run(args) = &cli.command {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(usize::from(args.worker_threads));
        builder
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            return report(&anyhow::Error::from(error).context("starting the async runtime"))
        }
    };
    // On a worker thread, not on this one (for `run`): then the socket's
    // readiness, the session loop and the calls it starts wake each other
    // on the same worker instead of across threads, which shortens every
    // call. A panic in a command becomes an error either way. Boxed: the
    // future of every command at once is large, and the task would
    // otherwise copy it several times on its way in and out.
    let outcome = runtime.block_on(async {
        tokio::spawn(Box::pin(dispatch(cli)))
            .await
            .unwrap_or_else(|error| Err(anyhow::anyhow!("the command panicked: {error}")))
    });
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => report(&error),
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    let dirs = Dirs::resolve(&cli.global)?;
    tls::configure(tls::TlsOptions {
        ca_file: cli.global.ca_file.clone(),
        insecure_skip_verify: cli.global.insecure_skip_tls_verify.unwrap_or(false),
    })?;
    match cli.command {
        Command::Register(args) => commands::register::register(&dirs, args).await?,
        Command::Unregister(args) => commands::register::unregister(&dirs, args).await?,
        Command::Run(args) => commands::run::run(&dirs, args).await?,
        Command::Login(args) => commands::login::login(&dirs, args).await?,
        Command::Logout(args) => commands::login::logout(&dirs, args).await?,
        Command::Env(command) => commands::env::run(&dirs, command).await?,
        Command::Session(command) => commands::session::run(&dirs, command).await?,
        Command::Approvals(command) => commands::approvals::run(&dirs, command).await?,
        Command::Audit(args) => commands::audit::run(&dirs, args).await?,
        Command::Token(command) => commands::token::run(&dirs, command).await?,
        Command::Template(command) => commands::template::run(&dirs, command).await?,
        Command::Tools(target) => commands::tools::run(&dirs, target).await?,
        Command::Status(args) => return commands::status::run(&dirs, args).await,
        Command::Doctor(args) => return commands::doctor::run(&dirs, args).await,
        Command::Service(command) => commands::service::run(&dirs, command).await?,
        Command::Invoke(args) => return commands::invoke::run(&dirs, args).await,
        Command::Update(args) => return commands::update::run(&dirs, args).await,
        Command::SandboxHost(args) => commands::sandbox_host::run(&dirs, args).await?,
        Command::GenerateAssets { out } => {
            for path in assets::generate(&out)? {
                output::note(&format!("wrote {}", path.display()));
            }
        }
        // Handled in `main` before the runtime starts.
        Command::Policy(_)
        | Command::SandboxEnter { .. }
        | Command::SandboxInit
        | Command::ToolView => {}
    }
    Ok(exit::OK)
}

/// Prints an error the uv way and picks its exit code.
fn report(error: &anyhow::Error) -> ExitCode {
    // Broken pipe (e.g. `runner env list | head -1`) is not an error.
    if error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().map(|e| e.kind())
            == Some(std::io::ErrorKind::BrokenPipe)
    }) {
        return ExitCode::SUCCESS;
    }
    let mut stderr = std::io::stderr().lock();
    let (code, hint) = match error.downcast_ref::<exit::ExitError>() {
        Some(exit_error) => (exit_error.code, exit_error.hint.clone()),
        None => (exit::FAILURE, None),
    };
    let _ = writeln!(stderr, "error: {error}");
    for cause in error.chain().skip(1) {
        let _ = writeln!(stderr, "  Caused by: {cause}");
    }
    if let Some(hint) = hint {
        let _ = writeln!(stderr, "hint: {hint}");
    }
    ExitCode::from(code)
}

fn init_tracing(format: LogFormat, call_log: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env(env_vars::LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        // The flag alone decides, whatever RUNNER_LOG says of other
        // targets: off, the per-call line is never even built.
        .add_directive(agent::session::call_log_directive(call_log));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.with_ansi(use_colour()).try_init(),
    };
}

/// Colour only on a terminal, never with NO_COLOR.
fn use_colour() -> bool {
    use std::io::IsTerminal;
    no_color_unset() && std::io::stderr().is_terminal()
}

/// The same rule for output on stdout.
pub fn use_colour_on_stdout() -> bool {
    use std::io::IsTerminal;
    no_color_unset() && std::io::stdout().is_terminal()
}

fn no_color_unset() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
