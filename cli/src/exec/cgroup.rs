//! A cgroup v2 of its own for each call's processes, where the runner may
//! make one, so that stopping a call reaches every process it started:
//! those that left the process group (`setsid`, double-forking daemons)
//! *and* those that also wiped their environment (`env -i setsid …`), which
//! the process group and the call marker variable both miss. Membership of
//! a cgroup is inherited by every child and cannot be left without write
//! access to another cgroup.
//!
//! Where it works: Linux with the cgroup v2 hierarchy mounted (pure v2 at
//! `/sys/fs/cgroup`, or the hybrid layout's `/sys/fs/cgroup/unified`) and
//! the runner's own cgroup writable by it: as root, in a user session
//! (systemd delegates `user@.service` to the user), or in a system service
//! with `Delegate=yes` and a writable cgroup file system (not
//! `ProtectControlGroups=true`). Elsewhere [`CallGroup::create`] answers
//! `None` and the runner keeps to the process group and the marker.
//!
//! How a process gets in: it is created there, by `clone3` with
//! `CLONE_INTO_CGROUP` ([`super::spawn`]), so it never moves.
//! Where that is refused, the process moves itself before it starts
//! anything: a `bash -c` script gets a first command that writes the
//! shell's pid into the call's `cgroup.procs` ([`CallGroup::join_then`], no
//! extra process); any other program runs under a two-line `/bin/sh`
//! wrapper ([`CallGroup::wrap`]) that does the same and then `exec`s it, at
//! the cost of one extra `exec` of `sh`. Moving the child from the runner
//! after spawning races with its first forks. Every way, every process of the
//! call starts inside the cgroup.
//!
//! Stopping: `cgroup.kill` (Linux 5.14+) SIGKILLs every member at once,
//! new forks included; on older kernels every pid in `cgroup.procs` gets
//! SIGKILL until none is left. A call cgroup that is empty when its call
//! ends is kept for a later call ([`POOL`] of them, each for at most
//! [`REUSE_WITHIN`] after it was made), else removed, so that a call
//! neither makes nor removes a directory in the cgroup file system on its
//! way to the result. One still populated when its call ended normally (a
//! daemon the command started on purpose) is left and removed by a later
//! call once it is empty.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::throttle::{Throttle, HOUSEKEEPING_INTERVAL};

/// Prefix of the call cgroups this runner makes (under its own cgroup).
pub const NAME_PREFIX: &str = "runner-call-";
/// Empty call cgroups older than this are removed when a new one is made
/// (younger ones may belong to a call of another runner that is starting).
pub const PRUNE_AFTER: Duration = Duration::from_secs(60);
/// How long a stopped call's cgroup may take to empty before it is left
/// for a later prune.
pub const EMPTY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a populated call cgroup's removal is retried after its call.
pub const REMOVE_RETRY: Duration = Duration::from_secs(30);
/// Empty call cgroups kept for the next calls.
pub const POOL: usize = 8;
/// How long after it was made a call cgroup may be used again: well under
/// [`PRUNE_AFTER`], so that no runner's prune (which takes empty ones
/// older than that) can remove one between its reuse and its first
/// process.
pub const REUSE_WITHIN: Duration = Duration::from_secs(30);

/// Empty call cgroups of this process, for the next calls.
static IDLE: Pool = Pool::new();

/// Call cgroups kept empty for later calls.
#[derive(Debug)]
struct Pool(Mutex<Vec<CallGroup>>);

impl Pool {
    const fn new() -> Pool {
        Pool(Mutex::new(Vec::new()))
    }

    /// A poisoned lock still holds a usable list.
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<CallGroup>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A kept cgroup that is young enough and still empty: checked again
    /// here, since a process of the runner's user may have moved itself in
    /// since, and stopping the new call would then stop it too. Those that
    /// do not qualify are removed (or left to a prune).
    fn take(&self) -> Option<CallGroup> {
        loop {
            let kept = self.list().pop()?;
            if kept.reusable() {
                return Some(kept);
            }
            kept.forget();
        }
    }

    /// Keeps `group` if it is empty, young enough and there is room;
    /// removes it otherwise.
    fn give(&self, group: CallGroup) {
        if group.reusable() {
            let mut list = self.list();
            if list.len() < POOL {
                list.push(group);
                return;
            }
        }
        group.forget();
    }
}

