//! `runner sandbox-enter --plan FILE` (hidden): the step between the host
//! and bubblewrap. It joins the sandbox's cgroups, makes a private mount
//! namespace, mounts the sandbox's overlay root there, then becomes
//! `bwrap`, which adds the user (uid 0 mapped to the host's uid 0, as
//! Docker's default), PID, IPC, UTS and (unless `allow_all`) network
//! namespaces, and runs `runner sandbox-init` as the sandbox's first
//! process. The overlay mounts exist only in that namespace, so they
//! vanish with it, whatever kills the sandbox.
//!
//! Synchronous and before any runtime starts: `unshare(CLONE_NEWNS)`
//! refuses a process with more than one thread.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use serde::{Deserialize, Serialize};

use crate::sandbox::layout::{IO_MOUNT, RUNNER_IN_SANDBOX};

/// The `PATH` of every process in a sandbox.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One overlay mount.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Overlay {
    /// Read-only layers, top first.
    pub lower: Vec<PathBuf>,
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// What `sandbox-enter` does, written by the host (no secret in it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    /// The root file system, mounted at `merged`.
    pub root: Overlay,
    /// `/usr` on top of it (the host-derived base).
    pub usr: Option<Overlay>,
    pub merged: PathBuf,
    /// Bind-mounted at [`IO_MOUNT`].
    pub io: PathBuf,
    /// This binary, bind-mounted read-only at [`RUNNER_IN_SANDBOX`].
    pub exe: PathBuf,
    /// `allow_all`: the host's network namespace.
    pub share_net: bool,
    /// `cgroup.procs` files to join before anything else.
    pub cgroup_procs: Vec<PathBuf>,
    pub hostname: String,
}

/// Runs the plan in `path`; returns only on failure (else it is bwrap).
pub fn enter(path: &Path) -> anyhow::Error {
    match try_enter(path) {
        Ok(never) => match never {},
        Err(error) => error,
    }
}

fn try_enter(path: &Path) -> Result<std::convert::Infallible> {
    let text = fs_err::read_to_string(path)?;
    let plan: Plan = serde_json::from_str(&text).context("reading the sandbox plan")?;
    let pid = std::process::id().to_string();
    for procs in &plan.cgroup_procs {
        fs_err::write(procs, &pid).context("joining the sandbox's cgroup")?;
    }
    unshare(CloneFlags::CLONE_NEWNS).context("unshare(CLONE_NEWNS)")?;
    // Nothing mounted from here on propagates back to the host.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .context("making the mount namespace private")?;
    mount_overlay(&plan.root, &plan.merged)?;
    if let Some(usr) = &plan.usr {
        mount_overlay(usr, &plan.merged.join("usr"))?;
    }
    let error = std::process::Command::new("bwrap")
        .args(bwrap_args(&plan))
        .exec();
    Err(anyhow::Error::from(error).context("starting bwrap"))
}

fn mount_overlay(overlay: &Overlay, at: &Path) -> Result<()> {
    let mut lower = Vec::new();
    for dir in &overlay.lower {
        lower.push(option_path(dir)?);
    }
    let options = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.join(":"),
        option_path(&overlay.upper)?,
        option_path(&overlay.work)?
    );
    mount(
        Some("overlay"),
        at,
        Some("overlay"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .with_context(|| format!("mounting the sandbox's overlay at {}", at.display()))
}

/// A path as overlay's options take it: `,` and `:` separate options and
/// layers, so a path holding one is refused rather than misread.
fn option_path(path: &Path) -> Result<String> {
    let Some(text) = path.to_str() else {
        bail!("{} is not UTF-8", path.display());
    };
    if text.contains([',', ':', '\\']) {
        bail!("{text}: a sandbox path cannot hold ',', ':' or '\\' (overlay options)");
    }
    Ok(text.to_owned())
}

/// bubblewrap's arguments: every namespace, the overlay as `/`, the shared
/// directory and the runner binary, an empty environment but `PATH` and
/// `HOME`, and `runner sandbox-init` as the first process.
pub fn bwrap_args(plan: &Plan) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut flag = |items: &[&OsStr]| args.extend(items.iter().map(|item| item.to_os_string()));
    let os = OsStr::new;
    flag(&[os("--bind"), plan.merged.as_os_str(), os("/")]);
    flag(&[os("--proc"), os("/proc"), os("--dev"), os("/dev")]);
    flag(&[os("--unshare-all")]);
    if plan.share_net {
        flag(&[os("--share-net")]);
    }
    flag(&[os("--uid"), os("0"), os("--gid"), os("0")]);
    flag(&[os("--hostname"), os(&plan.hostname)]);
    // The host is bwrap's parent: its death ends the sandbox.
    flag(&[os("--die-with-parent")]);
    // No terminal of the host's to inject keystrokes into.
    flag(&[os("--new-session")]);
    flag(&[os("--ro-bind"), plan.exe.as_os_str(), os(RUNNER_IN_SANDBOX)]);
    flag(&[os("--bind"), plan.io.as_os_str(), os(IO_MOUNT)]);
    flag(&[os("--clearenv")]);
    flag(&[os("--setenv"), os("PATH"), os(SANDBOX_PATH)]);
    flag(&[os("--setenv"), os("HOME"), os("/root")]);
    flag(&[os("--chdir"), os(runner_proto::sandbox::WORKSPACE)]);
    flag(&[os("--"), os(RUNNER_IN_SANDBOX), os("sandbox-init")]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(share_net: bool) -> Plan {
        Plan {
            root: Overlay {
                lower: vec![PathBuf::from("/b")],
                upper: PathBuf::from("/s/upper"),
                work: PathBuf::from("/s/work"),
            },
            usr: None,
            merged: PathBuf::from("/s/merged"),
            io: PathBuf::from("/s/io"),
            exe: PathBuf::from("/bin/runner"),
            share_net,
            cgroup_procs: vec![],
            hostname: "sandbox".to_owned(),
        }
    }

    #[test]
    fn bwrap_gets_every_namespace_and_the_network_only_for_allow_all() {
        let text = |plan: &Plan| {
            bwrap_args(plan)
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let closed = text(&plan(false));
        assert!(
            closed.starts_with("--bind /s/merged / --proc /proc --dev /dev --unshare-all --uid 0"),
            "{closed}"
        );
        assert!(closed.contains("--die-with-parent"));
        assert!(
            closed.ends_with("-- /usr/local/bin/runner sandbox-init"),
            "{closed}"
        );
        assert!(!closed.contains("--share-net"));
        assert!(text(&plan(true)).contains("--unshare-all --share-net"));
    }

    #[test]
    fn overlay_options_refuse_separators_in_paths() {
        assert!(option_path(Path::new("/a/b")).is_ok());
        assert!(option_path(Path::new("/a,upperdir=/x")).is_err());
        assert!(option_path(Path::new("/a:/b")).is_err());
    }
}
