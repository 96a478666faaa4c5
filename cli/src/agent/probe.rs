//! The executor health probe the heartbeat reports (`executor_healthy`,
//! SPEC §6: a failing probe makes the environment `degraded`): whether
//! this machine can run a call now. It checks what every call needs:
//!
//! * a process can be started and ends within [`SPAWN_BOUND`] (`/bin/sh -c
//!   :`: fails on a full process table, exhausted memory, a frozen cgroup,
//!   a machine too loaded to run anything);
//! * the workspace is a directory a file can be created and written in
//!   (fails when it is gone, replaced, read-only, or its disk is full);
//! * its file system has at least [`MIN_FREE_BYTES`] free (kept output and
//!   spooled files need room before a write fails).
//!
//! It runs in a task of its own every [`PROBE_INTERVAL`] and keeps its
//! last verdict in [`Verdict`], which the heartbeat reads: a heartbeat
//! never waits for a process, and a probe that hangs counts as failed once
//! [`PROBE_BOUND`] has passed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time between two probes: under the relay's heartbeat interval (15 s),
/// so each heartbeat carries a verdict at most one probe old.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(10);
/// How long the trivial process may take from spawn to exit.
pub const SPAWN_BOUND: Duration = Duration::from_secs(5);
/// How long a whole probe may take before it counts as failed.
pub const PROBE_BOUND: Duration = Duration::from_secs(8);
/// Free space the workspace's file system must have.
pub const MIN_FREE_BYTES: u64 = 64 * 1024 * 1024;
/// The file the probe writes and removes in the workspace.
const PROBE_FILE: &str = ".runner-probe";

/// The last probe's verdict, shared with the heartbeat.
#[derive(Debug)]
pub struct Verdict(AtomicU8);

impl Default for Verdict {
    fn default() -> Verdict {
        Verdict(AtomicU8::new(UNKNOWN))
    }
}

const UNKNOWN: u8 = 0;
const HEALTHY: u8 = 1;
const FAILING: u8 = 2;

impl Verdict {
    /// `None` before the first probe has ended (the relay then judges by
    /// call timeouts), else whether it passed.
    pub fn get(&self) -> Option<bool> {
        match self.0.load(Ordering::Relaxed) {
            HEALTHY => Some(true),
            FAILING => Some(false),
            _ => None,
        }
    }

    fn set(&self, healthy: bool) -> bool {
        let new = if healthy { HEALTHY } else { FAILING };
        self.0.swap(new, Ordering::Relaxed) != new
    }
}

/// Probes every [`PROBE_INTERVAL`] for the life of the runtime, writing
/// into `verdict`; logs when the verdict changes.
pub fn start(workspace: PathBuf, verdict: Arc<Verdict>) {
    tokio::spawn(async move {
        let busy = Arc::new(AtomicBool::new(false));
        let mut interval = tokio::time::interval(PROBE_INTERVAL);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            let outcome = match tokio::time::timeout(PROBE_BOUND, check(&workspace, &busy)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(format!(
                    "the probe did not finish within {} s",
                    PROBE_BOUND.as_secs()
                )),
            };
            let changed = verdict.set(outcome.is_ok());
            match outcome {
                Err(why) if changed => {
                    tracing::warn!(%why, "executor health probe failing: the relay shows this runner degraded")
                }
                Ok(()) if changed => tracing::info!("executor health probe passing"),
                _ => {}
            }
        }
    });
}

/// One probe: a trivial process, then the workspace. `busy` is set while
/// a workspace check runs.
pub async fn check(workspace: &Path, busy: &Arc<AtomicBool>) -> Result<(), String> {
    spawn_trivial().await?;
    // File system calls may block (a hung network mount): in a thread of
    // their own, off the runtime's workers (and out of its blocking pool,
    // whose idle threads would linger among them), bounded by the caller's
    // timeout. A check still hung from an earlier probe fails this one
    // rather than stacking a second thread on it.
    if busy.swap(true, Ordering::AcqRel) {
        return Err("an earlier workspace check has not finished".to_owned());
    }
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let workspace = workspace.to_owned();
    let done = Arc::clone(busy);
    let spawned = std::thread::Builder::new()
        .name("runner-probe".to_owned())
        .spawn(move || {
            let outcome = check_workspace(&workspace);
            done.store(false, Ordering::Release);
            let _ = sender.send(outcome);
        });
    if let Err(error) = spawned {
        busy.store(false, Ordering::Release);
        return Err(format!("cannot start a thread: {error}"));
    }
    receiver
        .await
        .map_err(|_| "the workspace check ended without a verdict".to_owned())?
}

