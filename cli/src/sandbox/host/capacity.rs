//! What a sandbox host can take: its slots and the machine's memory.

use runner_proto::sandbox::Capacity;

/// MiB of memory a slot is counted for when the default number of slots
/// is worked out.
pub const MB_PER_SLOT: u64 = 256;
/// Slots per CPU, by default.
pub const SLOTS_PER_CPU: u32 = 8;

/// The capacity now, with `used` sandboxes running.
pub fn now(total: u32, used: u32) -> Capacity {
    let (memory_total_mb, memory_available_mb) = memory_mb();
    Capacity {
        slots_total: total,
        slots_used: used,
        memory_total_mb,
        memory_available_mb,
    }
}

/// The default `--slots`: eight per CPU (a sandbox mostly waits for its
/// next call), at most one per 256 MiB of memory,
/// at least one.
pub fn default_slots() -> u32 {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let (total_mb, _) = memory_mb();
    let by_memory = u32::try_from(total_mb / MB_PER_SLOT).unwrap_or(u32::MAX);
    (cpus.saturating_mul(SLOTS_PER_CPU)).min(by_memory).max(1)
}

/// `MemTotal` and `MemAvailable` of /proc/meminfo, MiB (0 when unknown).
fn memory_mb() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kb| kb / 1024)
    };
    (field("MemTotal:"), field("MemAvailable:"))
}
