//! Reading and writing below a path that was checked, without following
//! a symbolic link put in its way since the check.
//!
//! The file tools check a path first ([`crate::gate::Boundary`]
//! resolves every symlink and checks where it leads), then use it. A
//! process running beside the call (a `shell` call, a `git checkout` of a
//! repository holding links) could swap a directory of that path for a
//! link to somewhere else in between; an open by path name would follow
//! it. So the checked path, which has no symlink in it, is opened one
//! component at a time from `/`, each relative to the directory opened
//! before and with `O_NOFOLLOW`, and the file is opened or created
//! relative to the last one. A link that appeared after the check is an
//! error, not a detour.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

/// Mode of the directories created on the way (before the umask), as
/// `mkdir -p` and `std::fs::create_dir_all` make them.
const NEW_DIR_MODE: u32 = 0o777;

/// An open directory that files are created in by name.
#[derive(Debug)]
pub struct Dir(OwnedFd);

/// How each directory on the way is opened. `O_PATH` on Linux: it needs
/// only search permission, as a walk by path name does (a parent directory
/// of mode 0711 must not stop a write that `open` by name would allow).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn dir_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
}
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
}

impl Dir {
    /// Opens the absolute directory `path` from `/` without following a
    /// symlink at any component, creating the missing ones when `create`.
    pub fn open(path: &Path, create: bool) -> std::io::Result<Dir> {
        let mut components = path.components();
        if components.next() != Some(Component::RootDir) {
            return Err(invalid(path, "is not an absolute path"));
        }
        let mut dir = Dir(nix::fcntl::open("/", dir_flags(), Mode::empty())?);
        for component in components {
            let Component::Normal(name) = component else {
                return Err(invalid(path, "is not a resolved path"));
            };
            dir = dir.child(name, create)?;
        }
        Ok(dir)
    }

    fn child(&self, name: &OsStr, create: bool) -> std::io::Result<Dir> {
        let flags = dir_flags() | OFlag::O_NOFOLLOW;
        match nix::fcntl::openat(&self.0, name, flags, Mode::empty()) {
            Ok(fd) => Ok(Dir(fd)),
            Err(Errno::ENOENT) if create => {
                match nix::sys::stat::mkdirat(&self.0, name, Mode::from_bits_truncate(NEW_DIR_MODE))
                {
                    // Made by someone else meanwhile: opened below like any.
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(errno) => return Err(errno.into()),
                }
                nix::fcntl::openat(&self.0, name, flags, Mode::empty())
                    .map(Dir)
                    .map_err(|errno| self.component_error(name, errno))
            }
            Err(errno) => Err(self.component_error(name, errno)),
        }
    }

    /// Says so when `name` failed to open because it is a symlink (`ELOOP`
    /// for a file, `ENOTDIR` for a directory opened with `O_DIRECTORY`).
    fn component_error(&self, name: &OsStr, errno: Errno) -> std::io::Error {
        let is_link = matches!(errno, Errno::ELOOP | Errno::ENOTDIR)
            && nix::sys::stat::fstatat(&self.0, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| stat.st_mode & nix::libc::S_IFMT == nix::libc::S_IFLNK);
        if is_link {
            return std::io::Error::other(format!(
                "{name:?} is a symbolic link that appeared after the path was checked; not followed"
            ));
        }
        errno.into()
    }

    /// Opens `name` in this directory with `flags` (plus `O_NOFOLLOW`):
    /// a symlink there is refused, not followed.
    pub fn open_file(&self, name: &OsStr, flags: OFlag, mode: u32) -> std::io::Result<File> {
        let flags = flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        nix::fcntl::openat(&self.0, name, flags, Mode::from_bits_truncate(mode))
            .map(File::from)
            .map_err(|errno| self.component_error(name, errno))
    }

    /// Permission bits of `name` if it exists (a symlink's own, unfollowed).
    pub fn mode_of(&self, name: &OsStr) -> Option<u32> {
        nix::sys::stat::fstatat(&self.0, name, AtFlags::AT_SYMLINK_NOFOLLOW)
            .ok()
            .map(|stat| stat.st_mode & 0o7777)
    }

