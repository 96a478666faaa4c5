//! `runner-relay serve`: open the store, announce the bootstrap admin key on
//! first start, join the other relays over NATS in shared mode, bind, and
//! serve until SIGINT/SIGTERM (then drain).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{bind_error, cancel_on_signal, database_url, lock_sqlite, open_store, say};
use crate::args::{MetricsArgs, ServeArgs};
use crate::audit_writer::AuditSettings;
use crate::clock::{Clock, SystemClock};
use crate::members;
use crate::metrics::Metrics;
use crate::routing::{ClusterConfig, NatsRouter};
use crate::secret::Secret;
use crate::sign_in_links::{self, SignInLinks};
use crate::state::{
    default_docker_image, AppState, ConsoleSettings, McpSettings, RelayConfig, StreamTimings,
};
use crate::store::Store;

/// How often finished calls are pruned from the journal.
const JOURNAL_PRUNE_INTERVAL: Duration = Duration::from_secs(3600);
/// How long a finished call stays fetchable at `GET /invocations/{id}`.
const JOURNAL_RETENTION: time::Duration = time::Duration::days(7);
/// How often audit entries past `--audit-retention-days` are pruned.
const AUDIT_PRUNE_INTERVAL: Duration = Duration::from_secs(86_400);
/// Bound on one prune.
const JOURNAL_PRUNE_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections the kernel queues before the relay accepts them. A relay
/// restarting under thousands of runners receives them within a second;
/// with the usual 1024 the excess SYNs are dropped and those runners lose
/// a whole SYN retransmission time (1 s, then 3 s). The kernel caps it at
/// `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 8192;

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    crate::open_files::report(crate::open_files::raise());
    let url = database_url(&args.store)?;
    let shared = url.starts_with("postgres://") || url.starts_with("postgresql://");
    if args.nats_url.is_some() && !shared {
        return Err(crate::report::Hinted::new(
            "--nats-url needs a shared postgres:// --database-url (several relays cannot share a SQLite file)",
            "give every relay the same --database-url postgres://…, or drop --nats-url to run one relay",
        )
        .into());
    }
    if shared && args.nats_url.is_none() {
        tracing::warn!(
            "PostgreSQL without --nats-url: this relay reaches only the runners connected to it"
        );
    }
    let webhook = match (&args.approval_webhook, &args.approval_webhook_secret_file) {
        (Some(url), Some(secret)) => Some(Arc::new(crate::webhook::Webhook::load(url, secret)?)),
        _ => None,
    };
    // Bound before anything is created or printed: a relay that cannot
    // listen must not consume the shown-once admin key.
    let listener = bind(args.listen).map_err(|error| bind_error(args.listen, error))?;
    let metrics = metrics(&args.metrics)?;
    let metrics_listener = match args.metrics.metrics_addr {
        Some(address) => Some(
            TcpListener::bind(address)
                .await
                .map_err(|error| bind_error(address, error))?,
        ),
        None => None,
    };
    let _store_lock = lock_sqlite(&url)?;
    let store = open_store(&url).await?;
    let config = RelayConfig {
        store,
        clock: Arc::new(SystemClock),
        streams: StreamTimings {
            keep_alive: Duration::from_secs(args.stream_keep_alive),
            output_stall: Duration::from_secs(args.output_stall_timeout),
        },
    };
    let first_key = members::bootstrap_admin(config.store.as_ref(), config.clock.as_ref())
        .await
        .context("creating the first admin API key")?;
    if let Some(key) = &first_key {
        say(&format!("admin API key (shown once): {}", key.expose()))?;
    }
    let shutdown = CancellationToken::new();
    let mut state = AppState::new(config.clone())
        .with_max_handshakes(args.max_handshakes)
        .with_session_idle_timeout(args.session_idle_timeout)
        .with_approval_ttl(Duration::from_secs(args.approval_ttl))
        .with_metrics(metrics)
        .with_journal_result_max_bytes(
            usize::try_from(args.journal_result_max_kb * 1024).unwrap_or(usize::MAX),
        )
        .with_audit(AuditSettings {
            enabled: !args.no_audit,
            arguments: args.audit_arguments,
        });
    if args.no_audit {
        tracing::warn!("--no-audit: nothing is recorded in the audit log");
    }
    if let Some(webhook) = webhook {
        tracing::info!(origin = %webhook.origin(), "announcing approvals to the webhook");
        state = state.with_approval_webhook(webhook);
    }
    if let Some(url) = &args.public_url {
        state = state.with_public_url(url);
    }
    let tls_wanted = args.tls_cert.is_some();
    state = state.with_console(ConsoleSettings {
        enabled: !args.no_console,
        secure_cookie: tls_wanted
            || args
                .public_url
                .as_deref()
                .is_some_and(|url| url.starts_with("https://")),
        links: SignInLinks::default(),
        docker_image: args
            .console_docker_image
            .clone()
            .unwrap_or_else(default_docker_image),
    });
    state = state.with_mcp(McpSettings {
        enabled: !args.mcp.no_mcp,
        max_environments: args.mcp.mcp_max_environments,
        allowed_hosts: args.mcp.mcp_allowed_hosts.clone(),
        allowed_origins: args.mcp.mcp_allowed_origins.clone(),
        fast_call: !args.mcp.mcp_no_fast_path,
    });
    state.drain_grace = Duration::from_secs(args.drain_grace);
    state.heartbeat_interval_s = args.heartbeat_interval;
    if let Some(nats_url) = &args.nats_url {
        let cluster = ClusterConfig {
            nats_url: nats_url.clone(),
            subject_prefix: args.nats_subject_prefix.clone(),
            relay_id: args
                .instance_id
                .clone()
                .unwrap_or_else(|| state.relay_id.to_string()),
            protocol: args.relay_protocol,
        };
        let router = NatsRouter::connect(
            cluster,
            state.local.clone(),
            config.store.clone(),
            config.clock.clone(),
        )
        .await
        .map_err(|error| anyhow::anyhow!("connecting to NATS at {nats_url}: {error}"))?;
        router
            .start(shutdown.clone(), state.health.clone())
            .await
            .with_context(|| format!("subscribing to NATS at {nats_url}"))?;
        tracing::info!(relay_id = %router.relay_id(), %nats_url, "shared mode: routing calls over NATS");
        state = state.with_cluster(router);
    }
    prune_journal(config.store.clone(), config.clock.clone(), shutdown.clone());
    cap_journal(
        config.store.clone(),
        state.metrics.clone(),
        args.journal_max_mb * 1024 * 1024,
        shutdown.clone(),
    );
    prune_audit(
        config.store.clone(),
        config.clock.clone(),
        time::Duration::days(i64::from(args.audit_retention_days)),
        shutdown.clone(),
    );

    let address = listener
        .local_addr()
        .with_context(|| format!("reading the address bound for {}", args.listen))?;
    if let Some(dir) = &args.releases_dir {
        if !dir.is_dir() {
            anyhow::bail!("--releases-dir {} is not a directory", dir.display());
        }
        state = state.with_releases(dir.clone());
        tracing::info!(dir = %dir.display(), "serving the release mirror");
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::tls::server_config(cert, key)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    if state.console.enabled {
        let base = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{}", browsable(address)));
        say(&format!("console: {}/console", base.trim_end_matches('/')))?;
        if let Some(key) = &first_key {
            let code = state
                .console
                .links
                .issue(key, state.clock.now())
                .context("making the console's sign-in link")?;
            say(&format!(
                "console sign-in link (works once, for 15 min): {}",
                sign_in_links::link(&base, &code)
            ))?;
        }
    }
    say(&format!("runner-relay listening on {scheme}://{address}"))?;
    tracing::info!(%address, relay_id = %state.relay_id, "relay started");

    if let Some(listener) = metrics_listener {
        let address = listener
            .local_addr()
            .context("reading the address bound for --metrics-addr")?;
        say(&format!("metrics on http://{address}/metrics"))?;
        let (state, shutdown) = (state.clone(), shutdown.clone());
        tokio::spawn(async move {
            if let Err(error) = crate::http::metrics::serve_metrics(listener, state, shutdown).await
            {
                tracing::error!(%error, "the metrics listener stopped");
            }
        });
    }
    cancel_on_signal(shutdown.clone());
    let served = match tls {
        Some(config) => {
            let listener = crate::tls::TlsListener::new(listener, config)
                .with_context(|| format!("starting TLS on {address}"))?;
            crate::serve_tls(listener, state, shutdown).await
        }
        None => crate::serve(listener, state, shutdown).await,
    };
    served.with_context(|| format!("serving on {address}"))?;
    tracing::info!("relay stopped");
    Ok(())
}

