//! The shared state every handler and connection task sees.

use std::sync::Arc;

use runner_proto::api::EnvironmentStatus;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::{rfc3339, Clock, SystemClock};
use crate::environment::EnvironmentRecord;
use crate::registration;
use crate::routing::{CallRouter, LocalRouter};
use crate::status::{self, CallHealth};
use crate::store::{Store, StoreError};

/// What a relay is built from. Tests pass a manual clock.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
}

impl RelayConfig {
    /// A relay on this store with the system clock.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Handles shared by handlers and connection tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// How handlers reach runners (wherever their sockets are).
    pub router: Arc<dyn CallRouter>,
    /// The sockets held by this process (same object as `router` here).
    pub local: Arc<LocalRouter>,
    pub health: Arc<CallHealth>,
    /// Cancelled when the relay shuts down; connection tasks watch it.
    /// Set by [`crate::serve`].
    pub shutdown: CancellationToken,
    /// Runner connection tasks, awaited at shutdown.
    pub connections: TaskTracker,
}

impl AppState {
    /// State for a relay; [`crate::serve`] ties it to its shutdown token.
    pub fn new(config: RelayConfig) -> Self {
        let local = Arc::new(LocalRouter::new());
        Self {
            store: config.store,
            clock: config.clock,
            router: local.clone(),
            local,
            health: Arc::new(CallHealth::default()),
            shutdown: CancellationToken::new(),
            connections: TaskTracker::new(),
        }
    }

    /// The live status of an environment (SPEC §6).
    pub async fn environment_status(
        &self,
        environment: &EnvironmentRecord,
    ) -> Result<EnvironmentStatus, StoreError> {
        let presence = self.router.presence(&environment.id).await;
        let now = self.clock.now();
        let (status, reason) = status::compute(environment, presence.as_ref(), &self.health, now);
        let token = self.store.current_token(&environment.id).await?;
        Ok(EnvironmentStatus {
            id: environment.id.clone(),
            name: environment.name.clone(),
            status,
            reason,
            connected: presence.is_some(),
            last_seen: environment.last_seen.map(rfc3339),
            runner: environment.runner.clone(),
            token: token.as_ref().map(registration::hint),
        })
    }
}
