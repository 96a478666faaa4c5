//! A sandbox's root file system: an overlay whose lower layer is either an
//! operator's full root (`--base-image DIR`) or the *host-derived* base,
//! built once under the host's state directory: a filtered copy of `/etc`
//! (world-readable files only, no shadow files, SSH host keys, TLS private
//! keys or runner configuration), copies of `/var/lib/dpkg` and
//! `/var/lib/apt`, the host's `bin`/`lib`/`sbin` symlinks, and empty
//! `/root`, `/home`, `/tmp`, `/run` and `/workspace`; the host's `/usr` is
//! a second overlay's lower layer. Never the host's whole root: it holds
//! `/root`, `/work`, databases and `/etc/shadow`.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Written last into a finished base: a base without it is rebuilt.
const COMPLETE: &str = ".runner-base-complete";

/// `/etc` entries never copied, whatever their mode (relative paths).
const ETC_NEVER: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "ssl/private",
    "runner",
    "sudoers",
    "sudoers.d",
    "security/opasswd",
];

/// Directories copied from the host into the base, filtered the same way.
const COPIED: &[&str] = &["etc", "var/lib/dpkg", "var/lib/apt"];

/// Top-level names that are symlinks into `/usr` on a merged-/usr system.
const USR_LINKS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// Empty directories of the base, with their modes.
const EMPTY: &[(&str, u32)] = &[
    ("usr", 0o755),
    ("root", 0o700),
    ("home", 0o755),
    ("tmp", 0o1777),
    ("run", 0o755),
    ("proc", 0o555),
    ("dev", 0o755),
    ("sys", 0o555),
    ("opt", 0o755),
    ("srv", 0o755),
    ("mnt", 0o755),
    ("media", 0o755),
    ("var/tmp", 0o1777),
    ("var/cache", 0o755),
    ("var/log", 0o755),
    ("var/lib", 0o755),
    ("workspace", 0o755),
];

/// Where a sandbox's root comes from.
#[derive(Debug, Clone)]
pub enum Base {
    /// The host-derived base in this directory, with the host's `/usr`.
    HostDerived(PathBuf),
    /// A full root file system (made by mmdebstrap, debootstrap, …).
    Image(PathBuf),
}

impl Base {
    /// Builds the host-derived base when it is not there yet (a half-built
    /// one, from a host killed while building it, is built again), or when
    /// the host's packages changed since (its dpkg database must describe
    /// the `/usr` sandboxes see). Only at the host's start: no sandbox uses
    /// the base then.
    pub fn prepare(&self) -> io::Result<()> {
        let Base::HostDerived(dir) = self else {
            return Ok(());
        };
        if is_current(dir) {
            return Ok(());
        }
        remove_half_built(dir);
        let building = dir.with_extension(format!("building-{}", std::process::id()));
        build_host_derived(&building)?;
        let _ = fs::remove_dir_all(dir);
        fs::rename(&building, dir)?;
        tracing::info!(base = %dir.display(), "built the host-derived sandbox base");
        Ok(())
    }
}

/// Removes what a host killed while building the base left beside it.
fn remove_half_built(dir: &Path) {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return;
    };
    let prefix = format!("{}.building-", name.to_string_lossy());
    for entry in fs::read_dir(parent).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether the base is complete and newer than the host's `/etc` and
/// package database.
fn is_current(dir: &Path) -> bool {
    let modified = |path: &Path| fs::metadata(path).and_then(|m| m.modified()).ok();
    let Some(built) = modified(&dir.join(COMPLETE)) else {
        return false;
    };
    ["/etc", "/var/lib/dpkg/status", "/var/lib/apt/lists"]
        .iter()
        .filter_map(|path| modified(Path::new(path)))
        .all(|changed| changed <= built)
}

fn build_host_derived(into: &Path) -> io::Result<()> {
    fs::create_dir_all(into)?;
    fs::set_permissions(into, fs::Permissions::from_mode(0o755))?;
    for (name, mode) in EMPTY {
        let dir = into.join(name);
        fs::create_dir_all(&dir)?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(*mode))?;
    }
    for name in USR_LINKS {
        let host = Path::new("/").join(name);
        if let Ok(target) = fs::read_link(&host) {
            std::os::unix::fs::symlink(target, into.join(name))?;
        } else if host.is_dir() {
            // A split-/usr system: not offered (its /lib would need a layer
            // of its own); say so rather than start sandboxes that lack it.
            return Err(io::Error::other(format!(
                "{} is a directory, not a link into /usr: use --base-image DIR on this machine",
                host.display()
            )));
        }
    }
    for relative in COPIED {
        let from = Path::new("/").join(relative);
        if from.is_dir() {
            let never: &[&str] = if *relative == "etc" { ETC_NEVER } else { &[] };
            copy_filtered(&from, &into.join(relative), Path::new(""), never)?;
        }
    }
    fs::write(into.join(COMPLETE), b"")?;
    Ok(())
}

/// Copies `from` into `to`: world-readable files, world-searchable
/// directories, symlinks as they are; nothing named in `never`, nothing
/// else (devices, sockets).
fn copy_filtered(from: &Path, to: &Path, relative: &Path, never: &[&str]) -> io::Result<()> {
    let meta = fs::symlink_metadata(from)?;
    fs::create_dir_all(to)?;
    fs::set_permissions(to, fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let rel = relative.join(&name);
        if never.iter().any(|skip| Path::new(skip) == rel) {
            continue;
        }
        // SSH host keys are world-readable only in their public half.
        if rel.starts_with("ssh") && name.to_string_lossy().starts_with("ssh_host_") {
            continue;
        }
        let path = entry.path();
        let meta = fs::symlink_metadata(&path)?;
        let target = to.join(&name);
        let mode = meta.mode();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&path)?, &target)?;
        } else if meta.is_dir() {
            if mode & 0o005 == 0o005 {
                copy_filtered(&path, &target, &rel, never)?;
            }
        } else if meta.is_file() && mode & 0o004 != 0 {
            fs::copy(&path, &target)?;
            fs::set_permissions(&target, fs::Permissions::from_mode(mode & 0o7777))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filtered_copy_leaves_out_private_and_named_files() {
        let from = tempfile::tempdir().expect("test setup");
        let to = tempfile::tempdir().expect("test setup");
        let write = |name: &str, mode: u32| {
            let path = from.path().join(name);
            fs::create_dir_all(path.parent().expect("test setup")).expect("test setup");
            fs::write(&path, name).expect("test setup");
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("test setup");
        };
        write("passwd", 0o644);
        write("shadow", 0o644);
        write("secret", 0o600);
        write("ssh/ssh_host_ed25519_key.pub", 0o644);
        write("ssh/ssh_config", 0o644);
        write("ssl/private/key.pem", 0o644);
        let out = to.path().join("etc");
        copy_filtered(from.path(), &out, Path::new(""), ETC_NEVER).expect("test setup");
        assert!(out.join("passwd").exists());
        assert!(out.join("ssh/ssh_config").exists());
        for absent in [
            "shadow",
            "secret",
            "ssh/ssh_host_ed25519_key.pub",
            "ssl/private",
        ] {
            assert!(!out.join(absent).exists(), "{absent} was copied");
        }
    }
}
