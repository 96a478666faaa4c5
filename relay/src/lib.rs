//! `runner-relay`: the hosted half of `runner`. It serves the HTTP API that
//! agents and CI call, holds the WebSocket each runner dials out to, enforces
//! every environment's policy before a call is relayed, and reports status.
//!
//! The server is [`serve`]: it takes a bound listener, the shared state and a
//! cancellation token, so the binary (and the tests) decide where it listens
//! and when it stops.
// One reviewed exception, `heap::give_back` (`malloc_trim`), allows it.
#![deny(unsafe_code)]

pub mod access;
pub mod admission;
pub mod approvals;
pub mod args;
pub mod assets;
pub mod audit;
pub mod audit_writer;
pub mod canonical;
pub mod clock;
pub mod commands;
pub mod enforcement;
pub mod environment;
pub mod heap;
pub mod http;
pub mod kept_copies;
pub mod listener;
pub mod members;
pub mod metrics;
pub mod open_files;
pub mod peer;
pub mod ratelimit;
pub mod read_cache;
pub mod registration;
pub mod releases;
pub mod report;
pub mod routing;
pub mod runner_connection;
pub mod sandboxes;
pub mod secret;
pub mod seen;
pub mod session_usage;
pub mod sessions;
pub mod sign_in_links;
pub mod state;
pub mod status;
pub mod store;
pub mod templates;
pub mod tls;
pub mod webhook;

use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use state::{AppState, RelayConfig};

/// After shutdown starts, how long open requests and runner sockets get to
/// finish before the server returns anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves the relay on `listener` until `shutdown` is cancelled, then closes
/// runner sockets with `GOING_AWAY` and waits (bounded) for them.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    serve_on(listener::NoDelayListener::new(listener), state, shutdown).await
}

/// [`serve`] over TLS (`--tls-cert`/`--tls-key`).
pub async fn serve_tls(
    listener: tls::TlsListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    serve_on(listener, state, shutdown).await
}

async fn serve_on<L>(
    listener: L,
    mut state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    L: axum::serve::Listener<Addr = std::net::SocketAddr>,
    for<'a> peer::PeerAddr:
        axum::extract::connect_info::Connected<axum::serve::IncomingStream<'a, L>>,
{
    state.shutdown = shutdown.clone();
    let connections = state.connections.clone();
    let flushing = flush_periodically(&state, shutdown.clone());
    let following = tokio::spawn(read_cache::follow_changes(
        state.store.clone(),
        state.reads.clone(),
        state.metrics.clone(),
        shutdown.clone(),
    ));
    let sweeping = http::sandboxes::sweep_periodically(state.clone(), shutdown.clone());
    let trimming = heap::trim_after_bursts(state.admission.clone(), shutdown.clone());
    let audit = state.audit.clone();
    let (journal, seen, sessions, store) = (
        state.journal.clone(),
        state.seen.clone(),
        state.sessions.clone(),
        state.store.clone(),
    );
    // Runner sessions drain for up to `drain_grace`; requests waiting on
    // their calls need that long too.
    let grace = SHUTDOWN_GRACE.max(state.drain_grace + Duration::from_secs(2));
    let releases = state.releases.clone();
    let mut app = http::router(state);
    if let Some(releases) = releases {
        app = app.merge(releases::router(releases.dir().to_path_buf()));
    }
    // Connect info gives handlers the peer address (failed-token limits).
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<peer::PeerAddr>(),
    )
    .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        result = server => result?,
        () = deadline => tracing::warn!("requests still open after the shutdown grace period; stopping anyway"),
    }
    connections.close();
    if tokio::time::timeout(grace, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("runner connections still open after the shutdown grace period");
    }
    // What the sessions left in memory goes to the store before exiting.
    flushing.abort();
    following.abort();
    sweeping.abort();
    if let Some(trimming) = trimming {
        trimming.abort();
    }
    journal.flush().await;
    seen.flush(store.as_ref()).await;
    sessions.flush(store.as_ref()).await;
    audit.flush().await;
    Ok(())
}

/// Writes dirty last-seen times every [`seen::SEEN_FLUSH_INTERVAL`] and
/// work sessions' last uses every [`session_usage::USE_FLUSH_INTERVAL`]
/// until shutdown.
fn flush_periodically(
    state: &AppState,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let (seen, sessions, store) = (
        state.seen.clone(),
        state.sessions.clone(),
        state.store.clone(),
    );
    tokio::spawn(async move {
        let mut seen_tick = tokio::time::interval(seen::SEEN_FLUSH_INTERVAL);
        seen_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut use_tick = tokio::time::interval(session_usage::USE_FLUSH_INTERVAL);
        use_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = seen_tick.tick() => seen.flush(store.as_ref()).await,
                _ = use_tick.tick() => sessions.flush(store.as_ref()).await,
            }
        }
    })
}
