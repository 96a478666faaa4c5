//! Rate limiting of failed registration-token attempts (issue: guessing).
//!
//! A fixed window per key counts *failures*; once a key reaches its limit,
//! every *failed* attempt under that key is answered 429 until the window
//! ends. A valid token is never refused for someone else's failures: hosts
//! behind one NAT share an address, and a 256-bit token cannot be guessed,
//! so the limit only bounds what failures cost (lookups, log lines).
//! Keys are the source address (`ip:…`) and, where a failure can be pinned
//! on one (an expired or rotated-out token), the environment (`env:…`).
//! Successful attempts cost nothing. Memory is bounded: expired windows are
//! dropped whenever the table grows past [`MAX_KEYS`], and past that the
//! oldest window is evicted.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use time::OffsetDateTime;

/// Failures allowed per source address per window.
pub const PER_ADDRESS: u32 = 10;
/// Failures allowed per environment per window (several runners' worth).
pub const PER_ENVIRONMENT: u32 = 30;
/// Window length.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Most keys tracked at once.
pub const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Window {
    started: OffsetDateTime,
    failures: u32,
}

/// Counts failures per key.
#[derive(Debug, Default)]
pub struct FailureLimiter {
    windows: Mutex<HashMap<String, Window>>,
}

impl FailureLimiter {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Window>> {
        // Poisoning needs a panic while the lock is held; the map of plain
        // counters stays valid regardless.
        self.windows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(seconds until retry)` when `key` is over `limit` now.
    pub fn check(&self, key: &str, limit: u32, now: OffsetDateTime) -> Result<(), u64> {
        let windows = self.lock();
        match windows.get(key) {
            Some(window) if window.failures >= limit => {
                let ends = window.started + WINDOW;
                if now < ends {
                    Err((ends - now).whole_seconds().max(1).unsigned_abs())
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    /// Records one failure under `key`.
    pub fn record_failure(&self, key: &str, now: OffsetDateTime) {
        let mut windows = self.lock();
        if windows.len() >= MAX_KEYS && !windows.contains_key(key) {
            windows.retain(|_, w| now < w.started + WINDOW);
            if windows.len() >= MAX_KEYS {
                if let Some(oldest) = windows
                    .iter()
                    .min_by_key(|(_, w)| w.started)
                    .map(|(k, _)| k.clone())
                {
                    windows.remove(&oldest);
                }
            }
        }
        let window = windows.entry(key.to_owned()).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now >= window.started + WINDOW {
            *window = Window {
                started: now,
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_blocked_after_its_limit_until_the_window_ends() {
        let limiter = FailureLimiter::default();
        let start = OffsetDateTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for _ in 0..3 {
            assert!(limiter.check("ip:1", 3, start).is_ok());
            limiter.record_failure("ip:1", start);
        }
        let retry = limiter.check("ip:1", 3, start + Duration::from_secs(10));
        assert_eq!(retry, Err(50));
        assert!(
            limiter.check("ip:2", 3, start).is_ok(),
            "other keys unaffected"
        );
        assert!(limiter.check("ip:1", 3, start + WINDOW).is_ok());
        limiter.record_failure("ip:1", start + WINDOW);
        assert!(
            limiter.check("ip:1", 3, start + WINDOW).is_ok(),
            "new window"
        );
    }

    #[test]
    fn memory_stays_bounded() {
        let limiter = FailureLimiter::default();
        let now = OffsetDateTime::UNIX_EPOCH;
        for i in 0..(MAX_KEYS + 10) {
            limiter.record_failure(&format!("ip:{i}"), now);
        }
        assert!(limiter.lock().len() <= MAX_KEYS);
    }
}
