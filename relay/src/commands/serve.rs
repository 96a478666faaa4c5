//! `runner-relay serve`: open the store, announce the bootstrap admin key on
//! first start, bind, and serve until SIGINT/SIGTERM.

use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{cancel_on_signal, database_url, open_store, say};
use crate::args::ServeArgs;
use crate::clock::SystemClock;
use crate::members;
use crate::state::{AppState, RelayConfig};

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let url = database_url(&args.store)?;
    let store = open_store(&url).await?;
    let config = RelayConfig {
        store,
        clock: Arc::new(SystemClock),
    };
    if let Some(key) = members::bootstrap_admin(config.store.as_ref(), config.clock.as_ref())
        .await
        .context("creating the first admin API key")?
    {
        say(&format!("admin API key (shown once): {}", key.expose()))?;
    }
    let listener = TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let address = listener
        .local_addr()
        .with_context(|| format!("reading the address bound for {}", args.listen))?;
    say(&format!("runner-relay listening on http://{address}"))?;
    tracing::info!(%address, "relay started");

    let shutdown = CancellationToken::new();
    cancel_on_signal(shutdown.clone());
    crate::serve(listener, AppState::new(config), shutdown)
        .await
        .with_context(|| format!("serving on {address}"))?;
    tracing::info!("relay stopped");
    Ok(())
}
