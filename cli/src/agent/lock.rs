//! One `runner run` per state directory (and so, by default, per machine).
//!
//! An OS file lock (released by the kernel when the process dies, so a
//! crash never leaves a stale lock) on `STATE_DIR/runner.lock`, which also
//! holds the owner's PID so the refusal can name it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::exit::{self, ExitError};

/// Held for the life of the process.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
    pub path: PathBuf,
}

pub fn acquire(state_dir: &Path) -> Result<InstanceLock> {
    fs_err::create_dir_all(state_dir)?;
    let path = state_dir.join("runner.lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let who = if holder.is_empty() {
                "another process".to_owned()
            } else {
                format!("PID {holder}")
            };
            return Err(ExitError::new(
                exit::FAILURE,
                format!(
                    "another runner is already running here ({who} holds {})",
                    path.display()
                ),
            )
            .with_hint("stop it first, or give this one its own --state-dir (one per environment)")
            .into());
        }
        Err(std::fs::TryLockError::Error(error)) => {
            return Err(error).with_context(|| format!("locking {}", path.display()))
        }
    }
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    write!(file, "{}", std::process::id())?;
    file.flush()?;
    Ok(InstanceLock { _file: file, path })
}

/// The PID of the runner holding the lock in `state_dir`, if one does.
pub fn holder(state_dir: &Path) -> Option<String> {
    let path = state_dir.join("runner.lock");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .ok()?;
    match file.try_lock() {
        // We got it: nobody holds it (ours is released when `file` drops).
        Ok(()) => None,
        Err(_) => std::fs::read_to_string(&path)
            .ok()
            .map(|pid| pid.trim().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_pid() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = acquire(dir.path()).expect("first lock");
        let error = acquire(dir.path()).expect_err("second must fail");
        assert!(
            format!("{error:#}").contains(&format!("PID {}", std::process::id())),
            "{error:#}"
        );
        assert_eq!(holder(dir.path()), Some(std::process::id().to_string()));
        drop(first);
        assert_eq!(holder(dir.path()), None);
        acquire(dir.path()).expect("free again after drop");
    }
}
