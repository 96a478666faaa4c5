//! `runner-relay`: the hosted half of `runner`. It serves the HTTP API that
//! agents and CI call, holds the WebSocket each runner dials out to, enforces
//! every environment's policy before a call is relayed, and reports status.
//!
//! The server is [`serve`]: it takes a bound listener, the shared state and a
//! cancellation token, so the binary (and the tests) decide where it listens
//! and when it stops.

pub mod access;
pub mod args;
pub mod clock;
pub mod commands;
pub mod enforcement;
pub mod environment;
pub mod http;
pub mod members;
pub mod registration;
pub mod routing;
pub mod runner_connection;
pub mod secret;
pub mod state;
pub mod status;
pub mod store;

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
    mut state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    state.shutdown = shutdown.clone();
    let connections = state.connections.clone();
    let app = http::router(state);
    let server =
        axum::serve(listener, app).with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let deadline = async {
        shutdown.cancelled().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = server => result?,
        () = deadline => tracing::warn!("requests still open after the shutdown grace period; stopping anyway"),
    }
    connections.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("runner connections still open after the shutdown grace period");
    }
    Ok(())
}