    /// Creates a new file under a name no other write uses (mode 0600
    /// until told otherwise); returns it with its name. The name is short
    /// and fixed in form: one built from the target's would pass the
    /// 255-byte limit of a name when the target's is near it.
    pub fn create_temp(&self) -> std::io::Result<(File, String)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let name = format!(
                ".runner-write-{}-{}.tmp",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
            match self.open_file(OsStr::new(&name), flags, 0o600) {
                Ok(file) => return Ok((file, name)),
                // Left by a runner that died mid-write with the same pid.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Renames `from` to `to` within this directory (replacing `to`).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
        Ok(nix::fcntl::renameat(&self.0, from, &self.0, to)?)
    }

    /// Removes the file `name` (best effort: cleanup after a failure).
    pub fn remove(&self, name: &OsStr) {
        let _ = nix::unistd::unlinkat(&self.0, name, nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
}

/// Opens the file at `path` (absolute, checked, symlink-free) for reading
/// without following a symlink that appeared on the way since the check.
pub fn open_for_reading(path: &Path) -> std::io::Result<File> {
    Reader::default().open(path)
}

/// Opens many checked files for reading, as [`open_for_reading`] does,
/// keeping the directory of the last one open: a walk visits a
/// directory's files together, and the open directory still is the one
/// that was walked, whatever its path names by now.
#[derive(Debug, Default)]
pub struct Reader {
    last: Option<(std::path::PathBuf, Dir)>,
}

impl Reader {
    pub fn open(&mut self, path: &Path) -> std::io::Result<File> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(invalid(path, "names no file"));
        };
        let dir = match self.last.take() {
            Some((last, dir)) if last == parent => dir,
            _ => Dir::open(parent, false)?,
        };
        let file = dir.open_file(name, OFlag::O_RDONLY, 0);
        self.last = Some((parent.to_path_buf(), dir));
        file
    }
}

fn invalid(path: &Path, why: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{} {why}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// What the module is for: a directory of a checked path replaced by
    /// a link to elsewhere is not followed, and nothing lands elsewhere.
    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_not_followed() {
        let base = tempfile::tempdir().expect("tempdir");
        let base = base.path().canonicalize().expect("canonical");
        let workspace = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(workspace.join("sub")).expect("mkdir");
        std::fs::create_dir(&outside).expect("mkdir");
        // The path was checked while `sub` was a directory; now it is a link.
        std::fs::remove_dir(workspace.join("sub")).expect("rmdir");
        std::os::unix::fs::symlink(&outside, workspace.join("sub")).expect("symlink");

        let error = Dir::open(&workspace.join("sub"), true).expect_err("the link is refused");
        assert!(error.to_string().contains("symbolic link"), "{error}");
        let error = Dir::open(&workspace.join("sub/deeper"), true).expect_err("also below it");
        assert!(error.to_string().contains("symbolic link"), "{error}");
        let dir = Dir::open(&workspace, false).expect("the workspace itself");
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT;
        assert!(dir.open_file(OsStr::new("sub"), flags, 0o644).is_err());
        assert_eq!(
            std::fs::read_dir(&outside).expect("outside").count(),
            0,
            "nothing was created through the link"
        );
    }

    #[test]
    fn missing_directories_are_made_and_files_created_in_them() {
        let base = tempfile::tempdir().expect("tempdir");
        let base = base.path().canonicalize().expect("canonical");
        let dir = Dir::open(&base.join("a/b/c"), true).expect("made on the way");
        let (mut file, temp) = dir.create_temp().expect("temp");
        file.write_all(b"hello").expect("write");
        dir.rename(OsStr::new(&temp), OsStr::new("out.txt"))
            .expect("rename");
        assert_eq!(
            std::fs::read_to_string(base.join("a/b/c/out.txt")).expect("read"),
            "hello"
        );
        assert_eq!(dir.mode_of(OsStr::new("out.txt")), Some(0o600));
        assert_eq!(dir.mode_of(OsStr::new("missing")), None);
        assert!(
            Dir::open(&base.join("x/y"), false).is_err(),
            "nothing is made unless asked"
        );
        assert!(!base.join("x").exists());
        assert!(Dir::open(Path::new("relative/path"), true).is_err());
    }

    /// Reading takes the same walk: a directory swapped for a link to a
    /// secret elsewhere is refused, and the file itself may not be a link.
    #[test]
    fn reading_does_not_follow_a_link_put_in_the_way() {
        let base = tempfile::tempdir().expect("tempdir");
        let base = base.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(base.join("ws/docs")).expect("mkdir");
        std::fs::create_dir(base.join("secret")).expect("mkdir");
        std::fs::write(base.join("ws/docs/a.txt"), "mine").expect("write");
        std::fs::write(base.join("secret/a.txt"), "not yours").expect("write");
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut open_for_reading(&base.join("ws/docs/a.txt")).expect("a plain read"),
            &mut text,
        )
        .expect("read");
        assert_eq!(text, "mine");
        // Checked as ws/docs/a.txt; then docs becomes a link to secret.
        std::fs::remove_file(base.join("ws/docs/a.txt")).expect("rm");
        std::fs::remove_dir(base.join("ws/docs")).expect("rmdir");
        std::os::unix::fs::symlink(base.join("secret"), base.join("ws/docs")).expect("symlink");
        let error = open_for_reading(&base.join("ws/docs/a.txt")).expect_err("refused");
        assert!(error.to_string().contains("symbolic link"), "{error}");
        std::os::unix::fs::symlink(base.join("secret/a.txt"), base.join("ws/b.txt"))
            .expect("symlink");
        assert!(open_for_reading(&base.join("ws/b.txt")).is_err());
    }

