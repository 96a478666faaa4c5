//! Where a call's output is kept once it outgrows what a result carries
//! inline: a file per stream under the workspace's [`OUTPUT_DIR`], removed
//! after [`OUTPUT_RETENTION`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::throttle::{Throttle, HOUSEKEEPING_INTERVAL};

/// Output kept inline per stream; past it the result keeps head and tail
/// and the whole output goes to a file in the workspace.
pub const INLINE_LIMIT: usize = 1024 * 1024;
/// Directory (under the workspace) of the files that keep full output.
pub const OUTPUT_DIR: &str = ".runner/output";
/// Kept output files older than this are removed when a new one is made.
pub const OUTPUT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A path inside the workspace as a relative path (what `file_read` takes),
/// anything else as it is.
pub fn display_path(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace)
        .map(|relative| relative.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Where a call's full output goes if it outgrows the inline limit: the
/// call id made safe for a file name, and the stream's `suffix`.
pub fn output_file(workspace: &Path, call_id: &str, suffix: &str) -> PathBuf {
    let safe: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    workspace.join(OUTPUT_DIR).join(format!("{safe}.{suffix}"))
}

/// Removes kept output files older than [`OUTPUT_RETENTION`]. Best effort.
pub fn prune_output_dir(workspace: &Path) {
    static LAST: Throttle = Throttle::new();
    if !LAST.due(HOUSEKEEPING_INTERVAL) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(workspace.join(OUTPUT_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > OUTPUT_RETENTION);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