/// The shell that runs [`JOIN_SCRIPT`] (POSIX: present on every Linux
/// that has a shell at all).
pub(super) const WRAPPER_SHELL: &str = "/bin/sh";
/// The wrapper: `$1` is the cgroup's `cgroup.procs`, the rest the command.
/// A failed write (the cgroup went away) leaves the call to the process
/// group and the marker rather than failing it.
const JOIN_SCRIPT: &str = r#"{ echo $$ > "$1"; } 2>/dev/null; shift; exec "$@""#;

/// How a call cgroup's processes were killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillMethod {
    /// One write to `cgroup.kill`.
    CgroupKill,
    /// SIGKILL to each pid listed in `cgroup.procs`.
    EachProcess,
}

impl KillMethod {
    pub fn name(self) -> &'static str {
        match self {
            KillMethod::CgroupKill => "cgroup.kill",
            KillMethod::EachProcess => "cgroup.procs",
        }
    }
}

/// One call's cgroup. Dropped empty, it is kept for a later call (see
/// [`POOL`]) or removed.
#[derive(Debug)]
pub struct CallGroup {
    dir: PathBuf,
    made: Instant,
    /// Never to be used again ([`Self::retire`]).
    retired: AtomicBool,
    /// `None` where they could not be opened: the paths serve instead.
    handles: Option<Handles>,
}

/// Files of a call cgroup held open for as long as the cgroup is kept, so
/// that a call does not walk the cgroup file system to open them between
/// its arrival and its result: `cgroup.events`, read as a call ends and as
/// the next begins, and the directory `clone3` starts the process in.
#[derive(Debug)]
struct Handles {
    /// The directory, for `clone3`'s `CLONE_INTO_CGROUP`.
    dir: File,
    /// `cgroup.events`: read at offset 0, the kernel writes it afresh.
    events: File,
}

impl Handles {
    fn open(dir: &Path) -> Option<Handles> {
        let directory = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_DIRECTORY)
            .open(dir)
            .ok()?;
        let events = File::open(dir.join("cgroup.events")).ok()?;
        Some(Handles {
            dir: directory,
            events,
        })
    }
}

