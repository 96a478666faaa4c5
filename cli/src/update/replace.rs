//! Swapping the executable on disk without a moment where it is missing or
//! half-written.
//!
//! The new binary is staged in the executable's own directory (so the final
//! step is a `rename(2)` on one file system, atomic), fsynced and made
//! 0755 before anything else moves. The old binary is kept beside it as
//! `<name>.previous` through a hard link, so the running process, which
//! still has the old inode open, is not disturbed either way.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{arch, UpdateError};

/// `/usr/local/bin/runner` → `/usr/local/bin/runner.previous`.
pub fn previous_path(exe: &Path) -> PathBuf {
    let mut name = exe.file_name().unwrap_or_default().to_os_string();
    name.push(".previous");
    exe.with_file_name(name)
}

/// Where a download for `exe` is staged: hidden, per process, same directory.
pub fn staging_path(exe: &Path) -> PathBuf {
    let name = exe
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    exe.with_file_name(format!(".{name}.update-{}", std::process::id()))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> UpdateError + '_ {
    move |source| UpdateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The first bytes of `path`, enough for [`arch::check_header`].
pub fn read_header(path: &Path) -> Result<Vec<u8>, UpdateError> {
    let mut header = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .and_then(|file| file.take(4096).read_to_end(&mut header))
        .map_err(io_error(path))?;
    Ok(header)
}

#[cfg(unix)]
pub fn make_executable(path: &Path) -> Result<(), UpdateError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(io_error(path))
}

#[cfg(not(unix))]
pub fn make_executable(_path: &Path) -> Result<(), UpdateError> {
    Ok(())
}

/// Keeps `exe` as `<exe>.previous`, then renames `staged` over `exe`.
/// Returns the path of the kept previous binary.
pub fn install_staged(staged: &Path, exe: &Path) -> Result<PathBuf, UpdateError> {
    let previous = previous_path(exe);
    keep_previous(exe, &previous)?;
    std::fs::rename(staged, exe).map_err(io_error(exe))?;
    sync_dir(exe);
    Ok(previous)
}

/// Points `previous` at the current `exe` atomically: link (or copy) to a
/// temp name, then rename over any older `.previous`.
fn keep_previous(exe: &Path, previous: &Path) -> Result<(), UpdateError> {
    let mut temp_name = previous.file_name().unwrap_or_default().to_os_string();
    temp_name.push(format!(".tmp-{}", std::process::id()));
    let temp = previous.with_file_name(temp_name);
    let _ = std::fs::remove_file(&temp);
    if std::fs::hard_link(exe, &temp).is_err() {
        // Some file systems refuse hard links; a copy keeps the bytes all the same.
        std::fs::copy(exe, &temp).map_err(io_error(&temp))?;
    }
    std::fs::rename(&temp, previous).map_err(|source| {
        let _ = std::fs::remove_file(&temp);
        UpdateError::Io {
            path: previous.to_path_buf(),
            source,
        }
    })
}

/// Renames `<exe>.previous` over `exe`. Returns the restored path.
pub fn rollback(exe: &Path) -> Result<PathBuf, UpdateError> {
    let previous = previous_path(exe);
    match std::fs::symlink_metadata(&previous) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(UpdateError::NoPrevious { path: previous }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(UpdateError::NoPrevious { path: previous })
        }
        Err(source) => {
            return Err(UpdateError::Io {
                path: previous,
                source,
            })
        }
    }
    let header = read_header(&previous)?;
    arch::check_header(&header).map_err(|reason| UpdateError::WrongArch {
        asset: previous.display().to_string(),
        reason,
    })?;
    // It was executable when it was kept; make sure it still is, or the
    // restart after the rollback would fail.
    make_executable(&previous)?;
    std::fs::rename(&previous, exe).map_err(io_error(exe))?;
    sync_dir(exe);
    Ok(exe.to_path_buf())
}

/// Makes the rename durable. Best effort: some file systems refuse to
/// fsync a directory, and the rename itself has already happened.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_keeps_the_previous_binary_and_rollback_restores_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("runner");
        let own = std::fs::read(std::env::current_exe().expect("exe")).expect("read self");
        let mut old = own.clone();
        old.extend_from_slice(b"old");
        let mut new = own;
        new.extend_from_slice(b"new");
        std::fs::write(&exe, &old).expect("write old");
        let staged = staging_path(&exe);
        std::fs::write(&staged, &new).expect("write staged");

        let previous = install_staged(&staged, &exe).expect("install");
        assert_eq!(previous, dir.path().join("runner.previous"));
        assert_eq!(std::fs::read(&exe).expect("read"), new);
        assert_eq!(std::fs::read(&previous).expect("read"), old);
        assert!(!staged.exists());

        rollback(&exe).expect("rollback");
        assert_eq!(std::fs::read(&exe).expect("read"), old);
        assert!(!previous.exists());
        let error = rollback(&exe).expect_err("nothing left to roll back to");
        assert!(matches!(error, UpdateError::NoPrevious { .. }), "{error}");
    }

    #[test]
    fn rollback_refuses_a_previous_file_that_is_not_an_executable_for_this_machine() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("runner");
        std::fs::write(&exe, b"current").expect("write");
        std::fs::write(previous_path(&exe), b"#!/bin/sh\n").expect("write");
        assert!(rollback(&exe).is_err());
        assert_eq!(std::fs::read(&exe).expect("read"), b"current");
    }
}
