//! The audit log's writer: [`AuditLog::record`] queues an entry without
//! waiting (a request never waits for, or fails because of, the audit),
//! and a background task appends what is queued in one transaction within
//! [`LINGER`], or as soon as [`MAX_BATCH`] entries wait; [`AuditLog::flush`]
//! (reads of `GET /audit`, shutdown) writes at once.
//!
//! Entries are chained in the order they are appended; the store does the
//! chaining under its own lock (see [`crate::store::Store::append_audit`]),
//! so several relays on one database keep one chain.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

use crate::audit::{self, AuditView, PendingAudit};
use crate::store::Store;

/// How long the writer gathers entries after the first one of a batch:
/// the most a crash of the relay can lose (docs/audit.md). Fewer, larger
/// transactions cost the relay less per entry.
pub const LINGER: Duration = Duration::from_secs(1);
/// Most entries appended in one transaction; a batch this large is
/// written without waiting for the rest of [`LINGER`].
pub const MAX_BATCH: usize = 500;
/// Entries kept in memory while the store does not take them. Past it new
/// entries are dropped (counted, and logged as errors): the relay keeps
/// serving rather than growing without bound.
const MAX_QUEUED: usize = 200_000;
/// Bound on one append.
const APPEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed append before the next try.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// What to record (`serve --no-audit`, `--audit-arguments`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditSettings {
    pub enabled: bool,
    /// Keep calls' arguments (the `env` values masked), not only digests.
    pub arguments: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            arguments: false,
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct AuditLog {
    settings: AuditSettings,
    inner: Arc<Inner>,
    started: AtomicBool,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn Store>,
    queue: Mutex<Vec<PendingAudit>>,
    /// The queue got its first entry.
    wake: Notify,
    /// The queue holds a full batch: the linger ends.
    full: Notify,
    /// One append at a time, in queue order; holds the batch being
    /// appended, empty between appends (its buffer kept for the next).
    writing: tokio::sync::Mutex<Vec<PendingAudit>>,
    dropped: AtomicU64,
    /// The log was dropped: the writer task ends.
    closed: AtomicBool,
}

fn locked<T>(queue: &Mutex<T>) -> MutexGuard<'_, T> {
    // Pushes and takes only: a poisoned queue is still consistent.
    queue
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl AuditLog {
    pub fn new(store: Arc<dyn Store>, settings: AuditSettings) -> Self {
        Self {
            settings,
            inner: Arc::new(Inner {
                store,
                queue: Mutex::new(Vec::new()),
                wake: Notify::new(),
                full: Notify::new(),
                writing: tokio::sync::Mutex::new(Vec::new()),
                dropped: AtomicU64::new(0),
                closed: AtomicBool::new(false),
            }),
            started: AtomicBool::new(false),
        }
    }

    /// Whether entries are recorded at all.
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// What a call's arguments leave in its entry: always the digest, the
    /// masked arguments with `--audit-arguments`.
    pub fn write_args(&self, record: &mut PendingAudit, args: &Value) {
        audit::write_args(record, args, self.settings.arguments);
    }

    /// Queues an entry; never waits, never fails.
    pub fn record(&self, record: impl Into<PendingAudit>) {
        if !self.settings.enabled {
            return;
        }
        let record = record.into();
        let queued = {
            let mut queue = locked(&self.inner.queue);
            if queue.len() >= MAX_QUEUED {
                drop(queue);
                let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::error!(
                        dropped,
                        "audit entries dropped: the store is not taking them"
                    );
                }
                return;
            }
            queue.push(record);
            queue.len()
        };
        self.start();
        if queued == 1 {
            self.inner.wake.notify_one();
        } else if queued == MAX_BATCH {
            self.inner.full.notify_one();
        }
    }

    /// Entries dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Starts the writer task on the first entry (so that building the
    /// state needs no runtime).
    fn start(&self) {
        if self.started.load(Ordering::Acquire) || self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.started.store(false, Ordering::Release);
            return;
        };
        let inner = self.inner.clone();
        runtime.spawn(async move {
            loop {
                // A push after this check leaves a permit: no wake-up is lost.
                if locked(&inner.queue).is_empty() {
                    inner.wake.notified().await;
                }
                if inner.closed.load(Ordering::Acquire) {
                    return;
                }
                // Gathers until the linger ends or a full batch waits. The
                // length is checked after each wake-up: a wake-up left
                // over from a batch already written ends nothing.
                let deadline = tokio::time::Instant::now() + LINGER;
                while locked(&inner.queue).len() < MAX_BATCH {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => break,
                        () = inner.full.notified() => {}
                    }
                }
                if !inner.write_queued().await {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        });
    }

    /// Writes everything queued so far (bounded by the append timeout).
    pub async fn flush(&self) {
        self.inner.write_queued().await;
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.wake.notify_one();
    }
}

