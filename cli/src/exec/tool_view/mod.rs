//! The file system a call's processes see: the runner's own, with the
//! runner's files covered (its config and state directories, the
//! service's environment file, the session bus when the keychain holds a
//! secret of the runner's) and the workspace left visible.
//!
//! A mount namespace is prepared once, when the runner starts, by a
//! helper process ([`holder`], `runner tool-view`): as root it
//! unshares only the mount namespace; as any other user it makes a user
//! namespace that maps the runner's own uid and gid to themselves, in
//! which it may mount. It covers
//! each directory with an empty read-only tmpfs and each file with
//! `/dev/null`, binds the workspace back where it lies under one, and
//! stays, so the namespace can be named by its `/proc` entry. Each call's
//! process enters it before it `exec`s: with `setns` in the process
//! [`super::spawn`] creates with `clone3`, or through `nsenter` on the
//! plain path. Entering costs two system calls; a namespace made per call
//! would copy every mount and free them at every exit.
//!
//! Where no namespace can be made (no user namespaces for this user, a
//! seccomp profile, a container without `CAP_SYS_ADMIN`), the setting
//! decides ([`HideRunnerFiles`]): `auto` runs tools without hiding the
//! files and says so once, `on` refuses to start. See docs/security.md for what it does not
//! stop.

pub mod holder;

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::program::find_on_path;

/// How long the helper may take to make the namespace.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether tools run with the runner's files hidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum HideRunnerFiles {
    /// Where this host allows a mount namespace (as root, or in a user
    /// namespace); elsewhere tools run without it, and the runner says so.
    #[default]
    Auto,
    /// Always: the runner refuses to start where it cannot.
    On,
    /// Never.
    Off,
}

/// What to cover, made by [`Plan::new`]: absolute paths without symlinks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Directories (covered by an empty tmpfs) and other files (covered by
    /// `/dev/null`).
    pub cover: Vec<PathBuf>,
    /// Directories that stay visible where they lie under a covered one.
    pub keep: Vec<PathBuf>,
}

impl Plan {
    /// `cover` and `keep` as they are on disk (symlinks resolved); what
    /// does not exist is left out, and so is a cover that is also kept.
    pub fn new(cover: &[PathBuf], keep: &[PathBuf]) -> Plan {
        let real = |paths: &[PathBuf]| -> Vec<PathBuf> {
            let mut real: Vec<PathBuf> = paths
                .iter()
                .filter_map(|path| std::fs::canonicalize(path).ok())
                .collect();
            real.sort();
            real.dedup();
            real
        };
        let keep = real(keep);
        let cover = real(cover)
            .into_iter()
            .filter(|path| !keep.contains(path) && path != Path::new("/"))
            .collect();
        Plan { cover, keep }
    }

    /// The covers to mount, deepest first (a cover inside a kept directory
    /// must be on the original tree before that directory is bound back
    /// over an outer cover), without those another cover already hides.
    pub fn mounts(&self) -> Vec<&Path> {
        let mut visible: Vec<&Path> = self
            .cover
            .iter()
            .map(PathBuf::as_path)
            .filter(|cover| {
                // The nearest covered or kept ancestor decides.
                let nearest = cover.ancestors().skip(1).find(|ancestor| {
                    self.cover.iter().any(|c| c == ancestor)
                        || self.keep.iter().any(|k| k == ancestor)
                });
                nearest.is_none_or(|ancestor| self.keep.iter().any(|k| k == ancestor))
            })
            .collect();
        visible.sort_by_key(|path| std::cmp::Reverse(path.components().count()));
        visible
    }

    /// The kept directories that lie under a cover, to bind back.
    pub fn binds(&self) -> Vec<&Path> {
        self.keep
            .iter()
            .map(PathBuf::as_path)
            .filter(|keep| self.cover.iter().any(|cover| keep.starts_with(cover)))
            .collect()
    }

    /// Whether `cover` has a kept directory under it.
    pub fn keeps_under(&self, cover: &Path) -> bool {
        self.binds().iter().any(|keep| keep.starts_with(cover))
    }
}

