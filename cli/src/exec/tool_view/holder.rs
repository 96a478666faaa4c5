//! `runner tool-view` (hidden): the helper that makes the namespace of
//! [`super`] and stays in it. It reads a [`Plan`] as one JSON line on
//! stdin, answers [`READY`] (or [`FAILED`] and why) on stdout, then
//! waits for stdin to close: the runner holds the other end, so the
//! helper ends with the runner, however the runner ends.
//!
//! Synchronous and before any runtime starts: `unshare(CLONE_NEWUSER)`
//! refuses a process with more than one thread.

use std::io::{BufRead, Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::unistd::{getegid, geteuid};

use super::Plan;

/// The helper's answer once the namespace is ready.
pub const READY: &str = "ready";
/// The start of its answer when it is not, followed by why.
pub const FAILED: &str = "failed: ";

/// Flags every cover keeps: nothing on it runs, no device opens.
const COVER_FLAGS: MsFlags = MsFlags::MS_NOSUID
    .union(MsFlags::MS_NODEV)
    .union(MsFlags::MS_NOEXEC);

/// Runs the helper; the exit code is 0 once it made the namespace and
/// the runner let go of it.
pub fn main() -> std::process::ExitCode {
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    let mut line = String::new();
    let made = match stdin.read_line(&mut line) {
        Ok(_) => serde_json::from_str::<Plan>(&line)
            .map_err(|error| format!("the plan is not valid: {error}"))
            .and_then(|plan| make(&plan)),
        Err(error) => Err(format!("cannot read the plan: {error}")),
    };
    let answer = match &made {
        Ok(()) => format!("{READY}\n"),
        Err(why) => format!("{FAILED}{}\n", why.replace('\n', " ")),
    };
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(answer.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
        || made.is_err()
    {
        return std::process::ExitCode::FAILURE;
    }
    drop(stdout);
    // Held until the runner closes its end (or ends).
    let _ = std::io::copy(&mut stdin.by_ref(), &mut std::io::sink());
    std::process::ExitCode::SUCCESS
}

/// Makes the namespace: a mount namespace of its own (with a user
/// namespace unless this process may mount where it is), the covers,
/// and the kept directories bound back.
fn make(plan: &Plan) -> Result<(), String> {
    enter_new_namespace()?;
    // Mounts on the host still reach this namespace (a disk mounted
    // later appears to tools too); nothing mounted here goes back.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(|error| format!("cannot make the mounts private: {error}"))?;
    // Opened in this namespace, before anything covers them: a bind
    // mount's source must be one of this namespace's mounts.
    let mut binds = Vec::new();
    for keep in plan.binds() {
        let dir = std::fs::File::open(keep)
            .map_err(|error| format!("cannot open {}: {error}", keep.display()))?;
        binds.push((keep, dir));
    }
    for cover in plan.mounts() {
        cover_path(cover, !plan.keeps_under(cover))?;
    }
    for (keep, dir) in &binds {
        // In the cover's tmpfs, still writable: the path down to `keep`.
        std::fs::create_dir_all(keep)
            .map_err(|error| format!("cannot make {} in its cover: {error}", keep.display()))?;
        let source = format!("/proc/self/fd/{}", dir.as_raw_fd());
        mount(
            Some(source.as_str()),
            *keep,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|error| format!("cannot bind {} back: {error}", keep.display()))?;
    }
    for cover in plan.mounts() {
        if plan.keeps_under(cover) {
            read_only(cover)?;
        }
    }
    drop(binds);
    std::env::set_current_dir("/").map_err(|error| error.to_string())
}

/// A mount namespace of this process's own: as root, that alone (tools
/// stay root, with all that root may do); as any other user, in a new
/// user namespace mapping its uid and gid to themselves (all an
/// unprivileged process may map). Root without the right to mount (a
/// container without `CAP_SYS_ADMIN`, a sandbox) gets no user namespace
/// instead: one that maps root alone would break what root's tools do
/// there (`apt` changes to its own user).
fn enter_new_namespace() -> Result<(), String> {
    if geteuid().is_root() {
        return unshare(CloneFlags::CLONE_NEWNS).map_err(|error| {
            format!("cannot make a mount namespace as root: {error} (no CAP_SYS_ADMIN here, as in a container, or a seccomp profile refuses unshare)")
        });
    }
    let (uid, gid) = (geteuid(), getegid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|error| {
        format!("cannot make a user and mount namespace: {error} (user namespaces are off for this user, or a seccomp profile refuses them)")
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|error| format!("cannot write {file}: {error}"))
    };
    // Required before an unprivileged process may map its gid.
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// Covers a directory with an empty tmpfs, read-only at once unless
/// `seal` is false (a kept directory is bound back in it first), and
/// anything else with `/dev/null` (reads find nothing, writes are lost, a
/// socket is refused).
fn cover_path(path: &Path, seal: bool) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|error| format!("cannot cover {}: {error}", path.display()))?;
    let covered = if meta.is_dir() {
        mount(
            Some("runner-hidden"),
            path,
            Some("tmpfs"),
            COVER_FLAGS,
            Some("mode=0755,size=64k,nr_inodes=1024"),
        )
    } else {
        mount(
            Some("/dev/null"),
            path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
    };
    covered.map_err(|error| format!("cannot cover {}: {error}", path.display()))?;
    if seal && meta.is_dir() {
        read_only(path)?;
    }
    Ok(())
}

fn read_only(path: &Path) -> Result<(), String> {
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | COVER_FLAGS,
        None::<&str>,
    )
    .map_err(|error| {
        format!(
            "cannot make the cover of {} read-only: {error}",
            path.display()
        )
    })
}
