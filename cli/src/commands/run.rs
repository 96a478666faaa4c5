//! `runner run`: the long-running part.

use std::sync::Arc;

use anyhow::{Context, Result};
use runner_proto::ws::{Hello, HostFacts};
use runner_proto::PROTOCOL_VERSION;
use tokio_util::sync::CancellationToken;

use crate::agent::autoupdate::{self, AutoUpdate};
use crate::agent::health::{self, Health};
use crate::agent::{self, lock, session::SessionConfig, Probation};
use crate::args::RunArgs;
use crate::client;
use crate::config::{ConfigFile, Dirs, SecretLocation};
use crate::credentials::{self, SecretKind};
use crate::env_vars;
use crate::exit::{self, ExitError};
use crate::gate::Boundary;
use crate::secret::Secret;
use crate::tools;
use crate::tools::browser::install::{InstallCommand, Installer};
use crate::update;

pub async fn run(dirs: &Dirs, args: RunArgs) -> Result<()> {
    // Before any secret is read: nothing a tool runs can read it back.
    agent::process_secrecy::hide_from_tools();
    // Read once: every setting below comes from the same file.
    let config = ConfigFile::load(dirs)?;
    let (url, token_source) = connection_settings(&config, args.url.as_deref())?;
    let install_command =
        browser_install_command(args.browser_install_command.as_deref(), &config)?;
    if let Some(proxy) = &args.relay_proxy {
        let proxy = agent::dial::parse_proxy(proxy).ok_or_else(|| {
            ExitError::new(
                exit::CONFIG,
                format!("--relay-proxy {proxy:?} is not a proxy URL"),
            )
        })?;
        agent::dial::set_relay_proxy(proxy);
    }

    // Fail closed: a configured permission file that can't be loaded stops
    // the runner before it ever connects.
    let permissions = match &args.permission_config {
        Some(path) => {
            let set = runner_policy::PermissionSet::load(path).map_err(|error| {
                ExitError::new(exit::CONFIG, format!("refusing to start: {error}"))
                    .with_hint("fix the file (`runner policy lint FILE`), or unset --permission-config / RUNNER_PERMISSION_CONFIG")
            })?;
            tracing::info!(path = %path.display(), rules = set.rules().len(), "permission file loaded");
            Some(Arc::new(set))
        }
        None => {
            tracing::info!("no permission file configured: every command is allowed");
            None
        }
    };

    let _lock = lock::acquire(&dirs.state)?;
    // Under the lock and before any call of this run: what a killed or
    // crashed previous run left is stopped, and no call of ours yet.
    agent::leftovers::stop_previous_run(&dirs.state).await?;
    let token = match token_source {
        TokenSource::Environment(token) => token,
        TokenSource::Stored(location) => {
            credentials::load(dirs, SecretKind::RegistrationToken, location).await?
        }
    };

    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => dirs.state.join("workspace"),
    };
    fs_err::create_dir_all(&workspace)?;
    // The relay's policy (in `welcome`) supplies the file-access list.
    let boundary = Boundary::new(&workspace, Vec::new())
        .with_context(|| format!("workspace {}", workspace.display()))?;
    let runner_files = agent::process_secrecy::runner_files(
        dirs,
        &config,
        boundary.root(),
        args.mcp_config.as_deref(),
    );
    // File tools run in the runner's own namespace: they refuse these
    // paths unless hiding is off.
    let boundary = match args.hide_runner_files {
        crate::exec::tool_view::HideRunnerFiles::Off => boundary,
        _ => boundary.hiding(runner_files.plan.cover.clone()),
    };
    agent::process_secrecy::hide_runner_files(args.hide_runner_files, runner_files)
        .await
        .map_err(|why| {
            ExitError::new(
                exit::CONFIG,
                format!("refusing to start: cannot hide the runner's files from tools: {why}"),
            )
            .with_hint("--hide-runner-files auto runs tools without hiding them where this machine cannot (`runner doctor` says why)")
        })?;

    // Like the permission file: a configured MCP config that cannot be used
    // stops the runner before it connects.
    let toolbox = tools::Toolbox::start(args.mcp_config.as_deref())
        .await
        .map_err(|error| ExitError::new(exit::CONFIG, format!("refusing to start: {error}")))?;

    let hello = Hello {
        protocol_version: PROTOCOL_VERSION,
        runner_version: env!("CARGO_PKG_VERSION").to_owned(),
        instance_id: uuid::Uuid::new_v4().to_string(),
        host: HostFacts {
            hostname: hostname(),
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
            workspace: boundary.root().display().to_string(),
        },
        tools: toolbox.catalogue(),
        sandbox_capacity: None,
    };
    tracing::info!(
        relay = %url,
        workspace = %boundary.root().display(),
        "starting"
    );
    let health = Arc::new(Health::new(
        &url,
        args.max_concurrent_calls,
        Some(&dirs.state),
    ));
    health.publish();
    crate::exec::kept::set_output_cap(args.kept_output_max_mb.saturating_mul(1024 * 1024));
    // A cap lowered since the last run applies at once.
    let removed =
        crate::exec::kept::enforce_cap(boundary.root(), crate::exec::kept::output_cap(), &[]);
    if !removed.is_empty() {
        tracing::info!(
            removed = removed.len(),
            "kept output over its cap: removed the oldest files"
        );
    }
    crate::agent::probe::start(boundary.root().to_path_buf(), Arc::clone(&health.executor));
    if let Some(addr) = args.health_addr {
        health::serve(addr, Arc::clone(&health))
            .await
            .map_err(|error| {
                ExitError::new(
                    exit::CONFIG,
                    format!(
                        "refusing to start: cannot serve the health endpoint on {addr}: {error}"
                    ),
                )
            })?;
    }
    let (auto_update, probation) = self_update(dirs, &args, &url, &health);
    let browser_install = Installer::start(dirs.state.clone(), install_command);
    let session = SessionConfig {
        url,
        token,
        hello,
        workspace: boundary,
        permissions,
        max_concurrent_calls: args.max_concurrent_calls,
        toolbox,
        isolation: if args.call_cgroups {
            crate::exec::Isolation::CgroupIfAvailable
        } else {
            crate::exec::Isolation::ProcessGroup
        },
        health,
        auto_update,
        browser_install: Some(Arc::new(browser_install)),
    };
    if args.call_cgroups && cfg!(target_os = "linux") {
        // Beside the connection, not before it: the probe starts a process.
        tokio::spawn(async {
            tracing::info!("per-call cgroups: {}", crate::exec::describe().await);
        });
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    if args.idle_exit_s.is_some() || args.max_lifetime_s.is_some() {
        tokio::spawn(agent::lifetime::stop_when_done(
            agent::lifetime::Lifetime {
                idle: args.idle_exit_s.map(std::time::Duration::from_secs),
                max: args.max_lifetime_s.map(std::time::Duration::from_secs),
            },
            Arc::clone(&session.health),
            shutdown.clone(),
        ));
    }
    agent::run_forever(session, shutdown, probation).await
}

