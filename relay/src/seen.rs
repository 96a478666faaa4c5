//! When each runner was last seen, kept in memory and written to the store
//! in one transaction every [`SEEN_FLUSH_INTERVAL`] (and at shutdown),
//! instead of one write per heartbeat: 20,000 runners heartbeating every
//! 15 s would otherwise be 1,300 commits a second on an idle relay.
//!
//! Status is computed on read (SPEC §6) from the newer of the stored and
//! the in-memory time, so this relay's answers never lag; the store (what
//! other relays and a restarted relay see) lags by at most one interval,
//! far below the 90 s after which a runner counts as offline. Used in
//! single-relay mode; in shared mode heartbeats ride on the lease refresh
//! ([`crate::routing::NatsRouter::heartbeat_seen`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use runner_proto::api::RunnerInfo;
use time::OffsetDateTime;

use crate::environment::EnvironmentRecord;
use crate::store::{SeenRecord, Store};

/// How often dirty last-seen times are written.
pub const SEEN_FLUSH_INTERVAL: Duration = Duration::from_secs(10);
/// Bound on one flush.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);

/// Last-seen times not yet written to the store.
#[derive(Debug, Default)]
pub struct SeenTracker {
    dirty: Mutex<HashMap<String, (OffsetDateTime, Arc<RunnerInfo>)>>,
}

impl SeenTracker {
    fn dirty(&self) -> MutexGuard<'_, HashMap<String, (OffsetDateTime, Arc<RunnerInfo>)>> {
        // Single map operations: a poisoned map is still consistent.
        self.dirty
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The runner of `environment_id` was seen at `at`.
    pub fn note(&self, environment_id: &str, at: OffsetDateTime, runner: &Arc<RunnerInfo>) {
        let mut dirty = self.dirty();
        match dirty.get_mut(environment_id) {
            Some(entry) => *entry = (at, runner.clone()),
            None => {
                dirty.insert(environment_id.to_owned(), (at, runner.clone()));
            }
        }
    }

    /// Brings a record read from the store up to date with what is not
    /// written yet.
    pub fn apply(&self, environment: &mut EnvironmentRecord) {
        let dirty = self.dirty();
        if let Some((at, runner)) = dirty.get(&environment.id) {
            if environment.last_seen.is_none_or(|stored| stored < *at) {
                environment.last_seen = Some(*at);
                environment.runner = Some(RunnerInfo::clone(runner));
            }
        }
    }

    /// Writes every dirty time in one transaction. Entries seen again
    /// meanwhile stay dirty; on failure everything stays for the next try.
    pub async fn flush(&self, store: &dyn Store) {
        let batch: Vec<SeenRecord> = self
            .dirty()
            .iter()
            .map(|(id, (at, runner))| SeenRecord {
                environment_id: id.clone(),
                at: *at,
                runner: RunnerInfo::clone(runner),
            })
            .collect();
        if batch.is_empty() {
            return;
        }
        match tokio::time::timeout(FLUSH_TIMEOUT, store.record_seen_batch(&batch)).await {
            Ok(Ok(())) => {
                let mut dirty = self.dirty();
                for record in &batch {
                    if dirty
                        .get(&record.environment_id)
                        .is_some_and(|(at, _)| *at == record.at)
                    {
                        dirty.remove(&record.environment_id);
                    }
                }
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, runners = batch.len(), "could not record last-seen times")
            }
            Err(_elapsed) => {
                tracing::warn!(runners = batch.len(), "recording last-seen times timed out")
            }
        }
    }

    /// Forgets an environment (deleted).
    pub fn forget(&self, environment_id: &str) {
        self.dirty().remove(environment_id);
    }
}
