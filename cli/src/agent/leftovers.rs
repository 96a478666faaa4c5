//! At start, before the first call: stop what a previous run of this
//! runner (same state directory) left running ([`crate::exec::leftovers`]),
//! say so in the log at warn, and keep the list in
//! `STATE_DIR/leftovers.json` for `runner doctor`.
//!
//! The owner id that ties calls to this state directory lives in
//! `STATE_DIR/runner-id`: made at the first `runner run`, kept after that.
//! Not a secret: a process that could read it could as well read it from a
//! call's environment.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::exec::leftovers::{stop_left_by, Leftover};
use crate::exec::owner;

/// The owner id's file in the state directory.
pub const ID_FILE: &str = "runner-id";
/// The report of the last start that stopped something.
pub const REPORT_FILE: &str = "leftovers.json";

/// What a start found and stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// When, in seconds since the Unix epoch.
    pub at_unix: u64,
    pub processes: Vec<Process>,
}

/// One stopped process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    pub pid: i32,
    pub command: String,
    pub found_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl From<Leftover> for Process {
    fn from(leftover: Leftover) -> Process {
        Process {
            pid: leftover.pid,
            command: leftover.command,
            found_by: leftover.found_by.to_owned(),
            call_id: leftover.call_id,
        }
    }
}

/// Claims this state directory's owner id for the calls of this process
/// and stops what a previous run with the same id left. Needs the
/// instance lock held: no other live runner has this id then.
pub async fn stop_previous_run(state_dir: &Path) -> Result<Option<Report>> {
    let id = owner_id(state_dir)?;
    owner::claim(&id).map_err(anyhow::Error::msg)?;
    let stopped = stop_left_by(&id).await;
    if stopped.is_empty() {
        return Ok(None);
    }
    let report = Report {
        at_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| since.as_secs())
            .unwrap_or_default(),
        processes: stopped.into_iter().map(Process::from).collect(),
    };
    tracing::warn!(
        count = report.processes.len(),
        processes = %describe(&report.processes),
        "stopped processes a previous run of this runner left running (it was killed or crashed)"
    );
    let path = state_dir.join(REPORT_FILE);
    // Serialising our own type cannot fail; a report that cannot be
    // written is in the log line above all the same.
    let text = serde_json::to_vec_pretty(&report).unwrap_or_default();
    if let Err(error) = crate::config::write_atomic(&path, &text, 0o644) {
        tracing::warn!(path = %path.display(), %error, "cannot keep the report for `runner doctor`");
    }
    Ok(Some(report))
}

/// The last report, if a start ever stopped something.
pub fn last_report(state_dir: &Path) -> Option<Report> {
    let text = std::fs::read(state_dir.join(REPORT_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// `sleep (pid 41, call c-1, cgroup), …`
pub fn describe(processes: &[Process]) -> String {
    processes
        .iter()
        .map(|process| {
            let call = process
                .call_id
                .as_deref()
                .map(|id| format!(", call {id}"))
                .unwrap_or_default();
            format!(
                "{} (pid {}{call}, by {})",
                process.command,
                process.pid,
                process.found_by.replace('_', " ")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The owner id in `STATE_DIR/runner-id`, made there if missing. One
/// that is there but not an id (edited, cut short) is replaced: what the
/// old one left can no longer be told apart, which the log says.
fn owner_id(state_dir: &Path) -> Result<String> {
    let path: PathBuf = state_dir.join(ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if owner::valid(text.trim()) => return Ok(text.trim().to_owned()),
        Ok(_) => tracing::warn!(path = %path.display(), "not a runner id; making a new one"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("reading {}", path.display()));
        }
    }
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| anyhow::anyhow!("no randomness: {error}"))?;
    let id = hex::encode(bytes);
    crate::config::write_atomic(&path, id.as_bytes(), 0o644)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = owner_id(dir.path()).expect("made");
        assert!(owner::valid(&first), "{first}");
        assert_eq!(owner_id(dir.path()).expect("kept"), first);
        std::fs::write(dir.path().join(ID_FILE), "../../etc").expect("write");
        let replaced = owner_id(dir.path()).expect("replaced");
        assert!(owner::valid(&replaced) && replaced != first);
    }

    #[test]
    fn reports_name_each_process_and_its_call() {
        let processes = [
            Process {
                pid: 41,
                command: "sleep".into(),
                found_by: "cgroup".into(),
                call_id: Some("c-1".into()),
            },
            Process {
                pid: 42,
                command: "sh".into(),
                found_by: "call_marker".into(),
                call_id: None,
            },
        ];
        assert_eq!(
            describe(&processes),
            "sleep (pid 41, call c-1, by cgroup), sh (pid 42, by call marker)"
        );
    }
}
