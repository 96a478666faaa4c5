//! Short-lived copies of the two store reads every `invoke-tool` makes
//! before its call can leave: the member behind an API key, and the
//! environment (scope, policy). Without them a `ping` costs three store
//! queries, more than the rest of the relay's work on it.
//!
//! Correctness first:
//!
//! * a store only this relay changes (SQLite) is cached from the start;
//! * a store other processes change (PostgreSQL: other relays,
//!   `runner-relay admin`) is cached only while this relay listens to its
//!   change feed ([`crate::store::changes`]): triggers notify every
//!   listening relay of each change to an environment's settings or to
//!   members, keys and teams, and [`follow_changes`] drops the copies
//!   concerned. A lost feed connection drops every copy (changes may have
//!   been missed); a feed that cannot be listened to turns the cache off
//!   until it can. Another relay's change applies here as soon as its
//!   notification arrives (after its commit, within the round trip of a
//!   notification), and the time limits below stay as a backstop;
//! * every change this relay makes to an environment (update, delete, token
//!   revocation, a name filled from a runner's hostname) drops its copy
//!   before answering, so a restriction applies to the very next call;
//! * members change through the API (team membership, default
//!   environments: each drops every copy before answering) and through
//!   `runner-relay admin` (another process), whose changes a copy can miss
//!   for at most [`MEMBER_TTL`] on SQLite (PostgreSQL's feed reports them);
//!   only keys that exist are kept, so unknown keys cannot fill the cache;
//! * a copy read from the store before a change and kept after it would
//!   outlive the change: every change bumps a generation, and a copy is
//!   kept only if none happened since its read began;
//! * only checks that use an environment (invoke, journal reads) read the
//!   copy; anything that writes an environment back reads the store.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::environment::EnvironmentRecord;
pub use crate::kept_copies::Generation;
use crate::kept_copies::{Changes, KeptCopies};
use crate::metrics::Metrics;
use crate::store::changes::{Change, Heard};
use crate::store::{Member, Store};

/// A member behind an API key, and the key hash stored with it.
pub type KnownMember = (Arc<Member>, Arc<str>);

/// How long a member read from the store is reused.
pub const MEMBER_TTL: Duration = Duration::from_secs(10);
/// How long an environment read from the store is reused (changes made
/// through this relay drop it at once).
pub const ENVIRONMENT_TTL: Duration = Duration::from_secs(5);
/// Entries above which a map is emptied rather than grown further.
const MAX_ENTRIES: usize = 50_000;
/// First pause before listening to the change feed again after a failure;
/// doubled up to [`FEED_RETRY_MAX`].
const FEED_RETRY: Duration = Duration::from_millis(500);
const FEED_RETRY_MAX: Duration = Duration::from_secs(30);

/// See the module documentation.
#[derive(Debug)]
pub struct ReadCache {
    enabled: AtomicBool,
    /// Key hash → (member, stored hash), shared: a request takes two
    /// reference counts, not a copy of the member's names and teams.
    members: KeptCopies<KnownMember>,
    /// Shared, not copied, by the calls that read them: a copy cost a
    /// dozen allocations a call.
    environments: KeptCopies<Arc<EnvironmentRecord>>,
    /// Moved on by every change of either: a copy read from the store
    /// before a change must not be kept after it.
    changes: Changes,
}

