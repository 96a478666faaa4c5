//! Giving freed memory back to the system after a burst of connects
//! (cargo feature `malloc-trim`, on by default; without it, the relay
//! leaves its heap to the allocator and nothing here runs).
//!
//! A relay restarted under thousands of runners takes all their handshakes
//! within seconds (a reconnect storm). glibc's malloc keeps what those
//! handshakes freed, so the relay stays much larger than its idle
//! sessions need, for good. `malloc_trim(0)` gives the free pages of every
//! arena back. It walks each arena under that arena's lock, so it runs
//! once a burst is over, not on a timer regardless.
//!
//! mimalloc, which gives memory back on its own, is no substitute: it let
//! the memory held by a stream to a slow reader grow several times over.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::admission::Admission;

/// How often the relay looks for a finished burst.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// Connects since the last trim that make a burst worth trimming after.
pub const BURST: u64 = 1_000;

/// Whether to trim now: a burst came (`admitted_since` connects since the
/// last trim) and is over (no connect in progress).
pub fn burst_is_over(admitted_since: u64, in_progress: usize) -> bool {
    admitted_since >= BURST && in_progress == 0
}

/// Gives the memory of each burst of connects back to the system once the
/// burst is over, until shutdown; `None` when the relay is built to leave
/// its heap alone.
pub fn trim_after_bursts(
    admission: Arc<Admission>,
    shutdown: CancellationToken,
) -> Option<JoinHandle<()>> {
    if !cfg!(feature = "malloc-trim") {
        return None;
    }
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut trimmed_at = 0;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let admitted = admission.admitted();
            let connects = admitted.saturating_sub(trimmed_at);
            if !burst_is_over(connects, admission.in_progress()) {
                continue;
            }
            trimmed_at = admitted;
            let before = resident_kib();
            let gave_back = tokio::task::spawn_blocking(give_back)
                .await
                .unwrap_or(false);
            tracing::info!(
                connects,
                gave_back,
                rss_before_kib = before,
                rss_after_kib = resident_kib(),
                "a burst of connects is over: freed memory given back"
            );
        }
    }))
}

/// Gives free heap pages back to the system; whether any were.
#[cfg(all(feature = "malloc-trim", target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn give_back() -> bool {
    // SAFETY: `malloc_trim` has no preconditions. It takes each arena's
    // lock itself, may be called from any thread at any time, and releases
    // only pages that hold no allocation.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other allocators give memory back on their own; a relay built without
/// `malloc-trim` leaves it to glibc's.
#[cfg(not(all(feature = "malloc-trim", target_os = "linux", target_env = "gnu")))]
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

    /// Fills blocks, frees all but the last (it sits above the others, so
    /// freeing them cannot shrink the heap from the top on its own), runs
    /// `between`, and checks what is left; the resident set before and
    /// after `between`.
    fn free_below_a_live_block(between: fn() -> bool) -> (u64, u64) {
        const BLOCKS: usize = 64 * 1024;
        let mut blocks: Vec<Vec<u8>> = (0..BLOCKS).map(|i| vec![i as u8; 1024]).collect();
        let pin = blocks.pop().expect("blocks were made");
        let live: Vec<Vec<u8>> = blocks.iter().step_by(4096).cloned().collect();
        drop(blocks);
        let kept = resident_kib().expect("VmRSS");
        between();
        let after = resident_kib().expect("VmRSS");
        // What is still allocated reads the same, trimmed or not.
        assert!(pin.iter().all(|&byte| byte == ((BLOCKS - 1) % 256) as u8));
        for (index, block) in live.iter().enumerate() {
            let want = ((index * 4096) % 256) as u8;
            assert!(block.iter().all(|&byte| byte == want), "block {index}");
        }
        (kept, after)
    }

    /// Leaving the heap alone keeps live memory as it is; so does a trim,
    /// which gives back what was freed.
    #[cfg(all(feature = "malloc-trim", target_os = "linux", target_env = "gnu"))]
    #[test]
    fn give_back_returns_freed_pages_and_keeps_live_ones() {
        free_below_a_live_block(|| false);
        let (kept, after) = free_below_a_live_block(give_back);
        // 64 MiB were freed; at least half of it must leave.
        assert!(
            kept.saturating_sub(after) > 32 * 1024,
            "after free {kept} KiB, after trim {after}"
        );
    }

    #[cfg(not(feature = "malloc-trim"))]
    #[test]
    fn without_the_feature_nothing_is_trimmed() {
        assert!(!give_back());
        free_below_a_live_block(give_back);
    }
}
