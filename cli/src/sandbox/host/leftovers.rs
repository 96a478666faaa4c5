//! What a previous host left (killed with `kill -9`, crashed, rebooted):
//! bubblewrap dies with its parent, which ends each sandbox's PID and
//! mount namespaces and so its processes and overlay mounts; what remains
//! is cgroups (and any process that got out of the namespace but not out
//! of the cgroup) and directories. A host removes all of them at start.

use super::super::isolation::limits::Tree;
use super::super::layout::{self, Layout};

/// Kills and removes every sandbox cgroup and directory of this state
/// directory's host.
pub async fn remove(layout: &Layout, tree: &Tree) {
    let mut ids = tree.existing();
    if let Ok(entries) = std::fs::read_dir(layout.sandboxes()) {
        ids.extend(
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().into_string().ok())
                .filter(|name| layout::valid_id(name)),
        );
    }
    ids.sort();
    ids.dedup();
    for id in &ids {
        tree.group(id).destroy().await;
    }
    if let Ok(entries) = std::fs::read_dir(layout.sandboxes()) {
        for entry in entries.flatten() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    if !ids.is_empty() {
        tracing::info!(
            sandboxes = ids.len(),
            "removed what a previous sandbox host left"
        );
    }
}
