//! Admission control of runner handshakes (`GET /runner/connect`).
//!
//! At most `max_handshakes` connects are between their request and their
//! `welcome` at once. A connect finding every slot taken waits for one, but
//! only [`ADMISSION_WAIT`] (well inside the runner's 15 s connect timeout,
//! so an admitted handshake is never thrown away by the runner giving up)
//! and only while fewer than [`WAITING_PER_SLOT`] × `max_handshakes` wait;
//! otherwise it is answered 503 with `Retry-After` at once, and the runner
//! retries after its backoff.
//!
//! Why wait at all: a relay restarting under 10,000 runners receives them
//! within the first few hundred milliseconds. Turned away at once, they back
//! off exponentially and the relay idles between their retries (measured:
//! 120 s until all 10,000 were back, relay CPU 16 %). Queued briefly, they
//! are served as fast as the relay can (slots are granted first come, first
//! served).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Longest a connect waits for a handshake slot.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(5);
/// Connects allowed to wait, per handshake slot: with the default 256
/// slots, 16,384, about what this relay admits within [`ADMISSION_WAIT`]
/// on two cores (≈ 3,000 handshakes/s). Measured: with 32 per slot, a storm
/// of 19,600 runners turned 11,000 away in its first second, and their
/// exponential backoff stretched the storm to two minutes.
pub const WAITING_PER_SLOT: usize = 64;

/// Why a connect was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Too many connects are already waiting.
    QueueFull,
    /// No slot came free within [`ADMISSION_WAIT`].
    Waited,
}

/// Slots for handshakes in progress, and the connects waiting for one.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    size: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    /// Connects given a slot since start (for [`crate::heap`]).
    admitted: AtomicU64,
}

/// Counts a connect among the waiting ones while it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    /// `max_handshakes` slots (at least one).
    pub fn new(max_handshakes: usize) -> Self {
        let slots = max_handshakes.max(1);
        Self {
            slots: Arc::new(Semaphore::new(slots)),
            size: slots,
            waiting: AtomicUsize::new(0),
            max_waiting: slots.saturating_mul(WAITING_PER_SLOT),
            admitted: AtomicU64::new(0),
        }
    }

    /// A slot, held until the handshake ends (dropping the permit).
    pub async fn admit(&self) -> Result<OwnedSemaphorePermit, Refused> {
        let permit = self.wait_for_slot().await;
        if permit.is_ok() {
            self.admitted.fetch_add(1, Ordering::Relaxed);
        }
        permit
    }

    async fn wait_for_slot(&self) -> Result<OwnedSemaphorePermit, Refused> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused::QueueFull);
        }
        let _waiting = Waiting(&self.waiting);
        match tokio::time::timeout(ADMISSION_WAIT, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // Closed never happens (the semaphore is never closed); treat it
            // like a full queue rather than panic.
            Ok(Err(_closed)) => Err(Refused::QueueFull),
            Err(_elapsed) => Err(Refused::Waited),
        }
    }

    /// Connects waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Connects holding a slot or waiting for one now.
    pub fn in_progress(&self) -> usize {
        self.size.saturating_sub(self.slots.available_permits()) + self.waiting()
    }

    /// Connects given a slot since start.
    pub fn admitted(&self) -> u64 {
        self.admitted.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn connects_wait_briefly_then_are_refused() {
        let admission = Arc::new(Admission::new(1));
        let held = admission.admit().await.expect("a free slot");

        // A waiter gets the slot as soon as it is free.
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit().await.map(drop) })
        };
        tokio::task::yield_now().await;
        assert_eq!(admission.waiting(), 1);
        drop(held);
        assert_eq!(waiter.await.expect("joined"), Ok(()));

        // Nobody frees it: refused after the wait.
        let _held = admission.admit().await.expect("free again");
        assert_eq!(admission.admit().await.map(drop), Err(Refused::Waited));
        assert_eq!(admission.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn admitted_and_in_progress_count_connects() {
        let admission = Arc::new(Admission::new(2));
        assert_eq!((admission.admitted(), admission.in_progress()), (0, 0));
        let first = admission.admit().await.expect("a free slot");
        let second = admission.admit().await.expect("a free slot");
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit().await.map(drop) })
        };
        tokio::task::yield_now().await;
        assert_eq!((admission.admitted(), admission.in_progress()), (2, 3));
        drop((first, second));
        assert_eq!(waiter.await.expect("joined"), Ok(()));
        assert_eq!((admission.admitted(), admission.in_progress()), (3, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_queue_refuses_at_once() {
        let admission = Arc::new(Admission::new(1));
        let _held = admission.admit().await.expect("a free slot");
        let mut waiters = Vec::new();
        for _ in 0..WAITING_PER_SLOT {
            let admission = admission.clone();
            waiters.push(tokio::spawn(
                async move { admission.admit().await.map(drop) },
            ));
        }
        // Let every waiter reach its wait (one yield may not run them all).
        for _ in 0..1_000 {
            if admission.waiting() == WAITING_PER_SLOT {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(admission.waiting(), WAITING_PER_SLOT);
        let started = tokio::time::Instant::now();
        assert_eq!(admission.admit().await.map(drop), Err(Refused::QueueFull));
        assert_eq!(started.elapsed(), Duration::ZERO);
        for waiter in waiters {
            assert_eq!(waiter.await.expect("joined"), Err(Refused::Waited));
        }
    }
}