impl CallGroup {
    /// Makes a new cgroup under the runner's own, or `None` where cgroup v2
    /// is not there or not writable.
    pub fn create() -> Option<CallGroup> {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let parent = own_cgroup()?;
        static PRUNED: Throttle = Throttle::new();
        if PRUNED.due(HOUSEKEEPING_INTERVAL) {
            prune(parent);
        }
        if let Some(kept) = IDLE.take() {
            return Some(kept);
        }
        let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // The owner id in the name: a later run of this runner finds the
        // cgroups of this one ([`super::leftovers`]).
        let name = match super::owner::owner() {
            Some(owner) => format!("{NAME_PREFIX}{owner}-{pid}-{sequence}"),
            None => format!("{NAME_PREFIX}{pid}-{sequence}"),
        };
        let dir = parent.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => Some(CallGroup::for_path(dir)),
            Err(error) => {
                tracing::debug!(cgroup = %dir.display(), %error, "no cgroup for this call");
                None
            }
        }
    }

    /// A handle on a given directory (tests and measurements).
    pub fn for_path(dir: PathBuf) -> CallGroup {
        CallGroup {
            handles: Handles::open(&dir),
            dir,
            made: Instant::now(),
            retired: AtomicBool::new(false),
        }
    }

    /// Whether a later call may use this cgroup: not retired, young
    /// enough, and empty.
    fn reusable(&self) -> bool {
        !self.retired.load(Ordering::Relaxed)
            && self.made.elapsed() < REUSE_WITHIN
            && self.is_empty()
    }

    /// Whether no process is in the cgroup or below it (`populated 0` in
    /// `cgroup.events`); `false` when that cannot be read.
    pub fn is_empty(&self) -> bool {
        // Two short lines today ("populated 0", "frozen 0"); a read that
        // fills the buffer may have been cut short, so the path decides.
        let mut buffer = [0u8; 256];
        let kept = self.handles.as_ref().and_then(|handles| {
            handles
                .events
                .read_at(&mut buffer, 0)
                .ok()
                .filter(|&read| read < buffer.len())
        });
        let events = match kept {
            Some(read) => String::from_utf8_lossy(&buffer[..read]).into_owned(),
            None => match std::fs::read_to_string(self.dir.join("cgroup.events")) {
                Ok(events) => events,
                Err(_) => return false,
            },
        };
        events.lines().any(|line| line.trim() == "populated 0")
    }

    /// The cgroup's directory, held open, for `clone3`; `None`: open
    /// [`Self::path`] instead.
    pub fn dir_fd(&self) -> Option<BorrowedFd<'_>> {
        self.handles.as_ref().map(|handles| handles.dir.as_fd())
    }

    /// Removes the directory (in the background when possible) instead of
    /// keeping it: a populated one is retried for [`REMOVE_RETRY`].
    fn forget(mut self) {
        let dir = std::mem::take(&mut self.dir);
        // Closed before the directory goes.
        drop(self.handles.take());
        std::mem::forget(self);
        match tokio::runtime::Handle::try_current() {
            // In a task of its own: the call's result goes out first.
            Ok(runtime) => {
                runtime.spawn(remove(dir));
            }
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The program and arguments that run `program args…` inside this
    /// cgroup (`program` is looked up on the PATH as `Command` would).
    pub fn wrap(&self, program: &OsStr, args: &[String]) -> (PathBuf, Vec<OsString>) {
        let mut wrapped: Vec<OsString> = vec![
            "-c".into(),
            JOIN_SCRIPT.into(),
            "runner-cgroup".into(),
            self.dir.join("cgroup.procs").into_os_string(),
            program.to_owned(),
        ];
        wrapped.extend(args.iter().map(OsString::from));
        (PathBuf::from(WRAPPER_SHELL), wrapped)
    }

    /// `script` for `bash -c`, preceded by a command that moves the shell
    /// into this cgroup: for the `shell` tool, whose bash is there anyway,
    /// this replaces the extra `exec` of `sh` that [`Self::wrap`] costs. The
    /// prefix shares the script's first line, so `$LINENO` is unchanged;
    /// `builtin` keeps a function named `echo` (from `BASH_ENV`) out of it;
    /// a failed write leaves the call to the process group and the marker,
    /// as the wrapper does.
    pub fn join_then(&self, script: &str) -> String {
        let procs = self.dir.join("cgroup.procs");
        let quoted = procs.to_string_lossy().replace('\'', r"'\''");
        format!("{{ builtin echo $$ >'{quoted}'; }} 2>/dev/null; {script}")
    }

    /// The pids in the cgroup now.
    pub fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|text| {
                text.lines()
                    .filter_map(|line| line.trim().parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Keeps this cgroup from later calls. After a write to `cgroup.kill`,
    /// every process `clone3` creates in the cgroup is killed at birth
    /// (seen on Linux 6.18: the kill stays pending), though moving one in
    /// still works. [`Self::kill_all`] retires the cgroup for that reason,
    /// and so does a call whose process was SIGKILLed: its command may have
    /// written `cgroup.kill` itself.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
    }

    /// SIGKILLs every process in the cgroup, and retires it.
    pub fn kill_all(&self) -> KillMethod {
        self.retire();
        if std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok() {
            return KillMethod::CgroupKill;
        }
        // A process may fork between the read and the signals: go again
        // until the list is empty (or a few rounds have passed).
        for _ in 0..10 {
            let members = self.members();
            if members.is_empty() {
                break;
            }
            for pid in members {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        KillMethod::EachProcess
    }

    /// Waits (up to [`EMPTY_TIMEOUT`]) until no process is left.
    pub async fn wait_empty(&self) -> bool {
        let deadline = tokio::time::Instant::now() + EMPTY_TIMEOUT;
        loop {
            if self.members().is_empty() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for CallGroup {
    fn drop(&mut self) {
        let group = CallGroup {
            dir: std::mem::take(&mut self.dir),
            made: self.made,
            retired: AtomicBool::new(self.retired.load(Ordering::Relaxed)),
            handles: self.handles.take(),
        };
        IDLE.give(group);
    }
}

/// Removes a call's cgroup. Still populated (processes the command left
/// running on purpose, or killed ones that count until their new parent
/// reaps them): tried again for [`REMOVE_RETRY`]; a later prune gets what
/// remains.
async fn remove(dir: PathBuf) {
    let deadline = tokio::time::Instant::now() + REMOVE_RETRY;
    loop {
        match std::fs::remove_dir(&dir) {
            Err(error)
                if error.kind() == std::io::ErrorKind::ResourceBusy
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            _ => return,
        }
    }
}

/// For a test that needs a call cgroup: `None` where one can be made,
/// else why not, which the test prints as it skips.
#[cfg(test)]
pub(in crate::exec) fn why_no_call_cgroup() -> Option<String> {
    let Some(own) = own_cgroup() else {
        return Some(
            "this host has no cgroup v2 hierarchy with the test's own cgroup in it (or no /bin/sh for the wrapper)"
                .to_owned(),
        );
    };
    CallGroup::create().is_none().then(|| {
        format!(
            "this host's cgroup v2 lets the test make no cgroup under {}",
            own.display()
        )
    })
}

/// Prints that `test` skips and why, when no call cgroup can be made here;
/// true then.
#[cfg(test)]
pub(in crate::exec) fn skips_without_call_cgroup(test: &str) -> bool {
    match why_no_call_cgroup() {
        Some(why) => {
            eprintln!("skipped {test}: {why}");
            true
        }
        None => false,
    }
}

/// The runner's own cgroup v2 directory, if there is one with a
/// `cgroup.procs` (found once: it does not move while the runner runs).
pub(super) fn own_cgroup() -> Option<&'static Path> {
    static OWN: OnceLock<Option<PathBuf>> = OnceLock::new();
    OWN.get_or_init(|| {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let dir = locate(&mountinfo, &membership)?;
        // No shell for the wrapper (a distroless image): no cgroup either.
        let usable = dir.join("cgroup.procs").is_file() && Path::new(WRAPPER_SHELL).is_file();
        usable.then_some(dir)
    })
    .as_deref()
}

/// The directory of the cgroup at `path` in the hierarchy (as
/// `/proc/PID/cgroup` writes it), seen from this process's mounts.
pub(super) fn directory_of(path: &str) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    locate(&mountinfo, &format!("0::{path}\n"))
}

/// The directory of our cgroup: the cgroup2 mount point joined with the
/// `0::` path of `/proc/self/cgroup`, made relative to the mount's root
/// (inside a cgroup namespace the two differ).
pub(crate) fn locate(mountinfo: &str, membership: &str) -> Option<PathBuf> {
    let path = membership
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?
        .trim();
    // A process moved out of the hierarchy's view shows "(deleted)" or a
    // path outside the namespace ("/.."): nothing usable then.
    if path.contains("/..") || path.ends_with("(deleted)") {
        return None;
    }
    cgroup2_mounts(mountinfo).find_map(|mount| {
        let relative = if mount.root == "/" {
            path
        } else {
            path.strip_prefix(mount.root)
                .filter(|rest| rest.is_empty() || rest.starts_with('/'))?
        };
        Some(Path::new(mount.point).join(relative.trim_start_matches('/')))
    })
}

/// One cgroup2 line of `/proc/self/mountinfo`.
struct Cgroup2Mount<'a> {
    /// The hierarchy's directory seen at the mount point (not `/` inside a
    /// cgroup namespace or for a bind mount of a subtree).
    root: &'a str,
    point: &'a str,
    favordynmods: bool,
}

fn cgroup2_mounts(mountinfo: &str) -> impl Iterator<Item = Cgroup2Mount<'_>> {
    mountinfo.lines().filter_map(|line| {
        // `id parent major:minor root mount-point options… - fstype source super-options`
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split_whitespace();
        if after.next()? != "cgroup2" {
            return None;
        }
        let super_options = after.nth(1).unwrap_or("");
        let mut fields = before.split_whitespace();
        let root = fields.nth(3)?;
        let point = fields.next()?;
        Some(Cgroup2Mount {
            root,
            point,
            favordynmods: super_options
                .split(',')
                .any(|option| option == "favordynmods"),
        })
    })
}

/// The cgroup2 mount point and whether it is mounted with `favordynmods`.
///
/// Without that option every move of a process into a cgroup (each call's
/// first process, where `clone3` cannot create it inside) takes the write
/// side of the kernel's `cgroup_threadgroup_rwsem` the slow way, waiting
/// for an RCU grace period unless another move came just before, which a
/// call after a pause always pays (BENCHMARKS.md has the figures).
pub fn hierarchy(mountinfo: &str) -> Option<(PathBuf, bool)> {
    cgroup2_mounts(mountinfo)
        .next()
        .map(|mount| (PathBuf::from(mount.point), mount.favordynmods))
}

/// Removes the empty call cgroups (of any runner) older than
/// [`PRUNE_AFTER`]. Best effort: populated ones fail with EBUSY.
fn prune(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let is_call_group = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(NAME_PREFIX));
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > PRUNE_AFTER);
        if is_call_group && old {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_cgroup2_mount_and_our_path_make_the_directory() {
        assert_eq!(
            locate(HYBRID, "4:memory:/x\n0::/\n"),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let pure = "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            locate(pure, "0::/system.slice/runner.service\n"),
            Some(PathBuf::from("/sys/fs/cgroup/system.slice/runner.service"))
        );
        // A mount of a sub-tree (cgroup namespace, container).
        let sub = "25 1 0:22 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            locate(sub, "0::/kubepods/pod1/app\n"),
            Some(PathBuf::from("/sys/fs/cgroup/app"))
        );
        assert_eq!(locate(sub, "0::/kubepods/pod10\n"), None);
        // No cgroup2 mount, no v2 membership, or a path outside our view.
        assert_eq!(
            locate("31 23 0:28 / /x rw - tmpfs tmpfs rw\n", "0::/\n"),
            None
        );
        assert_eq!(locate(HYBRID, "4:memory:/x\n"), None);
        assert_eq!(locate(HYBRID, "0::/../other\n"), None);
    }

    #[test]
    fn the_wrapper_passes_the_command_through_unchanged() {
        let group = CallGroup::for_path(PathBuf::from("/nonexistent/runner-call-test"));
        let (program, args) = group.wrap(OsStr::new("/bin/echo"), &["a b".into(), "$c".into()]);
        // The cgroup is gone: the write fails quietly and the command runs.
        let output = std::process::Command::new(program)
            .args(args)
            .output()
            .expect("sh runs");
        assert!(output.status.success(), "{output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "a b $c\n");
        assert!(output.stderr.is_empty(), "{output:?}");
    }

    #[test]
    fn the_mount_option_that_spares_moves_is_read_from_mountinfo() {
        assert_eq!(
            hierarchy(HYBRID),
            Some((PathBuf::from("/sys/fs/cgroup/unified"), false))
        );
        let pure = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,favordynmods,memory_recursiveprot\n";
        assert_eq!(
            hierarchy(pure),
            Some((PathBuf::from("/sys/fs/cgroup"), true))
        );
        assert_eq!(
            hierarchy("31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"),
            None
        );
        assert_eq!(hierarchy("garbage\n- cgroup2\n"), None);
    }

    /// A process moved into `group`, asleep until killed.
    fn sleeper_in(group: &CallGroup) -> std::process::Child {
        let sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        std::fs::write(group.path().join("cgroup.procs"), sleeper.id().to_string())
            .expect("move the sleeper in");
        sleeper
    }

    /// An empty young call cgroup is kept and handed out again; a
    /// populated one, a killed one, an old one, one beyond the pool's size
    /// and one that became populated while kept are not.
    /// A test that skips for want of a call cgroup says why, and says so
    /// exactly where no call cgroup can be made.
    #[test]
    fn a_skip_for_want_of_a_cgroup_gives_its_reason() {
        let why = why_no_call_cgroup();
        assert_eq!(why.is_none(), CallGroup::create().is_some(), "{why:?}");
        if let Some(why) = why {
            assert!(why.contains("cgroup"), "{why}");
        }
    }

    #[tokio::test]
    async fn only_empty_young_call_cgroups_are_kept_for_later_calls() {
        if skips_without_call_cgroup("only_empty_young_call_cgroups_are_kept_for_later_calls") {
            return;
        }
        let make = || CallGroup::create().expect("a call cgroup");
        let pool = Pool::new();

        let empty = make();
        let path = empty.path().to_owned();
        pool.give(empty);
        let again = pool.take().expect("the empty one is kept");
        assert_eq!(again.path(), path);
        assert!(pool.take().is_none());

        let busy = make();
        let busy_path = busy.path().to_owned();
        let mut sleeper = sleeper_in(&busy);
        pool.give(busy);
        assert!(pool.take().is_none(), "a populated one is not kept");

        let killed = make();
        killed.kill_all();
        assert!(killed.is_empty());
        pool.give(killed);
        assert!(pool.take().is_none(), "a killed one is not kept");

        let mut old = make();
        if let Some(then) = Instant::now().checked_sub(REUSE_WITHIN) {
            old.made = then;
            pool.give(old);
            assert!(pool.take().is_none(), "an old one is not kept");
        }

        let groups: Vec<_> = (0..=POOL).map(|_| make()).collect();
        for group in groups {
            pool.give(group);
        }
        let mut kept = Vec::new();
        while let Some(group) = pool.take() {
            kept.push(group);
        }
        assert_eq!(kept.len(), POOL, "at most POOL are kept");

        let idle = kept.pop().expect("a kept one");
        let idle_path = idle.path().to_owned();
        pool.give(idle);
        let mut intruder = sleeper_in(&CallGroup::for_path(idle_path));
        assert!(
            pool.take().is_none(),
            "one that became populated while kept is not handed out"
        );

        for process in [&mut sleeper, &mut intruder] {
            let _ = process.kill();
            let _ = process.wait();
        }
        // The populated one is removed once empty (retried in the background).
        let deadline = Instant::now() + Duration::from_secs(10);
        while busy_path.exists() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!busy_path.exists(), "{} is removed", busy_path.display());
    }
}
