//! Last-use times of work sessions, kept in memory and written to the store
//! in one transaction every [`USE_FLUSH_INTERVAL`] (and at shutdown), so a
//! call through a session costs no store write; and, on a store no other
//! relay changes, copies of the sessions themselves, so it costs no store
//! read either.
//!
//! A session changes only through the relay serving the request (create,
//! the first call's lock, end): each change replaces or drops this relay's
//! copy before answering. In shared mode nothing is copied (another relay
//! may end or lock a session), and last-use times reach the store at most
//! one interval late; [`crate::sessions::EXPIRY_GRACE`] covers that.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use time::OffsetDateTime;

use crate::sessions::WorkSession;
pub use crate::sessions::USE_FLUSH_INTERVAL;
use crate::store::Store;
/// Bound on one flush.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(30);
/// Entries above which a map is emptied of what it can lose.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct LastUse {
    at: OffsetDateTime,
    /// Not yet in the store.
    dirty: bool,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct SessionUsage {
    copies_enabled: bool,
    copies: Mutex<HashMap<String, Arc<WorkSession>>>,
    uses: Mutex<HashMap<String, LastUse>>,
}

fn locked<T>(map: &Mutex<T>) -> MutexGuard<'_, T> {
    // Single map operations: a poisoned map is still consistent.
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl SessionUsage {
    /// `copies`: whether sessions may be copied (the store is this relay's
    /// alone).
    pub fn new(copies: bool) -> Self {
        Self {
            copies_enabled: copies,
            ..Self::default()
        }
    }

    /// This relay's copy of a session, brought up to date with its last use.
    pub fn copy(&self, id: &str) -> Option<WorkSession> {
        let copy = locked(&self.copies).get(id).cloned()?;
        let mut session = WorkSession::clone(&copy);
        self.apply(&mut session);
        Some(session)
    }

    /// Keeps a copy of a session just read from or written to the store.
    pub fn keep(&self, session: &WorkSession) {
        if !self.copies_enabled {
            return;
        }
        let mut copies = locked(&self.copies);
        if copies.len() >= MAX_ENTRIES && !copies.contains_key(&session.id) {
            copies.clear();
        }
        copies.insert(session.id.clone(), Arc::new(session.clone()));
    }

    /// Drops the copy of a session that changed or ended.
    pub fn forget(&self, id: &str) {
        locked(&self.copies).remove(id);
    }

    /// The session was used at `at`.
    pub fn note_use(&self, id: &str, at: OffsetDateTime) {
        let mut uses = locked(&self.uses);
        if uses.len() >= MAX_ENTRIES && !uses.contains_key(id) {
            // Clean entries are in the store already.
            uses.retain(|_, last| last.dirty);
        }
        let entry = uses
            .entry(id.to_owned())
            .or_insert(LastUse { at, dirty: true });
        if entry.at <= at {
            *entry = LastUse { at, dirty: true };
        }
    }

    /// Brings a session read from the store up to date with the uses this
    /// relay has seen.
    pub fn apply(&self, session: &mut WorkSession) {
        if let Some(last) = locked(&self.uses).get(&session.id) {
            session.last_used_at = session.last_used_at.max(last.at);
        }
    }

    /// Writes the dirty last-use times; on failure they stay dirty for the
    /// next flush.
    pub async fn flush(&self, store: &dyn Store) {
        let batch: Vec<(String, OffsetDateTime)> = locked(&self.uses)
            .iter()
            .filter(|(_, last)| last.dirty)
            .map(|(id, last)| (id.clone(), last.at))
            .collect();
        if batch.is_empty() {
            return;
        }
        match tokio::time::timeout(FLUSH_TIMEOUT, store.touch_work_sessions(&batch)).await {
            Ok(Ok(())) => {
                let mut uses = locked(&self.uses);
                for (id, at) in &batch {
                    if let Some(last) = uses.get_mut(id) {
                        // A newer use since the batch was taken stays dirty.
                        if last.at == *at {
                            last.dirty = false;
                        }
                    }
                }
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, sessions = batch.len(), "could not record session use; will retry");
            }
            Err(_) => {
                tracing::warn!(
                    sessions = batch.len(),
                    "recording session use timed out; will retry"
                );
            }
        }
    }
}
