//! "At most once per interval", for the housekeeping the call path does
//! (pruning kept output files and empty call cgroups).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// How often the call path may spend time on housekeeping (pruning kept
/// output files, empty call cgroups): listing a directory on every call
/// costs more than the spawn it precedes.
pub const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(60);

/// "At most once per interval", process-wide and lock-free.
#[derive(Debug, Default)]
pub struct Throttle {
    /// Unix seconds of the last time it was due (0: never).
    last: AtomicU64,
}

impl Throttle {
    pub const fn new() -> Throttle {
        Throttle {
            last: AtomicU64::new(0),
        }
    }

    /// Whether `every` has passed since it was last due; if so, it is now.
    pub fn due(&self, every: Duration) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < every.as_secs() {
            return false;
        }
        self.last
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_is_due_once_per_interval() {
        let throttle = Throttle::new();
        assert!(throttle.due(Duration::from_secs(60)));
        assert!(!throttle.due(Duration::from_secs(60)));
        assert!(throttle.due(Duration::ZERO));
    }
}
