//! `runner run`: the long-running part.

use std::sync::Arc;

use anyhow::{Context, Result};
use runner_proto::ws::{Hello, HostFacts};
use runner_proto::PROTOCOL_VERSION;
use tokio_util::sync::CancellationToken;

use crate::agent::{self, lock, session::SessionConfig};
use crate::args::RunArgs;
use crate::client;
use crate::config::{ConfigFile, Dirs, SecretLocation};
use crate::credentials::{self, SecretKind};
use crate::env_vars;
use crate::exit::{self, ExitError};
use crate::secret::Secret;
use crate::tools::{self, workspace::Boundary};

pub async fn run(dirs: &Dirs, args: RunArgs) -> Result<()> {
    let (url, token_source) = connection_settings(dirs, &args)?;

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
    };
    tracing::info!(
        relay = %url,
        workspace = %boundary.root().display(),
        "starting"
    );
    let session = SessionConfig {
        url,
        token,
        hello,
        workspace: boundary,
        permissions,
        max_concurrent_calls: args.max_concurrent_calls,
        toolbox,
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    agent::run_forever(session, shutdown).await
}

/// Where the token comes from.
enum TokenSource {
    /// RUNNER_TOKEN (service `EnvironmentFile`, container): never stored.
    Environment(Secret),
    /// Stored by `runner register`.
    Stored(SecretLocation),
}

/// URL and token: RUNNER_URL/--url with RUNNER_TOKEN win over the
/// registration, so a service or container needs no `register` step.
fn connection_settings(dirs: &Dirs, args: &RunArgs) -> Result<(String, TokenSource)> {
    let env_token = std::env::var(env_vars::TOKEN)
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty());
    let config = ConfigFile::load(dirs)?;
    if let Some(token) = env_token {
        let url = match (&args.url, &config.registration) {
            (Some(url), _) => url.clone(),
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
    let url = args.url.as_deref().unwrap_or(&registration.url);
    Ok((
        client::normalise_base_url(url)?,
        TokenSource::Stored(registration.token_location),
    ))
}

fn hostname() -> String {
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