/// Self-update for this run (unless `--auto-update false`), and the
/// probation of this binary if an update just installed it.
fn self_update(
    dirs: &Dirs,
    args: &RunArgs,
    url: &str,
    health: &Arc<Health>,
) -> (Option<Arc<AutoUpdate>>, Option<Probation>) {
    let exe = match update::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            tracing::warn!(error = %client::error_chain(&error), "self-update off: cannot find this executable");
            return (None, None);
        }
    };
    // Only a marker for this very executable puts it on probation; one
    // left by another install is not ours to judge.
    let probation = update::pending(&dirs.state)
        .filter(|pending| pending.path == exe)
        .map(|pending| {
            let window = autoupdate::probation();
            tracing::info!(version = %pending.version, previous = %pending.previous_version, window_s = window.as_secs(), "running an update on probation: it must connect in time or it is rolled back");
            Probation {
                pending,
                state_dir: dirs.state.clone(),
                deadline: tokio::time::Instant::now() + window,
            }
        });
    if !args.auto_update {
        tracing::info!("automatic updates are off (--auto-update false)");
        return (None, probation);
    }
    match update::signature::trust_root() {
        Ok(trust) if trust.is_off() => {
            tracing::warn!(
                "automatic updates are off: self-update is {}",
                trust.describe()
            );
            return (None, probation);
        }
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(error = %client::error_chain(&error), "automatic updates are off: no usable release key");
            return (None, probation);
        }
    }
    let mirror = std::env::var(env_vars::UPDATE_MIRROR)
        .ok()
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| url.to_owned());
    let auto_update = AutoUpdate::new(&dirs.state, &mirror, exe, Arc::clone(health));
    (Some(Arc::new(auto_update)), probation)
}

/// Where the token comes from.
pub(crate) enum TokenSource {
    /// RUNNER_TOKEN (service `EnvironmentFile`, container): never stored.
    Environment(Secret),
    /// Stored by `runner register`.
    Stored(SecretLocation),
}

/// URL and token: RUNNER_URL/--url with RUNNER_TOKEN win over the
/// registration, so a service or container needs no `register` step.
pub(crate) fn connection_settings(
    config: &ConfigFile,
    url: Option<&str>,
) -> Result<(String, TokenSource)> {
    let env_token = std::env::var(env_vars::TOKEN)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    if let Some(token) = env_token {
        let url = match (url, &config.registration) {
            (Some(url), _) => url.to_owned(),
            (None, Some(registration)) => registration.url.clone(),
            (None, None) => {
                return Err(
                    ExitError::new(exit::CONFIG, "RUNNER_TOKEN is set but no relay URL")
                        .with_hint("set RUNNER_URL (or pass --url) too")
                        .into(),
                )
            }
        };
        return Ok((
            client::normalise_base_url(&url)?,
            TokenSource::Environment(Secret::new(token)),
        ));
    }
    let registration = config.registration()?;
    let url = url.unwrap_or(&registration.url);
    Ok((
        client::normalise_base_url(url)?,
        TokenSource::Stored(registration.token_location),
    ))
}

/// `--browser-install-command` / RUNNER_BROWSER_INSTALL_COMMAND (a line
/// of words), else the config file's `browser_install_command` (a list).
/// Set but blank: the runner refuses to start.
pub(crate) fn browser_install_command(
    flag: Option<&str>,
    config: &ConfigFile,
) -> Result<Option<InstallCommand>> {
    let refuse = |error: String| {
        ExitError::new(exit::CONFIG, format!("refusing to start: {error}")).with_hint(
            "give the program and its arguments, or unset --browser-install-command / RUNNER_BROWSER_INSTALL_COMMAND / browser_install_command",
        )
    };
    match (flag, &config.browser_install_command) {
        (Some(line), _) => InstallCommand::parse_line(line)
            .map(Some)
            .map_err(|error| refuse(error).into()),
        (None, Some(argv)) => InstallCommand::from_argv(argv.clone())
            .map(Some)
            .map_err(|error| refuse(format!("config file: {error}")).into()),
        (None, None) => Ok(None),
    }
}

pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|name| name.into_string().ok())
        .unwrap_or_else(|| "unknown-host".to_owned())
}

/// Cancels `token` on SIGINT or SIGTERM.
pub async fn cancel_on_signal(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            tracing::error!("cannot install signal handlers");
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = int.recv() => tracing::info!("SIGINT: shutting down"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    token.cancel();
}
