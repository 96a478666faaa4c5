//! `runner sandbox-host`: a runner whose only tools start and destroy
//! sandboxes ([`crate::sandbox::host`]); the connection, heartbeats and
//! reconnects are `runner run`'s own ([`crate::agent`]).

use std::sync::Arc;

use anyhow::Result;
use runner_proto::ws::{Hello, HostFacts};
use runner_proto::PROTOCOL_VERSION;
use tokio_util::sync::CancellationToken;

use super::run::{cancel_on_signal, connection_settings, hostname, TokenSource};
use crate::agent::health::Health;
use crate::agent::{self, lock, session::SessionConfig};
use crate::args::SandboxHostArgs;
use crate::config::{ConfigFile, Dirs};
use crate::credentials::{self, SecretKind};
use crate::exit::{self, ExitError};
use crate::gate::Boundary;
use crate::sandbox::host::tools::HostTools;
use crate::sandbox::host::{capacity, Host, HostConfig};
use crate::sandbox::isolation::{checks, limits::Limits, rootfs::Base};
use crate::tools::Toolbox;

pub async fn run(dirs: &Dirs, args: SandboxHostArgs) -> Result<()> {
    agent::process_secrecy::hide_from_tools();
    let missing = checks::missing();
    if !missing.is_empty() {
        let what: Vec<String> = missing
            .iter()
            .map(|r| format!("{}: {}", r.name, r.detail))
            .collect();
        let fixes: Vec<String> = missing.iter().filter_map(|r| r.fix.clone()).collect();
        return Err(ExitError::new(
            exit::CANNOT_SANDBOX,
            format!(
                "refusing to start: this machine cannot isolate sandboxes ({})",
                what.join("; ")
            ),
        )
        .with_hint(fixes.join("; "))
        .into());
    }
    if let Some(cpus) = args.sandbox_cpus {
        if !(cpus.is_finite() && cpus > 0.0) {
            return Err(
                ExitError::new(exit::USAGE, "--sandbox-cpus must be a positive number").into(),
            );
        }
    }
    let (url, token_source) = connection_settings(&ConfigFile::load(dirs)?, args.url.as_deref())?;
    let _lock = lock::acquire(&dirs.state)?;
    let token = match token_source {
        TokenSource::Environment(token) => token,
        TokenSource::Stored(location) => {
            credentials::load(dirs, SecretKind::RegistrationToken, location).await?
        }
    };
    let workspace = dirs.state.join("workspace");
    fs_err::create_dir_all(&workspace)?;
    let boundary = Boundary::new(&workspace, Vec::new())?;

    let exe = std::env::current_exe()?;
    let base = match &args.base_image {
        Some(dir) => Base::Image(dir.clone()),
        None => Base::HostDerived(crate::sandbox::layout::Layout::new(&dirs.state).base()),
    };
    let slots = args.slots.unwrap_or_else(capacity::default_slots);
    let health = Arc::new(Health::new(&url, slots as usize, Some(&dirs.state)));
    health.publish();
    let host = Host::start(
        HostConfig {
            state_dir: dirs.state.clone(),
            slots,
            defaults: Limits {
                memory_mb: args.sandbox_memory_mb,
                pids: args.sandbox_pids,
                cpus: args.sandbox_cpus,
            },
            base,
            exe,
            relay_url: url.clone(),
        },
        Arc::clone(&health),
    )
    .await
    .map_err(|error| {
        ExitError::new(
            exit::CANNOT_SANDBOX,
            format!("refusing to start: {error:#}"),
        )
    })?;
    tracing::info!(relay = %url, slots, "sandbox host starting");

    let toolbox = Toolbox::hosting(Arc::new(HostTools(Arc::clone(&host))));
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
        sandbox_capacity: Some(host.capacity()),
    };
    let session = SessionConfig {
        url,
        token,
        hello,
        workspace: boundary,
        permissions: None,
        // Every start waits for its setup: one per slot at once.
        max_concurrent_calls: (slots as usize).saturating_mul(2).max(2),
        toolbox,
        isolation: crate::exec::Isolation::ProcessGroup,
        health,
        auto_update: None,
        browser_install: None,
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    let outcome = agent::run_forever(session, shutdown, None).await;
    host.destroy_all().await;
    outcome
}