impl ReadCache {
    /// A cache that keeps copies only if `enabled` (the store is this
    /// relay's alone, or [`follow_changes`] turns it on).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled: AtomicBool::new(enabled),
            members: KeptCopies::new(MEMBER_TTL, MAX_ENTRIES),
            environments: KeptCopies::new(ENVIRONMENT_TTL, MAX_ENTRIES),
            changes: Changes::default(),
        }
    }

    /// Whether copies are kept now.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Turns keeping copies on or off; off also drops every copy.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Release);
        if !enabled {
            self.forget_all();
        }
    }

    pub fn member(&self, key_hash: &str) -> Option<KnownMember> {
        self.enabled().then(|| self.members.get(key_hash)).flatten()
    }

    /// Keeps a member read from the store since `read_from`, unless
    /// something changed meanwhile.
    pub fn keep_member(&self, read_from: Generation, key_hash: &str, found: &KnownMember) {
        if self.enabled() {
            self.members
                .keep(&self.changes, read_from, key_hash, found.clone());
        }
    }

    pub fn environment(&self, id: &str) -> Option<Arc<EnvironmentRecord>> {
        self.enabled().then(|| self.environments.get(id)).flatten()
    }

    /// Take before reading from the store.
    pub fn generation(&self) -> Generation {
        self.changes.generation()
    }

    /// Keeps a copy read from the store since `read_from`, unless some
    /// environment changed meanwhile (the copy may predate the change).
    pub fn keep_environment(&self, read_from: Generation, environment: &Arc<EnvironmentRecord>) {
        if self.enabled() {
            self.environments.keep(
                &self.changes,
                read_from,
                &environment.id,
                Arc::clone(environment),
            );
        }
    }

    /// Team membership, a key or a default environment changed: every
    /// member is read from the store again.
    pub fn forget_members(&self) {
        self.members.forget_all(&self.changes);
    }

    /// The environment changed or is gone: the next read goes to the store.
    /// Call after the change is written.
    pub fn forget_environment(&self, id: &str) {
        self.environments.forget(&self.changes, id);
    }

    /// Anything may have changed: every copy goes.
    pub fn forget_all(&self) {
        self.environments.forget_all(&self.changes);
        self.members.forget_all(&self.changes);
    }

    /// Applies what the change feed heard.
    fn apply(&self, heard: &Heard) {
        match heard {
            Heard::Change(Change::Environment(id)) => self.forget_environment(id),
            Heard::Change(Change::Members) => self.forget_members(),
            Heard::Unknown | Heard::Lost => self.forget_all(),
            // Nothing is heard any more: nothing is kept until it is.
            Heard::Failed => self.set_enabled(false),
        }
    }
}

/// Keeps `cache` in step with what other processes change in `store`, for
/// as long as `shutdown` is not cancelled: on while the change feed is
/// listened to, off (and empty) while it is not. Returns at once for a
/// store nobody else changes.
pub async fn follow_changes(
    store: Arc<dyn Store>,
    cache: Arc<ReadCache>,
    metrics: Metrics,
    shutdown: CancellationToken,
) {
    let mut retry = FEED_RETRY;
    loop {
        let listening = tokio::select! {
            () = shutdown.cancelled() => return,
            listening = store.listen_for_changes() => listening,
        };
        let mut listener = match listening {
            Ok(Some(listener)) => listener,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot listen to the store's change feed; nothing read from the store is kept until it can");
                cache.set_enabled(false);
                metrics.set_change_feed_listening(false);
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(retry) => {}
                }
                retry = (retry * 2).min(FEED_RETRY_MAX);
                continue;
            }
        };
        // Copies kept before (under an earlier listener) may predate
        // changes nobody heard.
        cache.forget_all();
        cache.set_enabled(true);
        metrics.set_change_feed_listening(true);
        tracing::debug!("listening to the store's change feed; reads are kept");
        retry = FEED_RETRY;
        loop {
            let heard = tokio::select! {
                () = shutdown.cancelled() => return,
                heard = listener.next() => heard,
            };
            cache.apply(&heard);
            match heard {
                Heard::Failed => {
                    metrics.set_change_feed_listening(false);
                    break;
                }
                Heard::Lost => tracing::info!(
                    "the change feed's connection was lost and made again; every kept read dropped"
                ),
                Heard::Unknown => {
                    tracing::debug!("a change this relay cannot read; every kept read dropped")
                }
                Heard::Change(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::Scope;

    fn environment(id: &str) -> Arc<EnvironmentRecord> {
        Arc::new(EnvironmentRecord {
            id: id.to_owned(),
            name: "n".into(),
            description: String::new(),
            env_type: "Local".into(),
            tags: Vec::new(),
            scope: Scope::Shared,
            tier: runner_proto::api::Tier::Development,
            install_browser_tools: false,
            policy: crate::environment::default_policy(runner_proto::api::Tier::Development),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            last_seen: None,
            runner: None,
        })
    }

    #[tokio::test(start_paused = true)]
    async fn copies_expire_are_dropped_on_change_and_are_never_kept_when_disabled() {
        let cache = ReadCache::new(true);
        cache.keep_environment(cache.generation(), &environment("e"));
        assert!(cache.environment("e").is_some());
        cache.forget_environment("e");
        assert!(cache.environment("e").is_none());

        // Read before a change, kept after it: not kept.
        let before = cache.generation();
        cache.forget_environment("e");
        cache.keep_environment(before, &environment("e"));
        assert!(cache.environment("e").is_none(), "stale copy kept");

        cache.keep_environment(cache.generation(), &environment("e"));
        tokio::time::advance(ENVIRONMENT_TTL).await;
        assert!(cache.environment("e").is_none(), "expired");

        let off = ReadCache::new(false);
        off.keep_environment(off.generation(), &environment("e"));
        assert!(off.environment("e").is_none());
    }
}
