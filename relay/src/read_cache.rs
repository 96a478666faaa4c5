//! Short-lived copies of the two store reads every `invoke-tool` makes
//! before its call can leave: the member behind an API key, and the
//! environment (scope, policy). Without them a `ping` costs three store
//! queries, more than the rest of the relay's work on it.
//!
//! Correctness first:
//!
//! * only a store no other process changes may be cached: SQLite, one relay
//!   ([`crate::store::Store::shared`] is false). With PostgreSQL another
//!   relay may restrict a policy, and that must apply at once, so nothing
//!   is cached there;
//! * every change this relay makes to an environment (update, delete, token
//!   revocation, a name filled from a runner's hostname) drops its copy
//!   before answering, so a restriction applies to the very next call;
//! * members change through the API (team membership, default
//!   environments: each drops every copy before answering) and through
//!   `runner-relay admin` (another process), whose changes a copy can miss
//!   for at most [`MEMBER_TTL`]; only keys that exist are kept, so unknown
//!   keys cannot fill the cache;
//! * only checks that use an environment (invoke, journal reads) read the
//!   copy; anything that writes an environment back reads the store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::environment::EnvironmentRecord;
use crate::store::Member;

/// A member behind an API key, and the key hash stored with it.
pub type KnownMember = (Arc<Member>, Arc<str>);

/// How long a member read from the store is reused.
pub const MEMBER_TTL: Duration = Duration::from_secs(10);
/// How long an environment read from the store is reused (changes made
/// through this relay drop it at once).
pub const ENVIRONMENT_TTL: Duration = Duration::from_secs(5);
/// Entries above which a map is emptied rather than grown further.
const MAX_ENTRIES: usize = 50_000;

#[derive(Debug)]
struct Timed<T> {
    until: Instant,
    value: T,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct ReadCache {
    enabled: bool,
    /// Key hash → (member, stored hash), shared: a request takes two
    /// reference counts, not a copy of the member's names and teams.
    members: Mutex<HashMap<String, Timed<KnownMember>>>,
    /// Shared, not copied, by the calls that read them: a copy cost a
    /// dozen allocations a call.
    environments: Mutex<HashMap<String, Timed<Arc<EnvironmentRecord>>>>,
    /// Bumped by every change: a copy read from the store before a change
    /// must not be kept after it.
    environment_generation: AtomicU64,
}

/// Where the environment copies stood when a store read began; see
/// [`ReadCache::keep_environment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(u64);

fn locked<T>(map: &Mutex<T>) -> MutexGuard<'_, T> {
    // Single map operations: a poisoned map is still consistent.
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn get<T: Clone>(map: &Mutex<HashMap<String, Timed<T>>>, key: &str) -> Option<T> {
    let mut map = locked(map);
    match map.get(key) {
        Some(entry) if entry.until > Instant::now() => Some(entry.value.clone()),
        Some(_) => {
            map.remove(key);
            None
        }
        None => None,
    }
}

fn put<T>(map: &Mutex<HashMap<String, Timed<T>>>, key: &str, value: T, ttl: Duration) {
    let mut map = locked(map);
    if map.len() >= MAX_ENTRIES {
        map.clear();
    }
    map.insert(
        key.to_owned(),
        Timed {
            until: Instant::now() + ttl,
            value,
        },
    );
}

impl ReadCache {
    /// A cache that keeps copies only if `enabled` (the store is this
    /// relay's alone).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// Whether copies are kept at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn member(&self, key_hash: &str) -> Option<KnownMember> {
        self.enabled.then(|| get(&self.members, key_hash)).flatten()
    }

    pub fn keep_member(&self, key_hash: &str, found: &KnownMember) {
        if self.enabled {
            put(&self.members, key_hash, found.clone(), MEMBER_TTL);
        }
    }

    pub fn environment(&self, id: &str) -> Option<Arc<EnvironmentRecord>> {
        self.enabled.then(|| get(&self.environments, id)).flatten()
    }

    /// Take before reading an environment from the store.
    pub fn generation(&self) -> Generation {
        Generation(self.environment_generation.load(Ordering::Acquire))
    }

    /// Keeps a copy read from the store since `read_from`, unless some
    /// environment changed meanwhile (the copy may predate the change).
    pub fn keep_environment(&self, read_from: Generation, environment: &Arc<EnvironmentRecord>) {
        if !self.enabled {
            return;
        }
        let mut map = locked(&self.environments);
        // Checked under the lock that `forget_environment` also takes.
        if self.generation() != read_from {
            return;
        }
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(
            environment.id.clone(),
            Timed {
                until: Instant::now() + ENVIRONMENT_TTL,
                value: Arc::clone(environment),
            },
        );
    }

    /// Team membership or a default environment changed: every member is
    /// read from the store again.
    pub fn forget_members(&self) {
        if self.enabled {
            locked(&self.members).clear();
        }
    }

    /// The environment changed or is gone: the next read goes to the store.
    /// Call after the change is written.
    pub fn forget_environment(&self, id: &str) {
        if self.enabled {
            let mut map = locked(&self.environments);
            self.environment_generation.fetch_add(1, Ordering::AcqRel);
            map.remove(id);
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
