//! The audit log's writer: [`AuditLog::record`] queues an entry without
//! waiting (a request never waits for, or fails because of, the audit),
//! and a background task appends what is queued in one transaction within
//! [`LINGER`]; [`AuditLog::flush`] (reads of `GET /audit`, shutdown)
//! writes at once.
//!
//! Entries are chained in the order they are appended; the store does the
//! chaining under its own lock (see [`crate::store::Store::append_audit`]),
//! so several relays on one database keep one chain.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

use crate::audit::{self, AuditRecord};
use crate::store::Store;

/// How long the writer gathers entries after the first one of a batch.
pub const LINGER: Duration = Duration::from_millis(100);
/// Most entries appended in one transaction.
const MAX_BATCH: usize = 500;
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
    queue: Mutex<Vec<AuditRecord>>,
    wake: Notify,
    /// One append at a time, in queue order.
    writing: tokio::sync::Mutex<()>,
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
                writing: tokio::sync::Mutex::new(()),
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
    pub fn args(&self, args: &Value) -> audit::ArgsRecord {
        audit::args_record(args, self.settings.arguments)
    }

    /// Queues an entry; never waits, never fails.
    pub fn record(&self, record: AuditRecord) {
        if !self.settings.enabled {
            return;
        }
        let first = {
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
            queue.len() == 1
        };
        self.start();
        if first {
            self.inner.wake.notify_one();
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
                tokio::time::sleep(LINGER).await;
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
        let _writing = self.writing.lock().await;
        loop {
            let batch: Vec<AuditRecord> = {
                let mut queue = locked(&self.queue);
                let n = queue.len().min(MAX_BATCH);
                queue.drain(..n).collect()
            };
            if batch.is_empty() {
                return true;
            }
            let appended =
                tokio::time::timeout(APPEND_TIMEOUT, self.store.append_audit(&batch)).await;
            let error = match appended {
                Ok(Ok(())) => continue,
                Ok(Err(error)) => error.to_string(),
                Err(_elapsed) => "timed out".to_owned(),
            };
            tracing::warn!(%error, entries = batch.len(), "could not append to the audit log; will retry");
            let mut queue = locked(&self.queue);
            let newer = std::mem::replace(&mut *queue, batch);
            queue.extend(newer);
            return false;
        }
    }
}