/// `address` as a browser on this machine can open it: an unspecified
/// address (listening everywhere) becomes loopback.
fn browsable(address: std::net::SocketAddr) -> std::net::SocketAddr {
    match address {
        std::net::SocketAddr::V4(v4) if v4.ip().is_unspecified() => {
            std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, v4.port()))
        }
        std::net::SocketAddr::V6(v6) if v6.ip().is_unspecified() => {
            std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, v6.port()))
        }
        other => other,
    }
}

/// The relay's metrics as the flags ask: off, or on with the scrape token
/// of the API port. A `--metrics-addr` beyond loopback needs
/// `--metrics-addr-public`: that listener asks for no credential.
fn metrics(args: &MetricsArgs) -> anyhow::Result<Metrics> {
    if args.no_metrics {
        return Ok(Metrics::disabled());
    }
    if let Some(address) = args.metrics_addr {
        if !address.ip().is_loopback() && !args.metrics_addr_public {
            return Err(crate::report::Hinted::new(
                format!("--metrics-addr {address} is not a loopback address, and that listener asks for no credential"),
                "bind it to 127.0.0.1 (Prometheus on this machine), add --metrics-addr-public if the network in between is yours, or scrape the API port with --metrics-token-file",
            )
            .into());
        }
    }
    let metrics = Metrics::new();
    Ok(match &args.metrics_token_file {
        Some(path) => metrics.with_scrape_token(&read_scrape_token(path)?),
        None => metrics,
    })
}