    /// The reader keeps the last directory open: a directory swapped for
    /// a link after its first file was opened is still the walked one.
    #[test]
    fn the_reader_keeps_to_the_directory_it_walked() {
        let base = tempfile::tempdir().expect("tempdir");
        let base = base.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(base.join("ws/docs")).expect("mkdir");
        std::fs::create_dir(base.join("secret")).expect("mkdir");
        for name in ["a.txt", "b.txt"] {
            std::fs::write(base.join("ws/docs").join(name), "mine").expect("write");
            std::fs::write(base.join("secret").join(name), "not yours").expect("write");
        }
        let mut reader = Reader::default();
        reader.open(&base.join("ws/docs/a.txt")).expect("first");
        std::fs::rename(base.join("ws/docs"), base.join("ws/moved")).expect("mv");
        std::os::unix::fs::symlink(base.join("secret"), base.join("ws/docs")).expect("symlink");
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut reader.open(&base.join("ws/docs/b.txt")).expect("second"),
            &mut text,
        )
        .expect("read");
        assert_eq!(
            text, "mine",
            "read from the walked directory, not through the link"
        );
        let error = Reader::default()
            .open(&base.join("ws/docs/b.txt"))
            .expect_err("a new walk refuses the link");
        assert!(error.to_string().contains("symbolic link"), "{error}");
    }

    /// A symlink as the file itself is refused too (the final `O_NOFOLLOW`).
    #[test]
    fn a_link_in_place_of_the_file_is_refused() {
        let base = tempfile::tempdir().expect("tempdir");
        let base = base.path().canonicalize().expect("canonical");
        std::fs::write(base.join("target"), "keep").expect("write");
        std::os::unix::fs::symlink(base.join("target"), base.join("link")).expect("symlink");
        let dir = Dir::open(&base, false).expect("open");
        let flags = OFlag::O_WRONLY | OFlag::O_TRUNC;
        assert!(dir.open_file(OsStr::new("link"), flags, 0o644).is_err());
        assert_eq!(
            std::fs::read_to_string(base.join("target")).expect("read"),
            "keep"
        );
    }
}