async fn spawn_trivial() -> Result<(), String> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .args(["-c", ":"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("cannot start a process: {error}"))?;
    match tokio::time::timeout(SPAWN_BOUND, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("a trivial process failed: {status}")),
        Ok(Err(error)) => Err(format!("waiting for a trivial process: {error}")),
        Err(_) => Err(format!(
            "a trivial process did not end within {} s",
            SPAWN_BOUND.as_secs()
        )),
    }
}

/// The workspace takes a new file, and its file system has room.
fn check_workspace(workspace: &Path) -> Result<(), String> {
    use std::io::Write;
    let path = workspace.join(PROBE_FILE);
    let written = std::fs::File::create(&path).and_then(|mut file| file.write_all(b"ok"));
    let _ = std::fs::remove_file(&path);
    written.map_err(|error| {
        format!(
            "the workspace {} is not writable: {error}",
            workspace.display()
        )
    })?;
    let stats = nix::sys::statvfs::statvfs(workspace)
        .map_err(|error| format!("cannot read free space of {}: {error}", workspace.display()))?;
    // `fsblkcnt_t` is narrower than `u64` on some platforms.
    #[allow(clippy::useless_conversion)]
    let free = u64::from(stats.blocks_available()).saturating_mul(stats.fragment_size());
    if free < MIN_FREE_BYTES {
        return Err(format!(
            "the workspace's file system has {} MiB free (under {} MiB)",
            free / (1024 * 1024),
            MIN_FREE_BYTES / (1024 * 1024)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_workspace_that_is_not_a_writable_directory_fails_the_probe() {
        let busy = Arc::new(AtomicBool::new(false));
        let dir = tempfile::tempdir().expect("tempdir");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir(&workspace).expect("mkdir");
        assert_eq!(check(&workspace, &busy).await, Ok(()));
        assert!(!workspace.join(PROBE_FILE).exists(), "the probe cleans up");

        // A file where the directory should be: fails as root too, where
        // permission bits do not stop a write.
        std::fs::remove_dir(&workspace).expect("rmdir");
        std::fs::write(&workspace, "not a directory").expect("write");
        let why = check(&workspace, &busy).await.expect_err("not a directory");
        assert!(why.contains("not writable"), "{why}");

        std::fs::remove_file(&workspace).expect("rm");
        let why = check(&workspace, &busy).await.expect_err("gone");
        assert!(why.contains("not writable"), "{why}");
    }

    #[test]
    fn the_verdict_is_unknown_until_a_probe_ends_and_reports_changes() {
        let verdict = Verdict::default();
        assert_eq!(verdict.get(), None);
        assert!(verdict.set(true), "unknown to healthy is a change");
        assert!(!verdict.set(true));
        assert_eq!(verdict.get(), Some(true));
        assert!(verdict.set(false));
        assert_eq!(verdict.get(), Some(false));
    }

    /// What a probe costs (printed, for BENCHMARKS.md): it runs every
    /// PROBE_INTERVAL, so a few milliseconds are nothing.
    #[tokio::test]
    async fn a_probe_takes_milliseconds() {
        let busy = Arc::new(AtomicBool::new(false));
        let dir = tempfile::tempdir().expect("tempdir");
        let rounds = 20;
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            check(dir.path(), &busy).await.expect("healthy");
        }
        let each = started.elapsed() / rounds;
        eprintln!("one executor probe: {each:?}");
        assert!(each < SPAWN_BOUND, "{each:?}");
    }
}