/// A prepared namespace, entered by every call's process.
#[derive(Debug)]
pub struct View {
    /// The helper, in the namespace; its stdin is our end of a pipe, so it
    /// exits when the runner does, however the runner ends.
    _holder: tokio::process::Child,
    holder_pid: u32,
    /// Its user namespace, when it made one.
    user: Option<OwnedFd>,
    mount: OwnedFd,
    /// For the plain path (no `clone3`).
    nsenter: Option<PathBuf>,
    plan: Plan,
}

static INSTALLED: OnceLock<View> = OnceLock::new();

/// Makes every later call's process enter `view`. Once per runner.
pub fn install(view: View) {
    let _ = INSTALLED.set(view);
}

/// The view calls enter, once [`install`]ed.
pub(in crate::exec) fn installed() -> Option<&'static View> {
    INSTALLED.get()
}

/// A command for a tool's process that is not a call's (the browser):
/// `program` in the installed view, through `nsenter`, whose entering the
/// mount namespace leaves it at the namespace's root. No `--wd`: nsenter
/// opens that directory before entering, so it would stay a way back to
/// the runner's files. `program` itself where no view is installed. Errs where a view
/// is installed and there is no `nsenter`: such a process never runs
/// outside the view.
pub(in crate::exec) fn command_in_view(program: &Path) -> Result<tokio::process::Command, String> {
    let Some(view) = installed() else {
        return Ok(tokio::process::Command::new(program));
    };
    let Some((nsenter, args)) = view.nsenter() else {
        return Err(format!(
            "cannot start {}: the runner hides its files from tools, which takes nsenter (util-linux), and there is none on the runner's PATH",
            program.display()
        ));
    };
    let mut command = tokio::process::Command::new(nsenter);
    command.args(args).arg(program);
    Ok(command)
}