impl Inner {
    /// Appends the queue in batches; false if the store failed (what was
    /// not appended stays queued, in order).
    async fn write_queued(&self) -> bool {
        let mut batch = self.writing.lock().await;
        loop {
            {
                let mut queue = locked(&self.queue);
                if queue.len() <= MAX_BATCH {
                    // The queue's buffer and the last batch's (empty) trade
                    // places: neither is allocated or copied again.
                    std::mem::swap(&mut *queue, &mut *batch);
                } else {
                    batch.extend(queue.drain(..MAX_BATCH));
                }
            }
            if batch.is_empty() {
                return true;
            }
            let views: Vec<AuditView<'_>> = batch.iter().map(PendingAudit::view).collect();
            let appended =
                tokio::time::timeout(APPEND_TIMEOUT, self.store.append_audit(&views)).await;
            let error = match appended {
                Ok(Ok(())) => {
                    batch.clear();
                    // A buffer grown while the store was away is not kept.
                    batch.shrink_to(MAX_BATCH);
                    continue;
                }
                Ok(Err(error)) => error.to_string(),
                Err(_elapsed) => "timed out".to_owned(),
            };
            tracing::warn!(%error, entries = batch.len(), "could not append to the audit log; will retry");
            let mut queue = locked(&self.queue);
            // The batch goes back before what was queued meanwhile.
            let newer = std::mem::replace(&mut *queue, std::mem::take(&mut *batch));
            queue.extend(newer);
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use runner_proto::audit::{AuditAction, AuditActor};
    use time::OffsetDateTime;

    use super::*;
    use crate::audit::AuditRecord;

    async fn store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
        let url = format!("sqlite://{}", dir.path().join("relay.db").display());
        crate::store::open(&url).await.expect("store")
    }

    fn entry() -> AuditRecord {
        AuditRecord::new(
            OffsetDateTime::now_utc(),
            AuditActor::default(),
            AuditAction::ToolInvoke,
        )
    }

    /// Waits until the chain holds `seq` entries; false after `within`.
    async fn appended(store: &Arc<dyn Store>, seq: u64, within: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            if store.audit_head().await.expect("head").seq >= seq {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// A full batch is written at once; a lone entry waits for the linger
    /// (the bound docs/audit.md gives for a crash), and no longer.
    #[tokio::test]
    async fn a_full_batch_goes_at_once_and_a_lone_entry_within_the_linger() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(&dir).await;
        let log = AuditLog::new(store.clone(), AuditSettings::default());
        for _ in 0..MAX_BATCH {
            log.record(entry());
        }
        assert!(
            appended(&store, MAX_BATCH as u64, LINGER / 2).await,
            "a full batch waited for the linger"
        );

        let recorded = Instant::now();
        log.record(entry());
        let next = MAX_BATCH as u64 + 1;
        assert!(
            !appended(&store, next, LINGER / 2).await,
            "a lone entry went without lingering"
        );
        assert!(appended(&store, next, LINGER * 5).await, "never written");
        // The timer's granularity aside, it waited the linger.
        assert!(
            recorded.elapsed() >= LINGER / 2,
            "written after {:?}",
            recorded.elapsed()
        );
    }

    /// A failed append keeps its entries queued ahead of newer ones; the
    /// next append writes them all, in order, in one chain.
    #[tokio::test]
    async fn a_failed_append_keeps_its_entries_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = store(&dir).await;
        let url = format!("sqlite://{}", dir.path().join("relay.db").display());
        let editor = sqlx::SqlitePool::connect(&url).await.expect("connect");
        // A row where the second entry goes: the append fails on it.
        sqlx::query(
            "INSERT INTO audit_log (seq, at_ms, action, decision, prev_hash, hash) \
             VALUES (2, 0, 'tool.invoke', 'allowed', 'x', 'y')",
        )
        .execute(&editor)
        .await
        .expect("insert");
        let log = AuditLog::new(store.clone(), AuditSettings::default());
        let tool = |name: &str| {
            let mut record = entry();
            record.tool = Some(name.to_owned());
            record
        };
        for name in ["a", "b", "c"] {
            log.record(tool(name));
        }
        log.flush().await;
        assert_eq!(store.audit_head().await.expect("head").seq, 0, "failed");

        log.record(tool("d"));
        sqlx::query("DELETE FROM audit_log WHERE seq = 2")
            .execute(&editor)
            .await
            .expect("delete");
        log.flush().await;
        let entries = store
            .audit_entries(&crate::audit::AuditQuery {
                limit: 10,
                ..Default::default()
            })
            .await
            .expect("read");
        let tools: Vec<_> = entries
            .iter()
            .map(|entry| entry.record.tool.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(tools, ["a", "b", "c", "d"]);
        assert!(entries.iter().all(crate::audit::chain::intact));
    }
}
