//! The relay's notion of "now": injectable so that time rules (token expiry,
//! grace periods, offline after 90 s) are tested by moving a clock, not by
//! waiting.

use std::sync::Mutex;

use time::{Duration, OffsetDateTime};

/// A source of the current time. Every time *decision* the relay makes goes
/// through one; socket timeouts (real elapsed time) use tokio's timers.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time, UTC.
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that only moves when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<OffsetDateTime>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: OffsetDateTime) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward (or backward, with a negative duration).
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// RFC 3339 text of a time, as the API shows it.
pub fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        // Only years outside 0..=9999 fail to format; fall back to Unix seconds.
        .unwrap_or_else(|_| at.unix_timestamp().to_string())
}

/// Unix seconds back to a time, for values read from the store.
pub fn from_unix(seconds: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(seconds).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new(OffsetDateTime::UNIX_EPOCH);
        assert_eq!(clock.now(), OffsetDateTime::UNIX_EPOCH);
        clock.advance(Duration::days(90));
        assert_eq!(clock.now().unix_timestamp(), 90 * 86_400);
    }
}
