//! Reconnect delays: exponential, capped, with jitter, reset after a
//! healthy session.
//!
//! Jitter matters more than the curve: when a relay restarts, thousands of
//! runners lose their socket in the same millisecond, and without jitter
//! they would all come back in the same millisecond too. Each delay is drawn
//! uniformly from [d/2, d] ("equal jitter"), so runners spread out while a
//! single runner still backs off steadily.

use std::time::Duration;

/// First delay after a failure.
pub const BASE: Duration = Duration::from_millis(500);
/// Longest delay between attempts.
pub const CAP: Duration = Duration::from_secs(60);
/// A session that lasted this long was healthy: the next failure starts
/// again from [`BASE`].
pub const HEALTHY_SESSION: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Backoff {
    attempt: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    pub fn new() -> Backoff {
        Backoff { attempt: 0 }
    }

    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// The ceiling of the next delay, before jitter.
    pub fn ceiling(&self) -> Duration {
        let factor = 1u32.checked_shl(self.attempt.min(16)).unwrap_or(u32::MAX);
        BASE.saturating_mul(factor).min(CAP)
    }

    /// The next delay, jittered; advances the attempt counter.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self.ceiling();
        self.attempt = self.attempt.saturating_add(1);
        let half = ceiling / 2;
        half + half.mul_f64(random_unit())
    }

    /// [`Self::next_delay`], but no sooner than `floor` (a relay's
    /// `Retry-After`, capped at [`CAP`]). A delay raised to the floor gets
    /// up to half of it again as jitter: runners turned away together by
    /// the same `Retry-After: 1` must not all come back in the same
    /// millisecond.
    pub fn next_delay_at_least(&mut self, floor: Duration) -> Duration {
        let floor = floor.min(CAP);
        let delay = self.next_delay();
        if delay >= floor {
            return delay;
        }
        floor + (floor / 2).mul_f64(random_unit())
    }
}

/// A uniform number in [0, 1). Falls back to 0.5 if the OS has no entropy
/// to give, which only loses the spread, never the backoff.
fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::fill(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_stay_within_bounds_and_reset() {
        let mut backoff = Backoff::new();
        let mut previous_ceiling = Duration::ZERO;
        for _ in 0..40 {
            let ceiling = backoff.ceiling();
            assert!(ceiling >= previous_ceiling);
            assert!(ceiling <= CAP);
            let delay = backoff.next_delay();
            assert!(
                delay >= ceiling / 2 && delay <= ceiling,
                "{delay:?} vs {ceiling:?}"
            );
            previous_ceiling = ceiling;
        }
        assert_eq!(backoff.ceiling(), CAP);
        backoff.reset();
        assert_eq!(backoff.ceiling(), BASE);
    }

    #[test]
    fn jitter_spreads_delays() {
        let delays: std::collections::HashSet<Duration> = (0..50)
            .map(|_| Backoff { attempt: 5 }.next_delay())
            .collect();
        assert!(delays.len() > 40, "only {} distinct delays", delays.len());
    }

    #[test]
    fn a_retry_after_is_a_floor_with_jitter_and_a_cap() {
        for _ in 0..50 {
            let delay = Backoff::new().next_delay_at_least(Duration::from_secs(4));
            assert!(
                delay >= Duration::from_secs(4) && delay <= Duration::from_secs(6),
                "{delay:?}"
            );
        }
        // Below the backoff's own delay, it changes nothing.
        let delay = Backoff { attempt: 20 }.next_delay_at_least(Duration::from_secs(1));
        assert!(delay >= CAP / 2, "{delay:?}");
        // A relay cannot park a runner past the ceiling (plus its jitter).
        let delay = Backoff::new().next_delay_at_least(Duration::from_secs(86_400));
        assert!(delay <= CAP + CAP / 2, "{delay:?}");
        let spread: std::collections::HashSet<Duration> = (0..50)
            .map(|_| Backoff::new().next_delay_at_least(Duration::from_secs(1)))
            .collect();
        assert!(spread.len() > 40, "only {} distinct delays", spread.len());
    }
}
