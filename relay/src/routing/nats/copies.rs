//! Caller side: the sessions other relays hold, as last read from the
//! store, so that a call to a runner on another relay does not read the
//! store first.
//!
//! A copy is safe to use because a call names the session's epoch in its
//! subject: a copy that is out of date (the runner reconnected, its relay
//! died) makes the request find nobody serving it, and the caller then
//! forgets the copy and reads the store ([`super::NatsRouter`]'s retry).
//! Copies are also forgotten when a relay broadcasts that a session was
//! superseded or disconnected, and live at most [`COPY_TTL`], so what a
//! copy says about the runner (catalogue, heartbeat) is never older than
//! the store's own lease refresh makes it anyway. "No session" is never
//! kept: a runner that just connected is found at once.

use std::sync::Arc;
use std::time::Duration;

use crate::kept_copies::{Changes, Generation, KeptCopies};
use crate::routing::Presence;

/// How long a copy is used before the store is read again.
pub const COPY_TTL: Duration = Duration::from_secs(2);
/// Copies above which the map is emptied rather than grown further.
const MAX_COPIES: usize = 100_000;

/// A session held by another relay.
#[derive(Debug, Clone)]
pub struct RemoteSession {
    /// The relay-to-relay version the holder speaks.
    pub protocol: u32,
    pub epoch: u64,
    pub presence: Arc<Presence>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct SessionCopies {
    copies: KeptCopies<RemoteSession>,
    /// Moved on by every forget: a store read that began before one is
    /// not kept after it.
    changes: Changes,
}

impl Default for SessionCopies {
    fn default() -> Self {
        Self {
            copies: KeptCopies::new(COPY_TTL, MAX_COPIES),
            changes: Changes::default(),
        }
    }
}

impl SessionCopies {
    /// The environment's session, if a fresh copy is kept.
    pub fn get(&self, environment_id: &str) -> Option<RemoteSession> {
        self.copies.get(environment_id)
    }

    /// Take before reading a session from the store.
    pub fn generation(&self) -> Generation {
        self.changes.generation()
    }

    /// Keeps a session read from the store since `read_from`, unless a
    /// copy was forgotten meanwhile.
    pub fn keep(&self, read_from: Generation, environment_id: &str, session: &RemoteSession) {
        self.copies
            .keep(&self.changes, read_from, environment_id, session.clone());
    }

    /// The session changed (superseded, disconnected, or found not served).
    pub fn forget(&self, environment_id: &str) {
        self.copies.forget(&self.changes, environment_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_proto::ws::{Heartbeat, HostFacts};

    fn session(epoch: u64) -> RemoteSession {
        RemoteSession {
            protocol: 2,
            epoch,
            presence: Arc::new(Presence {
                session_id: "s".to_owned(),
                instance_id: "i".to_owned(),
                runner_version: "0".to_owned(),
                host: HostFacts::default(),
                tools: Vec::new().into(),
                connected_at: time::OffsetDateTime::UNIX_EPOCH,
                heartbeat: Heartbeat::default(),
                epoch,
                token_hash: String::new(),
            }),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn copies_expire_are_forgotten_and_a_read_older_than_a_forget_is_not_kept() {
        let copies = SessionCopies::default();
        copies.keep(copies.generation(), "e", &session(3));
        assert_eq!(copies.get("e").map(|s| s.epoch), Some(3));

        copies.forget("e");
        assert!(copies.get("e").is_none());

        let before = copies.generation();
        copies.forget("other");
        copies.keep(before, "e", &session(3));
        assert!(
            copies.get("e").is_none(),
            "a read that began before a forget was kept"
        );

        copies.keep(copies.generation(), "e", &session(4));
        tokio::time::advance(COPY_TTL).await;
        assert!(copies.get("e").is_none(), "expired copy used");
    }
}