/// Shortest scrape token accepted: long enough that guessing is hopeless,
/// so failed attempts need no rate limit.
const MIN_SCRAPE_TOKEN_CHARS: usize = 32;

/// Reads `--metrics-token-file`: the token is the file's content without
/// its trailing whitespace (a final newline).
fn read_scrape_token(path: &std::path::Path) -> anyhow::Result<Secret> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs_err::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(crate::report::Hinted::new(
                format!(
                    "--metrics-token-file {} is readable by others (mode {:o})",
                    path.display(),
                    mode & 0o777
                ),
                format!("chmod 600 {}", path.display()),
            )
            .into());
        }
    }
    let text = fs_err::read_to_string(path)?;
    let token = text.trim_end();
    if token.chars().count() < MIN_SCRAPE_TOKEN_CHARS || token.contains(char::is_whitespace) {
        return Err(crate::report::Hinted::new(
            format!(
                "--metrics-token-file {} must hold one token of at least {MIN_SCRAPE_TOKEN_CHARS} characters without spaces",
                path.display()
            ),
            format!("openssl rand -hex 32 > {}", path.display()),
        )
        .into());
    }
    Ok(Secret::new(token))
}

/// Deletes journal entries finished long ago, hourly.
fn prune_journal(store: Arc<dyn Store>, clock: Arc<dyn Clock>, shutdown: CancellationToken) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(JOURNAL_PRUNE_INTERVAL);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let before = clock.now() - JOURNAL_RETENTION;
            match tokio::time::timeout(JOURNAL_PRUNE_TIMEOUT, store.prune_invocations(before)).await
            {
                Ok(Ok(0)) => {}
                Ok(Ok(pruned)) => tracing::info!(pruned, "pruned finished calls from the journal"),
                Ok(Err(error)) => tracing::warn!(%error, "could not prune the call journal"),
                Err(_elapsed) => tracing::warn!("pruning the call journal timed out"),
            }
            // Ended and expired sessions stay readable as long as their calls.
            match tokio::time::timeout(JOURNAL_PRUNE_TIMEOUT, store.prune_work_sessions(before))
                .await
            {
                Ok(Ok(0)) => {}
                Ok(Ok(pruned)) => tracing::info!(pruned, "pruned ended and expired sessions"),
                Ok(Err(error)) => tracing::warn!(%error, "could not prune sessions"),
                Err(_elapsed) => tracing::warn!("pruning sessions timed out"),
            }
            // Approvals too: their calls' results are in the journal.
            match tokio::time::timeout(JOURNAL_PRUNE_TIMEOUT, store.prune_approvals(before)).await {
                Ok(Ok(0)) => {}
                Ok(Ok(pruned)) => tracing::info!(pruned, "pruned old approvals"),
                Ok(Err(error)) => tracing::warn!(%error, "could not prune approvals"),
                Err(_elapsed) => tracing::warn!("pruning approvals timed out"),
            }
        }
    });
}

/// How often the journal's size is measured against `--journal-max-mb`.
const JOURNAL_SIZE_INTERVAL: Duration = Duration::from_secs(300);

/// Keeps the results the journal holds under `max_bytes`: every
/// [`JOURNAL_SIZE_INTERVAL`], the oldest finished calls go first, whatever
/// their age. Pending and dispatched ones stay (they are idempotency keys).
fn cap_journal(
    store: Arc<dyn Store>,
    metrics: Metrics,
    max_bytes: u64,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(JOURNAL_SIZE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            match tokio::time::timeout(
                JOURNAL_PRUNE_TIMEOUT,
                crate::routing::shrink_journal(store.as_ref(), &metrics, max_bytes),
            )
            .await
            {
                // Near the cap, `shrink_journal` has warned already.
                Ok(Ok(shrink)) if shrink.pruned == 0 => {}
                Ok(Ok(shrink)) => {
                    tracing::info!(
                        pruned = shrink.pruned,
                        max_bytes,
                        "pruned the oldest calls: the journal was over its size"
                    )
                }
                Ok(Err(error)) => {
                    tracing::warn!(%error, "could not measure or prune the call journal")
                }
                Err(_elapsed) => {
                    tracing::warn!("keeping the call journal under its size timed out")
                }
            }
        }
    });
}

/// Deletes audit entries older than `retention`, daily (from the oldest:
/// the rest of the chain still verifies; docs/audit.md).
fn prune_audit(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    retention: time::Duration,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(AUDIT_PRUNE_INTERVAL);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let before = clock.now() - retention;
            match tokio::time::timeout(JOURNAL_PRUNE_TIMEOUT, store.prune_audit(before)).await {
                Ok(Ok(0)) => {}
                Ok(Ok(pruned)) => tracing::info!(pruned, "pruned old audit entries"),
                Ok(Err(error)) => tracing::warn!(%error, "could not prune the audit log"),
                Err(_elapsed) => tracing::warn!("pruning the audit log timed out"),
            }
        }
    });
}

/// Binds `address` with [`LISTEN_BACKLOG`] (what `TcpListener::bind` does,
/// with a deeper accept queue).
fn bind(address: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}
