//! Where a call's output is kept once it outgrows what a result carries
//! inline: a file per stream under the workspace's [`OUTPUT_DIR`], removed
//! after [`OUTPUT_RETENTION`], and the oldest first once they hold more
//! than the cap (`runner run --kept-output-max-mb`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use super::throttle::{Throttle, HOUSEKEEPING_INTERVAL};

/// Output kept inline per stream; past it the result keeps head and tail
/// and the whole output goes to a file in the workspace.
pub const INLINE_LIMIT: usize = 1024 * 1024;
/// Directory (under the workspace) of the files that keep full output.
pub const OUTPUT_DIR: &str = ".runner/output";
/// Kept output files older than this are removed when a new one is made.
pub const OUTPUT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Default cap on the kept output files of a workspace: room for a few
/// hundred large outputs while a small VM's disk stays healthy.
pub const DEFAULT_OUTPUT_CAP_MB: u64 = 512;

/// The cap, set once by `runner run` (one runner process serves one
/// workspace); unset: [`DEFAULT_OUTPUT_CAP_MB`].
static OUTPUT_CAP: OnceLock<u64> = OnceLock::new();
/// Bytes the kept files held after the last enforcement, for `/metrics`.
static KEPT_BYTES: AtomicU64 = AtomicU64::new(0);
/// Files removed to stay under the cap, for `/metrics`.
static EVICTED_FILES: AtomicU64 = AtomicU64::new(0);

/// Sets the cap on kept output, in bytes (the first call wins).
pub fn set_output_cap(bytes: u64) {
    let _ = OUTPUT_CAP.set(bytes);
}

/// The cap on kept output, in bytes.
pub fn output_cap() -> u64 {
    *OUTPUT_CAP.get_or_init(|| DEFAULT_OUTPUT_CAP_MB * 1024 * 1024)
}

/// What the kept output holds, as last measured, and what the cap evicted
/// since the runner started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptUsage {
    pub bytes: u64,
    pub evicted_files: u64,
}

pub fn usage() -> KeptUsage {
    KeptUsage {
        bytes: KEPT_BYTES.load(Ordering::Relaxed),
        evicted_files: EVICTED_FILES.load(Ordering::Relaxed),
    }
}

/// The kept output files of `workspace`, oldest first, with their sizes.
pub fn kept_files(workspace: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let Ok(entries) = std::fs::read_dir(workspace.join(OUTPUT_DIR)) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok().filter(std::fs::Metadata::is_file)?;
            Some((entry.path(), meta.len(), meta.modified().ok()?))
        })
        .collect();
    files.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
    files
}

/// Removes the oldest kept files until they hold at most `cap` bytes,
/// never one of `keep` (the call's own, just written). Returns the files
/// removed.
pub fn enforce_cap(workspace: &Path, cap: u64, keep: &[&Path]) -> Vec<PathBuf> {
    let files = kept_files(workspace);
    let mut total: u64 = files.iter().map(|(_, size, _)| size).sum();
    let mut removed = Vec::new();
    for (path, size, _) in files {
        if total <= cap {
            break;
        }
        if keep.contains(&path.as_path()) {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(size);
            removed.push(path);
        }
    }
    KEPT_BYTES.store(total, Ordering::Relaxed);
    EVICTED_FILES.fetch_add(removed.len() as u64, Ordering::Relaxed);
    removed
}

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
    for (path, _, modified) in kept_files(workspace) {
        if modified.elapsed().is_ok_and(|age| age > OUTPUT_RETENTION) {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: usize, age_s: u64) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![b'x'; bytes]).expect("write");
        let when = SystemTime::now() - Duration::from_secs(age_s);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_modified(when))
            .expect("set mtime");
        path
    }

    #[test]
    fn the_oldest_go_first_until_under_the_cap_and_the_new_ones_stay() {
        let workspace = tempfile::tempdir().expect("tempdir");
        let dir = workspace.path().join(OUTPUT_DIR);
        std::fs::create_dir_all(&dir).expect("dir");
        let oldest = write(&dir, "a.stdout", 400, 300);
        let older = write(&dir, "b.stdout", 400, 200);
        let old = write(&dir, "c.stdout", 400, 100);
        // The call's own file, even if it is older by the clock.
        let own = write(&dir, "d.stdout", 400, 400);
        let removed = enforce_cap(workspace.path(), 900, &[own.as_path()]);
        assert_eq!(removed, [oldest.clone(), older.clone()]);
        assert!(!oldest.exists() && !older.exists());
        assert!(old.exists() && own.exists());
        assert_eq!(usage().bytes, 800);
        assert!(enforce_cap(workspace.path(), 900, &[]).is_empty());
    }
}
