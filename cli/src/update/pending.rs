//! The "update on probation" marker: written after an automatic update,
//! removed once the new binary has had a healthy session, and the cue to
//! [`rollback`](super::rollback) when it never gets one.
//!
//! It lives in the state directory as `update-pending.json`, so it survives
//! the restart that starts the new binary.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::UpdateError;

const FILE: &str = "update-pending.json";

/// What the marker records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingUpdate {
    /// The version that was installed and is on probation.
    pub version: String,
    /// The version it replaced (kept as `runner.previous`).
    pub previous_version: String,
    /// The executable that was replaced.
    pub path: PathBuf,
    /// Starts of the service counted by its root step while on probation
    /// (a binary that keeps failing to start is rolled back).
    #[serde(default)]
    pub starts: u32,
}

fn marker(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// Records that `pending` was just installed and has not proven itself.
pub fn mark_pending(state_dir: &Path, pending: &PendingUpdate) -> Result<(), UpdateError> {
    let path = marker(state_dir);
    let io = |source| UpdateError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(state_dir).map_err(io)?;
    let text =
        serde_json::to_vec_pretty(pending).map_err(|error| io(std::io::Error::other(error)))?;
    std::fs::write(&path, text).map_err(io)
}

/// The marker, when an update is on probation. A missing or unreadable
/// marker is `None`: never roll back on a guess.
pub fn pending(state_dir: &Path) -> Option<PendingUpdate> {
    let text = std::fs::read(marker(state_dir)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The new binary connected: it stays, the marker goes.
pub fn confirm(state_dir: &Path) -> Result<(), UpdateError> {
    let path = marker(state_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(UpdateError::Io { path, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips_and_confirm_removes_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(pending(dir.path()), None);
        let update = PendingUpdate {
            version: "0.2.0".into(),
            previous_version: "0.1.0".into(),
            path: "/usr/local/bin/runner".into(),
            starts: 0,
        };
        mark_pending(dir.path(), &update).expect("mark");
        assert_eq!(pending(dir.path()), Some(update));
        confirm(dir.path()).expect("confirm");
        assert_eq!(pending(dir.path()), None);
        confirm(dir.path()).expect("confirming twice is fine");

        std::fs::write(dir.path().join(FILE), "{not json").expect("write");
        assert_eq!(pending(dir.path()), None);
    }
}
