//! Live status of an environment (SPEC §6), computed on every read from the
//! last heartbeat time, the runner's presence and recent call timeouts;
//! never stored.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use runner_proto::api::Status;
use runner_proto::ws::Heartbeat;
use time::{Duration, OffsetDateTime};
use tokio::sync::mpsc;

use crate::environment::EnvironmentRecord;
use crate::routing::Presence;

/// No heartbeat for this long: offline.
pub const OFFLINE_AFTER: Duration = Duration::seconds(90);
/// Only timeouts of calls allowed to run longer than this count towards the
/// fallback degraded rule (short timeouts say more about the caller).
pub const SLOW_TIMEOUT_SECONDS: u64 = 20;
/// Consecutive slow timeouts that mark a runner degraded.
pub const DEGRADED_AFTER_TIMEOUTS: u32 = 3;
/// Quiet time after which a timeout streak no longer counts.
pub const TIMEOUT_STREAK_EXPIRES: Duration = Duration::minutes(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TimeoutStreak {
    count: u32,
    last_at: OffsetDateTime,
}

/// A change to an environment's timeout streak, as relays share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreakChange {
    /// A call allowed more than [`SLOW_TIMEOUT_SECONDS`] timed out.
    SlowTimeout { at: OffsetDateTime },
    /// A call was answered: the streak ends.
    Ended,
}

/// Recent call outcomes per environment, for runners that do not report an
/// executor health probe. Kept in memory: a restart forgetting it errs
/// towards "online". In shared mode every relay counts every relay's
/// outcomes (see [`CallHealth::share`]), since a runner's calls reach it
/// through whichever relay the caller's load balancer picked.
#[derive(Debug, Default)]
pub struct CallHealth {
    streaks: Mutex<HashMap<String, TimeoutStreak>>,
    /// Shared mode: this relay's own changes, for the other relays.
    shared: OnceLock<mpsc::UnboundedSender<(String, StreakChange)>>,
}

impl CallHealth {
    fn streaks(&self) -> std::sync::MutexGuard<'_, HashMap<String, TimeoutStreak>> {
        // Single insert/remove operations: a poisoned map is still consistent.
        self.streaks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Shared mode: from now on this relay's own changes also go to the
    /// returned receiver (for broadcasting). `None` if already shared.
    pub fn share(&self) -> Option<mpsc::UnboundedReceiver<(String, StreakChange)>> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.shared.set(sender).ok().map(|()| receiver)
    }

    fn tell_others(&self, environment_id: &str, change: StreakChange) {
        if let Some(shared) = self.shared.get() {
            // Closed only when the relay stops sharing (shutting down).
            let _ = shared.send((environment_id.to_owned(), change));
        }
    }

    /// A change recorded by another relay: counted here, not passed on.
    pub fn apply(&self, environment_id: &str, change: StreakChange) {
        match change {
            StreakChange::SlowTimeout { at } => self.count_timeout(environment_id, at),
            StreakChange::Ended => {
                self.streaks().remove(environment_id);
            }
        }
    }

    /// A call answered: the streak ends. Only a streak known here is
    /// announced, so ordinary successes cost the other relays nothing.
    pub fn record_success(&self, environment_id: &str) {
        if self.streaks().remove(environment_id).is_some() {
            self.tell_others(environment_id, StreakChange::Ended);
        }
    }

    /// A call timed out at the relay.
    pub fn record_timeout(&self, environment_id: &str, timeout_s: u64, at: OffsetDateTime) {
        if timeout_s <= SLOW_TIMEOUT_SECONDS {
            return;
        }
        self.count_timeout(environment_id, at);
        self.tell_others(environment_id, StreakChange::SlowTimeout { at });
    }

    fn count_timeout(&self, environment_id: &str, at: OffsetDateTime) {
        let mut streaks = self.streaks();
        let streak = streaks
            .entry(environment_id.to_owned())
            .or_insert(TimeoutStreak {
                count: 0,
                last_at: at,
            });
        if at - streak.last_at > TIMEOUT_STREAK_EXPIRES {
            streak.count = 0;
        }
        streak.count += 1;
        // Changes from other relays may arrive a moment out of order.
        streak.last_at = streak.last_at.max(at);
    }

    fn degraded_by_timeouts(&self, environment_id: &str, now: OffsetDateTime) -> Option<u32> {
        self.streaks()
            .get(environment_id)
            .filter(|streak| {
                streak.count >= DEGRADED_AFTER_TIMEOUTS
                    && now - streak.last_at < TIMEOUT_STREAK_EXPIRES
            })
            .map(|streak| streak.count)
    }

    /// Forgets an environment (deleted).
    pub fn forget(&self, environment_id: &str) {
        self.streaks().remove(environment_id);
    }
}

