//! Wakes requests that wait on an approval (`?wait=`, `approval_wait_s`)
//! when one changes on this relay; waiters re-read the store then.
//!
//! One signal for every approval: few requests wait at once, and each
//! re-reads only its own row. A change made by another relay (shared mode)
//! sends no signal here, so waiters also re-read every
//! [`ApprovalWaiters::poll_interval`].

use std::time::Duration;

use tokio::sync::watch;

/// How often a waiter re-reads its approval when other relays may change
/// it: bounds how late a decision made elsewhere is seen.
const SHARED_POLL: Duration = Duration::from_millis(250);
/// The same alone, where every change signals: only a safety net.
const SINGLE_POLL: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct ApprovalWaiters {
    changed: watch::Sender<u64>,
    poll: Duration,
}

impl ApprovalWaiters {
    /// `shared`: other relays change approvals too.
    pub fn new(shared: bool) -> Self {
        Self {
            changed: watch::Sender::new(0),
            poll: if shared { SHARED_POLL } else { SINGLE_POLL },
        }
    }

    /// Something about an approval changed on this relay.
    pub fn notify(&self) {
        self.changed.send_modify(|generation| *generation += 1);
    }

    /// A handle to wait on; take it before reading the store, so a change
    /// between the read and the wait is not missed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Returns after the next change on this relay or one poll interval,
    /// whichever comes first.
    pub async fn next_change(&self, receiver: &mut watch::Receiver<u64>) {
        let _ = tokio::time::timeout(self.poll, receiver.changed()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_wakes_a_waiter_before_the_poll_interval() {
        let waiters = std::sync::Arc::new(ApprovalWaiters::new(false));
        let mut receiver = waiters.subscribe();
        let notifier = waiters.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            notifier.notify();
        });
        let started = std::time::Instant::now();
        waiters.next_change(&mut receiver).await;
        assert!(started.elapsed() < SINGLE_POLL, "woken by the change");
        assert_eq!(*receiver.borrow_and_update(), 1);
    }
}
