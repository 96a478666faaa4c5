//! Copies of store reads, each kept for a limited time, that a change
//! landing while a read is in flight cannot leave stale: the read takes a
//! [`Generation`] before it starts, every change moves the [`Changes`]
//! counter on, and a copy is kept only if the counter has not moved since.
//! The check and the forgetting take the same lock, so a copy is either
//! refused or forgotten, never kept past the change.
//!
//! Used by the relay's read copies ([`crate::read_cache`]) and by the
//! sessions other relays hold ([`crate::routing::nats`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// Counts changes; several [`KeptCopies`] may share one.
#[derive(Debug, Default)]
pub struct Changes(AtomicU64);

/// Where the [`Changes`] counter stood when a store read began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(u64);

impl Changes {
    /// Take before reading from the store.
    pub fn generation(&self) -> Generation {
        Generation(self.0.load(Ordering::Acquire))
    }

    fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

#[derive(Debug)]
struct Timed<T> {
    until: Instant,
    value: T,
}

/// Copies by key, each used for `ttl`; past `max` entries the map is
/// emptied rather than grown.
#[derive(Debug)]
pub struct KeptCopies<T> {
    map: Mutex<HashMap<String, Timed<T>>>,
    ttl: Duration,
    max: usize,
}

impl<T: Clone> KeptCopies<T> {
    pub fn new(ttl: Duration, max: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            ttl,
            max,
        }
    }

    fn locked(&self) -> MutexGuard<'_, HashMap<String, Timed<T>>> {
        // Single map operations: a poisoned map is still consistent.
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The copy under `key`, if one is kept and fresh.
    pub fn get(&self, key: &str) -> Option<T> {
        let mut map = self.locked();
        match map.get(key) {
            Some(entry) if entry.until > Instant::now() => Some(entry.value.clone()),
            Some(_) => {
                map.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value`, read from the store since `read_from`, unless
    /// `changes` moved on meanwhile (the read may predate the change).
    pub fn keep(&self, changes: &Changes, read_from: Generation, key: &str, value: T) {
        let mut map = self.locked();
        // Checked under the lock that forgetting also takes.
        if changes.generation() != read_from {
            return;
        }
        if map.len() >= self.max {
            map.clear();
        }
        map.insert(
            key.to_owned(),
            Timed {
                until: Instant::now() + self.ttl,
                value,
            },
        );
    }

    /// The value under `key` changed: counted in `changes`, its copy goes.
    pub fn forget(&self, changes: &Changes, key: &str) {
        let mut map = self.locked();
        changes.bump();
        map.remove(key);
    }

    /// Anything may have changed: counted in `changes`, every copy goes.
    pub fn forget_all(&self, changes: &Changes) {
        let mut map = self.locked();
        changes.bump();
        map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn copies_expire_are_forgotten_and_a_read_older_than_a_change_is_not_kept() {
        let changes = Changes::default();
        let copies = KeptCopies::new(Duration::from_secs(2), 10);
        copies.keep(&changes, changes.generation(), "e", 3);
        assert_eq!(copies.get("e"), Some(3));

        copies.forget(&changes, "e");
        assert_eq!(copies.get("e"), None);

        // A read that began before a change (of any key) is not kept.
        let before = changes.generation();
        copies.forget(&changes, "other");
        copies.keep(&changes, before, "e", 3);
        assert_eq!(copies.get("e"), None, "a stale read was kept");

        copies.keep(&changes, changes.generation(), "e", 4);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(copies.get("e"), None, "an expired copy was used");

        // Full: emptied, then the new copy kept.
        for n in 0..10 {
            copies.keep(&changes, changes.generation(), &n.to_string(), n);
        }
        copies.keep(&changes, changes.generation(), "last", 99);
        assert_eq!(copies.get("0"), None);
        assert_eq!(copies.get("last"), Some(99));

        let before = changes.generation();
        copies.forget_all(&changes);
        assert_eq!(copies.get("last"), None);
        copies.keep(&changes, before, "e", 5);
        assert_eq!(copies.get("e"), None, "kept across forget_all");
    }
}