/// The status of an environment now, and why.
pub fn compute(
    environment: &EnvironmentRecord,
    presence: Option<&Presence>,
    health: &CallHealth,
    now: OffsetDateTime,
) -> (Status, Option<String>) {
    let Some(last_seen) = environment.last_seen else {
        return match presence {
            // Connected but the first write of last_seen failed: trust the socket.
            Some(_) => (Status::Online, None),
            None => (
                Status::Pending,
                Some("no runner has connected yet".to_owned()),
            ),
        };
    };
    let silent_for = now - last_seen;
    let Some(presence) = presence else {
        return (Status::Offline, Some("runner disconnected".to_owned()));
    };
    if silent_for > OFFLINE_AFTER {
        return (
            Status::Offline,
            Some(format!("no heartbeat for {} s", silent_for.whole_seconds())),
        );
    }
    let heartbeat = &presence.heartbeat;
    if let Some(why) = Degraded::by(heartbeat) {
        return (Status::Degraded, Some(why.reason()));
    }
    if heartbeat.executor_healthy.is_none() {
        if let Some(count) = health.degraded_by_timeouts(&environment.id, now) {
            return (
                Status::Degraded,
                Some(format!("{count} consecutive calls timed out")),
            );
        }
    }
    (Status::Online, None)
}

/// What a runner's own heartbeat says makes it degraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Degraded {
    /// Its executor health probe fails.
    ExecutorProbe,
    /// Calls wait for an executor slot.
    Backlog(u32),
}

impl Degraded {
    pub fn by(heartbeat: &Heartbeat) -> Option<Self> {
        if heartbeat.executor_healthy == Some(false) {
            Some(Self::ExecutorProbe)
        } else if heartbeat.backlog > 0 {
            Some(Self::Backlog(heartbeat.backlog))
        } else {
            None
        }
    }

    /// A stable code (the audit log's).
    pub fn code(self) -> &'static str {
        match self {
            Self::ExecutorProbe => "executor_probe_failing",
            Self::Backlog(_) => "backlog",
        }
    }

    /// For people.
    pub fn reason(self) -> String {
        match self {
            Self::ExecutorProbe => "the runner's executor health probe is failing".to_owned(),
            Self::Backlog(waiting) => format!("{waiting} calls are waiting for an executor"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_streak_needs_three_slow_timeouts_and_expires() {
        let health = CallHealth::default();
        let start = OffsetDateTime::UNIX_EPOCH;
        health.record_timeout("e", 10, start);
        health.record_timeout("e", 30, start);
        health.record_timeout("e", 30, start);
        assert_eq!(health.degraded_by_timeouts("e", start), None);
        health.record_timeout("e", 30, start);
        assert_eq!(health.degraded_by_timeouts("e", start), Some(3));
        assert_eq!(
            health.degraded_by_timeouts("e", start + TIMEOUT_STREAK_EXPIRES),
            None
        );
        health.record_success("e");
        assert_eq!(health.degraded_by_timeouts("e", start), None);
    }

    #[test]
    fn shared_changes_go_out_once_and_applied_ones_are_counted_not_echoed() {
        let health = CallHealth::default();
        let mut shared = health.share().expect("first share");
        assert!(health.share().is_none());
        let start = OffsetDateTime::UNIX_EPOCH;
        health.record_timeout("e", 30, start);
        health.record_timeout("e", 10, start);
        health.apply("e", StreakChange::SlowTimeout { at: start });
        health.apply("e", StreakChange::SlowTimeout { at: start });
        assert_eq!(health.degraded_by_timeouts("e", start), Some(3));
        assert_eq!(
            shared.try_recv(),
            Ok(("e".to_owned(), StreakChange::SlowTimeout { at: start }))
        );
        assert!(shared.try_recv().is_err(), "applied changes are not echoed");
        health.record_success("e");
        assert_eq!(shared.try_recv(), Ok(("e".to_owned(), StreakChange::Ended)));
        health.record_success("e");
        assert!(shared.try_recv().is_err(), "no streak, nothing to announce");
        health.apply("e", StreakChange::SlowTimeout { at: start });
        health.apply("e", StreakChange::Ended);
        assert_eq!(health.degraded_by_timeouts("e", start), None);
    }
}