impl View {
    /// Asks a helper (this binary, `runner tool-view`) to make the
    /// namespace `plan` describes, and keeps it.
    pub async fn prepare(plan: Plan) -> Result<View, String> {
        let mut holder = tokio::process::Command::new("/proc/self/exe")
            .arg("tool-view")
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot start the helper (this binary): {error}"))?;
        let holder_pid = holder.id().ok_or("the helper exited at once")?;
        let mut request = serde_json::to_vec(&plan).map_err(|error| error.to_string())?;
        request.push(b'\n');
        let (Some(stdin), Some(stdout)) = (holder.stdin.as_mut(), holder.stdout.take()) else {
            return Err("the helper's pipes are missing".to_owned());
        };
        stdin
            .write_all(&request)
            .await
            .map_err(|error| format!("cannot talk to the helper: {error}"))?;
        let mut answer = String::new();
        let mut stdout = BufReader::new(stdout);
        let read = stdout.read_line(&mut answer);
        match tokio::time::timeout(PREPARE_TIMEOUT, read).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(format!("cannot read the helper's answer: {error}")),
            Err(_) => {
                return Err(format!(
                    "the helper did not answer within {PREPARE_TIMEOUT:?}"
                ))
            }
        }
        let answer = answer.trim_end();
        if answer != holder::READY {
            return Err(match answer.strip_prefix(holder::FAILED) {
                Some(why) => why.to_owned(),
                None => "the helper ended without making the namespace".to_owned(),
            });
        }
        View::of(holder, holder_pid, plan)
    }

    /// The view another holder made and stays in (tests: util-linux's
    /// `unshare`, where the runner's binary is not at hand).
    #[cfg(test)]
    pub(in crate::exec) fn held_by(
        holder: tokio::process::Child,
        plan: Plan,
    ) -> Result<View, String> {
        let pid = holder.id().ok_or("the holder exited")?;
        View::of(holder, pid, plan)
    }

    /// The view `holder` (pid `holder_pid`) made and stays in.
    fn of(holder: tokio::process::Child, holder_pid: u32, plan: Plan) -> Result<View, String> {
        use std::os::unix::fs::MetadataExt;
        let open = |path: String| {
            let file = std::fs::File::open(&path)
                .map_err(|error| format!("cannot open {path}: {error}"))?;
            let inode = file
                .metadata()
                .map_err(|error| format!("cannot read {path}: {error}"))?
                .ino();
            Ok::<_, String>((OwnedFd::from(file), inode))
        };
        let (mount, _) = open(format!("/proc/{holder_pid}/ns/mnt"))?;
        let (user, user_inode) = open(format!("/proc/{holder_pid}/ns/user"))?;
        let (_, own_user_inode) = open("/proc/self/ns/user".to_owned())?;
        // Entering the user namespace one is in already is refused.
        let user = (user_inode != own_user_inode).then_some(user);
        Ok(View {
            _holder: holder,
            holder_pid,
            user,
            mount,
            nsenter: find_on_path("nsenter"),
            plan,
        })
    }

    /// The namespaces to enter, user namespace first.
    pub(in crate::exec) fn namespaces(&self) -> (Option<BorrowedFd<'_>>, BorrowedFd<'_>) {
        (self.user.as_ref().map(AsFd::as_fd), self.mount.as_fd())
    }

    /// `nsenter` and its arguments up to its `--`, for the plain path;
    /// `None` where there is no `nsenter`.
    pub(in crate::exec) fn nsenter(&self) -> Option<(&Path, Vec<String>)> {
        let program = self.nsenter.as_deref()?;
        let mut args = Vec::with_capacity(4);
        if self.user.is_some() {
            args.push(format!("--user=/proc/{}/ns/user", self.holder_pid));
            args.push("--preserve-credentials".to_owned());
        }
        args.push(format!("--mount=/proc/{}/ns/mnt", self.holder_pid));
        args.push("--".to_owned());
        Some((program, args))
    }

    /// One line for the log and `runner doctor`.
    pub fn describe(&self) -> String {
        let mut covered: Vec<String> = self
            .plan
            .mounts()
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        covered.sort();
        let kept: Vec<String> = self
            .plan
            .binds()
            .iter()
            .map(|path| format!(", {} kept", path.display()))
            .collect();
        let how = if self.user.is_some() {
            "in a user namespace mapping the runner's own uid, where setuid programs (sudo) and file capabilities do not raise privileges"
        } else {
            "in a mount namespace"
        };
        format!(
            "hidden from tools ({how}): {}{}",
            covered.join(", "),
            kept.concat()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cover: &[&str], keep: &[&str]) -> Plan {
        Plan {
            cover: cover.iter().map(PathBuf::from).collect(),
            keep: keep.iter().map(PathBuf::from).collect(),
        }
    }

    #[test]
    fn covers_are_mounted_deepest_first_unless_another_cover_hides_them() {
        let plan = plan(
            &["/s", "/s/w/inner", "/c", "/c/credentials/token", "/s/other"],
            &["/s/w"],
        );
        assert_eq!(
            plan.mounts(),
            [Path::new("/s/w/inner"), Path::new("/s"), Path::new("/c")],
            "/c/credentials/token and /s/other lie under a cover; /s/w/inner under the kept /s/w"
        );
        assert_eq!(plan.binds(), [Path::new("/s/w")]);
        assert!(plan.keeps_under(Path::new("/s")));
        assert!(!plan.keeps_under(Path::new("/c")));
    }

    #[test]
    fn a_workspace_holding_the_config_directory_is_not_bound_back() {
        let plan = plan(&["/home/u/.config/runner"], &["/home/u"]);
        assert_eq!(plan.mounts(), [Path::new("/home/u/.config/runner")]);
        assert!(plan.binds().is_empty());
    }

    #[test]
    fn the_plan_drops_what_is_missing_and_what_is_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let state = root.join("state");
        let workspace = state.join("workspace");
        std::fs::create_dir_all(&workspace).expect("dirs");
        std::os::unix::fs::symlink(&state, root.join("link")).expect("symlink");
        let plan = Plan::new(
            &[
                root.join("link"),
                root.join("missing"),
                workspace.clone(),
                PathBuf::from("/"),
            ],
            std::slice::from_ref(&workspace),
        );
        assert_eq!(plan.cover, [state]);
        assert_eq!(plan.keep, [workspace]);
    }
}
