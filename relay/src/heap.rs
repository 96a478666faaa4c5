//! Giving freed memory back to the system after a burst of connects.
//!
//! A relay restarted under thousands of runners takes all their handshakes
//! within seconds (a reconnect storm). glibc's malloc keeps what those
//! handshakes freed: after 19,600 runners reconnected, the relay stayed
//! 66–77 % larger for good (bench/ROUNDS.md, "Seventh round").
//! `malloc_trim(0)` gives the free pages of every arena back. It walks each
//! arena under that arena's lock, so it runs once a burst is over, not on
//! a timer regardless.
//!
//! mimalloc, which gives memory back on its own, was tried instead: it
//! raised the peak of a stream to a slow reader from 49 to 135 MiB.

use std::time::Duration;

/// How often the relay looks for a finished burst.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// Connects since the last trim that make a burst worth trimming after.
pub const BURST: u64 = 1_000;

/// Whether to trim now: a burst came (`admitted_since` connects since the
/// last trim) and is over (no connect in progress).
pub fn burst_is_over(admitted_since: u64, in_progress: usize) -> bool {
    admitted_since >= BURST && in_progress == 0
}

/// Gives free heap pages back to the system; whether any were.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn give_back() -> bool {
    // SAFETY: `malloc_trim` has no preconditions. It takes each arena's
    // lock itself, may be called from any thread at any time, and releases
    // only pages that hold no allocation.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other allocators give memory back on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back() -> bool {
    false
}

/// The process's resident set in KiB (Linux), for the log line.
pub fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_finished_burst_is_trimmed_after() {
        assert!(burst_is_over(BURST, 0));
        assert!(!burst_is_over(BURST - 1, 0), "too few connects");
        assert!(!burst_is_over(BURST * 10, 1), "still going");
    }

    /// Memory freed below a live allocation stays resident until trimmed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn give_back_returns_freed_pages() {
        const BLOCKS: usize = 64 * 1024;
        let mut blocks: Vec<Vec<u8>> = (0..BLOCKS).map(|i| vec![i as u8; 1024]).collect();
        // The last block stays: it sits above the others, so freeing them
        // cannot shrink the heap from the top on its own.
        let pin = blocks.pop().expect("blocks were made");
        let before = resident_kib().expect("VmRSS");
        drop(blocks);
        let kept = resident_kib().expect("VmRSS");
        give_back();
        let after = resident_kib().expect("VmRSS");
        assert_eq!(pin[0], ((BLOCKS - 1) % 256) as u8);
        // 64 MiB were freed; at least half of it must leave.
        assert!(
            kept.saturating_sub(after) > 32 * 1024,
            "before {before} KiB, after free {kept}, after trim {after}"
        );
    }
}
