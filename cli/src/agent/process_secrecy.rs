//! What a tool can read of the runner that started it.
//!
//! Tools run as the runner's user, so by default they could read the
//! runner's initial environment (`/proc/PPID/environ`: `RUNNER_TOKEN` or
//! `RUNNER_API_KEY` where the runner was started with them, as dev mode,
//! `/etc/runner/env` and containers do) and its memory (`/proc/PPID/mem`,
//! where the token lives once loaded). A process that is not *dumpable*
//! has its `/proc/PID/*` files owned by root and refuses ptrace, so a
//! process of the same user gets "permission denied" on both; the runner
//! itself still reads its own. Children are dumpable again after `exec`,
//! so tools are unaffected. A root runner's tools run as root and can read
//! anything: run the service as a user (`--run-as`). See docs/security.md.

/// Marks this process non-dumpable; says so, or why not.
pub fn hide_from_tools() {
    #[cfg(target_os = "linux")]
    match nix::sys::prctl::set_dumpable(false) {
        Ok(()) => {
            tracing::debug!("non-dumpable: tools cannot read this process's memory or environment")
        }
        Err(error) => {
            tracing::warn!(%error, "could not mark the runner non-dumpable: tools running as its user can read its memory and environment")
        }
    }
}
