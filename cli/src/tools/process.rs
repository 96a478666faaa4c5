//! Running one process for a call: streamed, bounded, and stopped as a tree.
//!
//! Used by `shell` (`bash -c`), the argv tools (`git`, `kubectl`, …) and
//! `claude_code`. Every process gets:
//!
//! * its own process group, and the variable [`CALL_MARKER_VAR`]`=<call id>`
//!   in its environment. On timeout or cancel the group gets SIGTERM, a short
//!   grace, then SIGKILL; processes that left the group (`setsid`, daemons
//!   that double-fork) still carry the variable, so `/proc/*/environ` finds
//!   them and they get the same treatment.
//! * where the runner can make one (Linux, cgroup v2 writable: see
//!   [`super::cgroup`]), its own cgroup, which also holds the processes that
//!   left the group *and* wiped their environment (`env -i setsid …`); the
//!   final SIGKILL goes to the whole cgroup. Without a cgroup such a process
//!   escapes: the process group and the marker are all there is.
//! * its output read as produced: each chunk goes to a [`Spool`] (head and
//!   tail inline, everything in a file past the inline limit) and, when the
//!   caller streams, to the relay as an `output` frame.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::fd::AsFd;
#[cfg(target_os = "linux")]
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use runner_proto::ws::Stream;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::capture::{Spool, Spooled};
use super::cgroup::{CallGroup, KillMethod};
use super::{CallScope, ToolContext, ToolOutcome};

/// Output kept inline per stream; past it the result keeps head and tail
/// and the whole output goes to a file in the workspace.
pub const INLINE_LIMIT: usize = 1024 * 1024;
/// Time between SIGTERM and SIGKILL when stopping a process tree.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// After the process exits, how long background children may keep our
/// pipes open before we stop reading (and answer) anyway.
pub const PIPE_DRAIN_TIMEOUT: Duration = Duration::from_millis(500);
/// Environment variable every call's processes carry, so that processes
/// which left the process group are found and stopped too.
pub const CALL_MARKER_VAR: &str = "RUNNER_CALL_ID";
/// Directory (under the workspace) of the files that keep full output.
pub const OUTPUT_DIR: &str = ".runner/output";
/// Kept output files older than this are removed when a new one is made.
pub const OUTPUT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Size of one read from a pipe, and so the largest streamed chunk.
const READ_CHUNK: usize = 256 * 1024;
/// A reader's first buffer: most commands print little or nothing, and
/// two zeroed [`READ_CHUNK`]s per call (fresh pages each time) were 6 % of
/// the runner's CPU for `shell true` (perf). The buffer grows to
/// [`READ_CHUNK`] the first time a read fills it.
const FIRST_READ: usize = 16 * 1024;
/// Capacity asked for an output pipe once its output is bulk ([`Widening`];
/// Linux's default is 64 KiB; 1 MiB is the most an unprivileged process
/// may set by default). A fast writer then fills whole reads, so bulk
/// output costs a quarter of the frames, wakeups and syscalls it would.
const PIPE_CAPACITY: usize = 1024 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: OsString,
    /// The program's `argv[0]` when it is not `program` (a path resolved
    /// ahead of time, run under the name it was asked by).
    pub arg0: Option<String>,
    pub args: Vec<String>,
    pub workdir: PathBuf,
    pub env: HashMap<String, String>,
    /// Written to stdin, which is then closed; `None`: stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// How the process gets into the call's cgroup, where there is one.
    pub join: Join,
}

/// How a call's first process gets into its cgroup ([`CallGroup`]): std
/// cannot spawn into one, so the process moves itself or is moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// `program` is bash and `args` are `["-c", SCRIPT]`: the script's first
    /// command moves the shell ([`CallGroup::join_then`]); exact, ≈ 0.1 ms
    /// (`spawn_cost`: 1.22 ms without, 1.32 ms with).
    BashScript,
    /// Under the `sh` wrapper ([`CallGroup::wrap`]), which moves itself
    /// and then `exec`s the program; exact, ≈ 0.5–0.7 ms (one more `exec`,
    /// of a shell that starts faster than bash). Moving the process from
    /// the runner right after the spawn instead was measured and rejected:
    /// `setsid -w`'s child forked before the runner's write landed.
    Wrapper,
}

/// Why a process tree was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Timeout,
    Cancelled,
}

/// A process that was signalled while stopping a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    pub pid: i32,
    pub command: String,
    /// The first way that found it: [`BY_PROCESS_GROUP`], [`BY_CALL_MARKER`]
    /// (it had left the group) or [`BY_CGROUP`] (it had left the group and
    /// wiped its environment). With a cgroup every process of the call is
    /// in it as well.
    pub found_by: &'static str,
}

pub const BY_PROCESS_GROUP: &str = "process_group";
pub const BY_CALL_MARKER: &str = "call_marker";
pub const BY_CGROUP: &str = "cgroup";

/// How a call's processes were stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub reason: StopReason,
    pub killed: Vec<Killed>,
    /// The call's cgroup and how its processes got their SIGKILL, when the
    /// call had one.
    pub cgroup: Option<(String, KillMethod)>,
}

/// How a process ended.
#[derive(Debug)]
pub struct Finished {
    pub exit_code: Option<i32>,
    pub stdout: Spooled,
    pub stderr: Spooled,
    pub stopped: Option<Stopped>,
    pub pipes_left_open: bool,
    pub wait_error: Option<String>,
    pub pgid: Option<i32>,
    pub timeout: Duration,
}

impl Finished {
    /// The standard result of a process tool: `stdout`, `stderr`, byte
    /// counts, `truncated`, the kept files, and what was killed.
    pub fn into_outcome(self, workspace: &Path) -> ToolOutcome {
        let truncated = self.stdout.truncated || self.stderr.truncated;
        let mut result = json!({
            "stdout_bytes": self.stdout.total,
            "stderr_bytes": self.stderr.total,
            "truncated": truncated,
        });
        for (name, spooled) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            result[name] = json!(spooled.text);
            if let Some(file) = &spooled.file {
                result[format!("{name}_file")] = json!(display_path(workspace, file));
            }
            if let Some(error) = &spooled.file_error {
                result[format!("{name}_file_error")] = json!(error);
            }
        }
        let kept = [&self.stdout, &self.stderr]
            .iter()
            .any(|spooled| spooled.file.is_some() || spooled.file_error.is_some());
        if truncated && kept {
            result["note"] = json!(
                "output was longer than the inline limit: the middle is cut here; the *_file paths hold all of it (read them with file_read and offset)"
            );
        } else if truncated {
            result["note"] = json!(
                "output was longer than the inline limit: the middle is cut here; the whole output was streamed to the caller as it was produced, and is not kept"
            );
        }
        if self.pipes_left_open {
            result["background_note"] = json!(
                "background processes kept the output open; reading stopped when the command exited"
            );
        }
        let error = match (&self.stopped, &self.wait_error) {
            (Some(stopped), _) => {
                let killed = &stopped.killed;
                let count = |how: &str| killed.iter().filter(|k| k.found_by == how).count();
                let by = [BY_PROCESS_GROUP, BY_CALL_MARKER, BY_CGROUP].map(|how| (how, count(how)));
                result["killed"] = json!({
                    "count": killed.len(),
                    "by": by.iter().map(|(how, n)| (how.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                    "process_group": self.pgid,
                    "cgroup": stopped.cgroup.as_ref().map(|(path, _)| path),
                    "cgroup_kill": stopped.cgroup.as_ref().map(|(_, method)| method.name()),
                    "signals": format!("SIGTERM, then SIGKILL after {} s", KILL_GRACE.as_secs()),
                    "processes": killed.iter().map(|k| json!({
                        "pid": k.pid, "command": k.command, "found_by": k.found_by
                    })).collect::<Vec<_>>(),
                });
                let parts: Vec<String> = by
                    .iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(how, n)| format!("{n} by {}", how.replace('_', " ")))
                    .collect();
                let what = format!(
                    "{} process{} stopped{}",
                    killed.len(),
                    if killed.len() == 1 { "" } else { "es" },
                    if parts.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", parts.join(", "))
                    }
                );
                Some(match stopped.reason {
                    StopReason::Timeout => {
                        format!("timed out after {}s; {what}", self.timeout.as_secs())
                    }
                    StopReason::Cancelled => format!("cancelled; {what}"),
                })
            }
            (None, Some(error)) => Some(format!("waiting for the process failed: {error}")),
            (None, None) => None,
        };
        ToolOutcome {
            result,
            exit_code: self.exit_code,
            error,
        }
    }
}

/// A path inside the workspace as a relative path (what `file_read` takes),
/// anything else as it is.
pub fn display_path(workspace: &Path, path: &Path) -> String {
    path.strip_prefix(workspace)
        .map(|relative| relative.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Where a call's full output goes if it outgrows the inline limit.
pub fn output_file(context: &ToolContext, call_id: &str, suffix: &str) -> PathBuf {
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
    context
        .boundary
        .root()
        .join(OUTPUT_DIR)
        .join(format!("{safe}.{suffix}"))
}

/// Removes kept output files older than [`OUTPUT_RETENTION`]. Best effort.
pub fn prune_output_dir(workspace: &Path) {
    static LAST: Throttle = Throttle::new();
    if !LAST.due(HOUSEKEEPING_INTERVAL) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(workspace.join(OUTPUT_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > OUTPUT_RETENTION);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// How often the call path may spend time on housekeeping (pruning kept
/// output files, empty call cgroups): listing a directory on every call
/// costs more than the spawn it precedes.
pub const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(60);

/// "At most once per interval", process-wide and lock-free.
#[derive(Debug, Default)]
pub struct Throttle {
    /// Unix seconds of the last time it was due (0: never).
    last: AtomicU64,
}

impl Throttle {
    pub const fn new() -> Throttle {
        Throttle {
            last: AtomicU64::new(0),
        }
    }

    /// Whether `every` has passed since it was last due; if so, it is now.
    pub fn due(&self, every: Duration) -> bool {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now.saturating_sub(last) < every.as_secs() {
            return false;
        }
        self.last
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

/// Whether a call's processes get a cgroup of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A cgroup where the runner can make one, else the process group and
    /// the marker. The process is created inside it where `clone3` allows
    /// ([`super::spawn_in_cgroup`]), else it moves itself in ([`Join`]).
    CgroupIfAvailable,
    /// A cgroup as above, always joined by the process itself: what runs
    /// where `clone3` is refused (tests and measurements).
    CgroupSelfJoin,
    /// The process group and the marker only.
    ProcessGroup,
}

/// Runs `spec` to completion, cancellation or the call's deadline, isolated
/// as the runner was configured ([`ToolContext::isolation`]).
pub async fn run(spec: Spec, context: &ToolContext, scope: &CallScope) -> Result<Finished, String> {
    run_isolated(spec, context, scope, context.isolation).await
}

/// [`run`] with a chosen [`Isolation`].
pub async fn run_isolated(
    spec: Spec,
    context: &ToolContext,
    scope: &CallScope,
    isolation: Isolation,
) -> Result<Finished, String> {
    prune_output_dir(context.boundary.root());
    let group = match isolation {
        Isolation::CgroupIfAvailable | Isolation::CgroupSelfJoin => CallGroup::create(),
        Isolation::ProcessGroup => None,
    };
    let started = match &group {
        Some(group) if isolation == Isolation::CgroupIfAvailable => {
            start_in_cgroup(&spec, group, scope)?
        }
        _ => None,
    };
    let mut child = match started {
        Some(child) => child,
        None => Running::Spawned(spawn_command(&spec, group.as_ref(), scope)?),
    };
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    let (stdin, stdout, stderr) = child.take_pipes();
    if let (Some(bytes), Some(mut stdin)) = (spec.stdin, stdin) {
        // A process that never reads its stdin must not block us.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    // A streamed call's caller gets every byte as it comes: no kept file.
    let spool = |name| match scope.output {
        Some(_) => Spool::without_file(INLINE_LIMIT),
        None => Spool::new(INLINE_LIMIT, output_file(context, &scope.call_id, name)),
    };
    let stdout = spawn_reader(stdout, spool("stdout"), scope, Stream::Stdout);
    let stderr = spawn_reader(stderr, spool("stderr"), scope, Stream::Stderr);

    let marker = format!("{CALL_MARKER_VAR}={}", scope.call_id);
    let mut stopped = None;
    let tree = Tree {
        pgid,
        marker: &marker,
        group: group.as_ref(),
    };
    let status = tokio::select! {
        status = child.wait() => status,
        () = tokio::time::sleep(scope.timeout) => {
            let (status, found) = stop_tree(&tree, &mut child).await;
            stopped = Some(found.into_stopped(StopReason::Timeout));
            status
        }
        () = scope.cancel.cancelled() => {
            let (status, found) = stop_tree(&tree, &mut child).await;
            stopped = Some(found.into_stopped(StopReason::Cancelled));
            status
        }
    };
    if let (Some(group), Ok(status)) = (&group, &status) {
        if signal_of(status) == Some(9) {
            // Killed: perhaps by a write to its own `cgroup.kill`, which
            // would kill every process later created in this cgroup.
            group.retire();
        }
    }
    let (stdout, stdout_open) = finish_reader(stdout).await;
    let (stderr, stderr_open) = finish_reader(stderr).await;
    let (exit_code, wait_error) = match &status {
        Ok(status) => (
            status
                .code()
                .or_else(|| signal_of(status).map(|signal| 128 + signal)),
            None,
        ),
        Err(error) => (None, Some(error.to_string())),
    };
    Ok(Finished {
        exit_code,
        stdout,
        stderr,
        stopped,
        pipes_left_open: stdout_open || stderr_open,
        wait_error,
        pgid,
        timeout: scope.timeout,
    })
}

/// A call's running process, however it was started.
enum Running {
    /// By `tokio::process::Command` (no cgroup, or one it joins itself).
    Spawned(tokio::process::Child),
    /// Created inside the call's cgroup.
    #[cfg(target_os = "linux")]
    InCgroup(super::spawn_in_cgroup::Child),
}

type Input = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;
type Output = Box<dyn AsyncRead + Send + Unpin>;

impl Running {
    fn id(&self) -> Option<u32> {
        match self {
            Running::Spawned(child) => child.id(),
            #[cfg(target_os = "linux")]
            Running::InCgroup(child) => Some(child.id()),
        }
    }

    /// stdin (when piped), stdout and stderr, with larger output pipes.
    fn take_pipes(&mut self) -> (Option<Input>, Option<Output>, Option<Output>) {
        fn input<P: tokio::io::AsyncWrite + Send + Unpin + 'static>(
            pipe: Option<P>,
        ) -> Option<Input> {
            pipe.map(|pipe| Box::new(pipe) as Input)
        }
        fn output<P: AsyncRead + AsFd + Send + Unpin + 'static>(pipe: Option<P>) -> Option<Output> {
            Some(Box::new(Widening {
                pipe: pipe?,
                widened: false,
            }))
        }
        match self {
            Running::Spawned(child) => (
                input(child.stdin.take()),
                output(child.stdout.take()),
                output(child.stderr.take()),
            ),
            #[cfg(target_os = "linux")]
            Running::InCgroup(child) => (
                input(child.stdin.take()),
                output(child.stdout.take()),
                output(child.stderr.take()),
            ),
        }
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Running::Spawned(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            Running::InCgroup(child) => child.wait().await,
        }
    }

    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        match self {
            Running::Spawned(child) => child.try_wait(),
            #[cfg(target_os = "linux")]
            Running::InCgroup(child) => child.try_wait(),
        }
    }

    fn start_kill(&mut self) -> std::io::Result<()> {
        match self {
            Running::Spawned(child) => child.start_kill(),
            #[cfg(target_os = "linux")]
            Running::InCgroup(child) => child.start_kill(),
        }
    }
}

/// An output pipe that asks for [`PIPE_CAPACITY`] the first time a read
/// fills the buffer it was given, that is once the output is bulk: a
/// command that prints little costs no `fcntl`s, and the kernel no larger
/// ring, for it.
struct Widening<P> {
    pipe: P,
    widened: bool,
}

impl<P: AsyncRead + AsFd + Unpin> AsyncRead for Widening<P> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let wanted = buf.remaining();
        let polled = std::pin::Pin::new(&mut self.pipe).poll_read(cx, buf);
        if !self.widened && wanted > 0 && buf.remaining() == 0 {
            self.widened = true;
            // Best effort: a smaller pipe only means smaller reads.
            let _ = nix::fcntl::fcntl(
                self.pipe.as_fd(),
                nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY as i32),
            );
        }
        polled
    }
}

/// Starts `spec` inside `group` with `clone3` ([`super::spawn_in_cgroup`]):
/// no move into the cgroup, no wrapper, no script prefix. `Ok(None)` where
/// that is not possible here: the caller starts it the other way.
#[cfg(target_os = "linux")]
fn start_in_cgroup(
    spec: &Spec,
    group: &CallGroup,
    scope: &CallScope,
) -> Result<Option<Running>, String> {
    use super::spawn_in_cgroup::{self, Error, Request};
    if !spawn_in_cgroup::available() {
        return Ok(None);
    }
    // No PATH search in the child: a program that is not found is left to
    // `Command`, whose error the call then reports as it always has.
    let Some(program) = find_program(&spec.program, &spec.env) else {
        return Ok(None);
    };
    let arg0 = spec
        .arg0
        .as_deref()
        .map_or(spec.program.clone(), OsString::from);
    let argv = std::iter::once(arg0)
        .chain(spec.args.iter().map(OsString::from))
        .collect();
    let request = Request {
        cgroup: group,
        program: &program,
        argv,
        env: child_environment(spec, scope).map_err(|error| {
            format!(
                "cannot start {:?} in {}: {error}",
                spec.program,
                spec.workdir.display()
            )
        })?,
        workdir: &spec.workdir,
        stdin: spec.stdin.is_some(),
    };
    match spawn_in_cgroup::spawn(&request) {
        Ok(child) => Ok(Some(Running::InCgroup(child))),
        Err(Error::Unavailable(error)) => {
            tracing::debug!(%error, "starting the call's process the other way");
            Ok(None)
        }
        Err(Error::Spawn(error)) => Err(format!(
            "cannot start {:?} in {}: {error}",
            spec.program,
            spec.workdir.display()
        )),
    }
}

#[cfg(not(target_os = "linux"))]
fn start_in_cgroup(_: &Spec, _: &CallGroup, _: &CallScope) -> Result<Option<Running>, String> {
    Ok(None)
}

/// What `spawn_command` gives the process: the runner's environment
/// without its secrets ([`super::keep_secrets_from`]), the call's
/// variables, and the call marker.
///
/// Sorted by name, as std's `Command` passes a modified environment: the
/// runner's own entries (made once, [`inherited_environment`]) merged
/// with the call's, which win.
#[cfg(target_os = "linux")]
fn child_environment(
    spec: &Spec,
    scope: &CallScope,
) -> std::io::Result<Vec<std::borrow::Cow<'static, std::ffi::CStr>>> {
    use std::borrow::Cow;
    use std::cmp::Ordering;
    use std::collections::BTreeMap;
    let mut own: BTreeMap<&[u8], &str> = spec
        .env
        .iter()
        .map(|(name, value)| (name.as_bytes(), value.as_str()))
        .collect();
    own.insert(CALL_MARKER_VAR.as_bytes(), &scope.call_id);
    let inherited = inherited_environment();
    let mut merged = Vec::with_capacity(inherited.len() + own.len());
    let mut inherited = inherited.iter().peekable();
    let mut own = own.into_iter().peekable();
    loop {
        let order = match (inherited.peek(), own.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((name, _)), Some((own_name, _))) => name.as_bytes().cmp(own_name),
        };
        if order != Ordering::Greater {
            // The runner's entry, unless the call sets the same name.
            let (_, entry) = inherited.next().expect("peeked");
            if order == Ordering::Less {
                merged.push(Cow::Borrowed(entry.as_c_str()));
                continue;
            }
        }
        let (name, value) = own.next().expect("peeked");
        merged.push(Cow::Owned(super::spawn_in_cgroup::env_entry(
            std::ffi::OsStr::from_bytes(name),
            value.as_ref(),
        )?));
    }
    Ok(merged)
}

/// The runner's environment without its secrets ([`super::keep_secrets_from`]),
/// sorted by name, each variable with its `NAME=value` entry. Made on the
/// first call: the runner never changes its own environment, and copying
/// it from `environ` twice for every call was 3–4 % of the runner's CPU
/// for `shell true` (bench/ROUNDS.md, eleventh round).
#[cfg(target_os = "linux")]
fn inherited_environment() -> &'static [(OsString, std::ffi::CString)] {
    static INHERITED: std::sync::OnceLock<Vec<(OsString, std::ffi::CString)>> =
        std::sync::OnceLock::new();
    INHERITED.get_or_init(|| {
        let mut env: Vec<_> = std::env::vars_os()
            .filter(|(name, _)| !crate::env_vars::SECRETS.iter().any(|secret| name == secret))
            // The OS hands out no NUL inside a variable; one that could not
            // be passed on is left out rather than failing every call.
            .filter_map(|(name, value)| {
                let entry = super::spawn_in_cgroup::env_entry(&name, &value).ok()?;
                Some((name, entry))
            })
            .collect();
        // A name set twice keeps its last value, as it did in a map.
        env.reverse();
        env.sort_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
        env.dedup_by(|(a, _), (b, _)| a == b);
        env
    })
}

/// Starts `spec` with `tokio::process::Command`; with a cgroup, the process
/// moves itself in first ([`Join`]).
fn spawn_command(
    spec: &Spec,
    group: Option<&CallGroup>,
    scope: &CallScope,
) -> Result<tokio::process::Child, String> {
    let mut command = match (group, spec.join, spec.args.as_slice()) {
        (Some(group), Join::BashScript, [dash_c, script]) if dash_c == "-c" => {
            // bash joins the cgroup itself, first thing: no wrapper.
            let mut command = Command::new(&spec.program);
            command.arg("-c").arg(group.join_then(script));
            if let Some(arg0) = &spec.arg0 {
                command.arg0(arg0);
            }
            command
        }
        (Some(group), _, _) => {
            // The wrapper `exec`s the program (by the same PATH search):
            // look first, so a missing one fails the call as it does
            // without a wrapper, rather than as exit code 127.
            if find_program(&spec.program, &spec.env).is_none() {
                return Err(format!(
                    "cannot start {:?} in {}: not found on PATH",
                    spec.program,
                    spec.workdir.display()
                ));
            }
            // `sh` cannot give a program another `argv[0]` (no `exec -a`):
            // a program asked for by name is `exec`ed by that name, which
            // `sh` finds on the same PATH.
            let program = spec
                .arg0
                .as_ref()
                .map_or(spec.program.as_os_str(), |name| name.as_ref());
            let (wrapper, args) = group.wrap(program, &spec.args);
            let mut command = Command::new(wrapper);
            command.args(args);
            command
        }
        (None, _, _) => {
            let mut command = Command::new(&spec.program);
            command.args(&spec.args);
            if let Some(arg0) = &spec.arg0 {
                command.arg0(arg0);
            }
            command
        }
    };
    super::keep_secrets_from(&mut command);
    command
        .current_dir(&spec.workdir)
        .envs(&spec.env)
        .env(CALL_MARKER_VAR, &scope.call_id)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command.spawn().map_err(|error| {
        format!(
            "cannot start {:?} in {}: {error}",
            spec.program,
            spec.workdir.display()
        )
    })
}

/// The ways to find a call's processes.
struct Tree<'a> {
    pgid: Option<i32>,
    marker: &'a str,
    group: Option<&'a CallGroup>,
}

/// What [`stop_tree`] found and how the cgroup was killed.
struct Found {
    killed: Vec<Killed>,
    cgroup: Option<(String, KillMethod)>,
}

impl Found {
    fn into_stopped(self, reason: StopReason) -> Stopped {
        Stopped {
            reason,
            killed: self.killed,
            cgroup: self.cgroup,
        }
    }
}

/// SIGTERM to the group, the cgroup's processes and every process carrying
/// the marker, up to [`KILL_GRACE`] for them to go, then SIGKILL to
/// whatever is left (the group always: children may outlive the leader;
/// the whole cgroup at once where there is one).
async fn stop_tree(
    tree: &Tree<'_>,
    child: &mut Running,
) -> (std::io::Result<std::process::ExitStatus>, Found) {
    let pgid = tree.pgid;
    let mut killed: Vec<Killed> = Vec::new();
    let mut seen = HashSet::new();
    let mut record = |found: Vec<Killed>, killed: &mut Vec<Killed>| {
        for process in found {
            if seen.insert(process.pid) {
                killed.push(process);
            }
        }
    };
    let found = tree_members(tree);
    signal_all(pgid, &found, Signal::SIGTERM);
    record(found, &mut killed);

    let deadline = Instant::now() + KILL_GRACE;
    let mut status = None;
    loop {
        if status.is_none() {
            if let Ok(Some(exited)) = child.try_wait() {
                status = Some(Ok(exited));
            }
        }
        let remaining = tree_members(tree);
        if status.is_some() && remaining.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
        // No SIGTERM for what started after the first: that is most often
        // the clean-up a trap runs (`trap 'upload-logs; exit' TERM`), and
        // stopping it would defeat the grace. Whatever is left at the
        // deadline gets SIGKILL, as with `systemctl stop` and `docker stop`.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The cgroup takes every member at once, forks included; what is left
    // outside it (its wrapper could not join it) is found as before.
    let mut cgroup = None;
    if let Some(group) = tree.group {
        record(tree_members(tree), &mut killed);
        let method = group.kill_all();
        cgroup = Some((group.path().display().to_string(), method));
    }
    // SIGKILL cannot be caught, but a process may fork between our scan and
    // the signal: repeat a few times until nothing is left.
    for _ in 0..5 {
        let found = tree_members(tree);
        if found.is_empty() {
            if let Some(pgid) = pgid {
                // ESRCH (group already empty) is the good case.
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
            break;
        }
        signal_all(pgid, &found, Signal::SIGKILL);
        record(found, &mut killed);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = match status {
        Some(status) => status,
        None => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    if let Some(group) = tree.group {
        // So that dropping it can remove the cgroup.
        group.wait_empty().await;
    }
    (status, Found { killed, cgroup })
}

/// One signal to each process: the group as a whole, then each process
/// found outside it.
fn signal_all(pgid: Option<i32>, processes: &[Killed], signal: Signal) {
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
    for pid in outside_the_group(pgid, processes) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// The processes `killpg` does not reach. A process of the group must not
/// get a second SIGTERM: many programs take a second one as "stop now,
/// skip the clean-up", and bash runs its `TERM` trap once more.
fn outside_the_group(pgid: Option<i32>, processes: &[Killed]) -> impl Iterator<Item = i32> + '_ {
    processes
        .iter()
        .filter(move |process| pgid.is_none() || process.found_by != BY_PROCESS_GROUP)
        .map(|process| process.pid)
}

/// Live processes in the group, carrying the call marker, or in the call's
/// cgroup (zombies have no readable environment and are skipped: they are
/// already dead).
fn tree_members(tree: &Tree<'_>) -> Vec<Killed> {
    let (pgid, marker) = (tree.pgid, tree.marker);
    let in_cgroup: HashSet<i32> = tree
        .group
        .map(|group| group.members().into_iter().collect())
        .unwrap_or_default();
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == own {
            continue;
        }
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        let Some((command, state, group)) = parse_stat(&stat) else {
            continue;
        };
        if state == 'Z' || state == 'X' {
            continue;
        }
        let marked = || {
            std::fs::read(dir.join("environ")).is_ok_and(|environ| {
                environ
                    .split(|byte| *byte == 0)
                    .any(|entry| entry == marker.as_bytes())
            })
        };
        let found_by = if pgid == Some(group) {
            BY_PROCESS_GROUP
        } else if marked() {
            BY_CALL_MARKER
        } else if in_cgroup.contains(&pid) {
            BY_CGROUP
        } else {
            continue;
        };
        found.push(Killed {
            pid,
            command,
            found_by,
        });
    }
    found
}

/// Where `program` is: as given when it has a `/`, else the first
/// executable of that name on the PATH the child will have.
pub fn find_program(program: &std::ffi::OsStr, env: &HashMap<String, String>) -> Option<PathBuf> {
    let path = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        return Some(path.to_owned());
    }
    let search = match env.get("PATH") {
        Some(value) => OsString::from(value),
        None => std::env::var_os("PATH")?,
    };
    std::env::split_paths(&search)
        .map(|dir| dir.join(path))
        .find(|candidate| super::catalogue::is_executable(candidate))
}

/// `(comm, state, pgrp)` from `/proc/PID/stat`; `comm` may contain spaces
/// and parentheses, so it is the text between the first `(` and the last `)`.
fn parse_stat(stat: &str) -> Option<(String, char, i32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let command = stat.get(open + 1..close)?.to_owned();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let _ppid = rest.next()?;
    let group = rest.next()?.parse().ok()?;
    Some((command, state, group))
}

type Reader = (Arc<Mutex<Option<Spool>>>, tokio::task::JoinHandle<()>);

/// Reads a pipe into a shared spool (so what was read is kept even when we
/// stop waiting for EOF), streaming chunks when the caller reads them.
///
/// A task of its own: reading both pipes beside the wait in the call's
/// task was tried (one wake-up fewer per call) and gave no measurable gain
/// for `shell true` while the API stream of 100 MB ran slower (median of
/// nine runs each: 730 against 796 MB/s).
fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(
    reader: Option<R>,
    spool: Spool,
    scope: &CallScope,
    stream: Stream,
) -> Reader {
    let spool = Arc::new(Mutex::new(Some(spool)));
    let shared = Arc::clone(&spool);
    let mut sink = scope.output_sink(stream);
    let task = tokio::spawn(async move {
        let Some(mut reader) = reader else { return };
        // `read_buf` fills spare capacity: nothing is zeroed, and a pipe
        // that stays empty touches no page of the buffer.
        let mut buffer = Vec::with_capacity(FIRST_READ);
        let mut open = true;
        while open {
            buffer.clear();
            open = read_into(&mut reader, &mut buffer, &shared).await;
            if let Some(sink) = sink.as_mut().filter(|_| !buffer.is_empty()) {
                // Until the queue has room for this frame, read more into
                // it (up to its 256 KiB): the command only waits once the
                // frame and its pipe are full.
                let room = loop {
                    grow(&mut buffer);
                    if !open || buffer.len() == buffer.capacity() {
                        break sink.room().await;
                    }
                    tokio::select! {
                        biased;
                        room = sink.room() => break room,
                        more = read_into(&mut reader, &mut buffer, &shared) => open = more,
                    }
                };
                sink.send_in(room, &buffer).await;
            }
            grow(&mut buffer);
        }
        if let Some(sink) = sink.as_mut() {
            sink.flush().await;
        }
    });
    (spool, task)
}

/// One read into the buffer's spare capacity (cancel-safe: a read that
/// did not complete took nothing); what it read goes to the spool as well.
/// `false` at EOF or on an error.
async fn read_into<R: AsyncRead + Unpin>(
    reader: &mut R,
    buffer: &mut Vec<u8>,
    spool: &Mutex<Option<Spool>>,
) -> bool {
    let start = buffer.len();
    match reader.read_buf(buffer).await {
        Ok(0) | Err(_) => false,
        Ok(_) => {
            if let Some(spool) = lock(spool).as_mut() {
                spool.push(&buffer[start..]);
            }
            true
        }
    }
}

/// A full buffer grows once, from [`FIRST_READ`] to [`READ_CHUNK`].
fn grow(buffer: &mut Vec<u8>) {
    if buffer.len() == buffer.capacity() && buffer.capacity() < READ_CHUNK {
        buffer.reserve_exact(READ_CHUNK - buffer.len());
    }
}

fn lock(spool: &Mutex<Option<Spool>>) -> std::sync::MutexGuard<'_, Option<Spool>> {
    // A poisoned lock only means a reader panicked mid-push; the bytes kept
    // so far are still valid.
    spool
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits for a reader to reach EOF; if background processes hold the pipe,
/// gives up after [`PIPE_DRAIN_TIMEOUT`]. Returns what was kept and whether
/// the pipe was still open.
async fn finish_reader((spool, task): Reader) -> (Spooled, bool) {
    let abort = task.abort_handle();
    let still_open = tokio::time::timeout(PIPE_DRAIN_TIMEOUT, task)
        .await
        .is_err();
    if still_open {
        abort.abort();
    }
    let taken = lock(&spool).take();
    let spooled = match taken {
        Some(spool) => spool.finish(),
        None => Spool::new(0, PathBuf::new()).finish(),
    };
    (spooled, still_open)
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// Parses an optional `env` argument: an object of strings.
pub fn parse_env(args: &Value) -> Result<HashMap<String, String>, String> {
    let mut env = HashMap::new();
    match args.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (key, value) in map {
                let Value::String(value) = value else {
                    return Err(format!("env {key:?} must be a string"));
                };
                if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0')
                {
                    return Err(format!("env {key:?} is not a valid variable"));
                }
                if key == CALL_MARKER_VAR {
                    return Err(format!("env {key:?} is set by the runner"));
                }
                env.insert(key.clone(), value.clone());
            }
        }
        Some(_) => return Err("argument \"env\" must be an object of strings".to_owned()),
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(
            parse_stat("42 (sleep) S 1 42 42 0 -1"),
            Some(("sleep".to_owned(), 'S', 42))
        );
        assert_eq!(
            parse_stat("7 (a (b) c) R 1 9 7 0"),
            Some(("a (b) c".to_owned(), 'R', 9))
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) "), None);
    }

    fn context(root: &Path) -> ToolContext {
        ToolContext {
            boundary: super::super::workspace::Boundary::new(root, vec![]).expect("root"),
            permissions: None,
            policy: Arc::new(runner_proto::ws::Policy {
                tools: runner_proto::ws::ToolAccess::All,
                file_paths: vec![],
                approval_required: vec![],
            }),
            toolbox: super::super::Toolbox::empty(),
            isolation: Isolation::CgroupIfAvailable,
        }
    }

    fn scope(call_id: &str, timeout: Duration) -> CallScope {
        CallScope {
            call_id: call_id.to_owned(),
            cancel: tokio_util::sync::CancellationToken::new(),
            timeout,
            output: None,
            binary_output: true,
        }
    }

    fn bash(command: &str, root: &Path) -> Spec {
        Spec {
            program: "bash".into(),
            arg0: None,
            args: vec!["-c".into(), command.into()],
            workdir: root.to_owned(),
            env: HashMap::new(),
            stdin: None,
            join: Join::BashScript,
        }
    }

    /// Whether a live (not zombie) process has `needle` in its command line.
    fn alive_with(needle: &str) -> Option<i32> {
        std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .find_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                let (_, state, _) = parse_stat(&stat)?;
                (text.contains(needle) && state != 'Z').then_some(pid)
            })
    }

    /// Without a cgroup (where none can be made, or when asked), the
    /// process group and the marker find a `setsid` escapee; one that also
    /// wiped its environment escapes: the reason for the cgroup.
    #[tokio::test]
    async fn a_background_child_holding_the_pipes_delays_the_answer_only_briefly() {
        let root = tempfile::tempdir().expect("tempdir");
        let marker = format!("7.{}3", std::process::id());
        let started = Instant::now();
        let finished = run_isolated(
            bash(
                &format!("echo before; sleep {marker} & echo after >&2"),
                root.path(),
            ),
            &context(root.path()),
            &scope("background-test", Duration::from_secs(30)),
            Isolation::ProcessGroup,
        )
        .await
        .expect("runs");
        let took = started.elapsed();
        if let Some(pid) = alive_with(&format!("sleep {marker}")) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        assert_eq!(finished.exit_code, Some(0));
        assert!(finished.pipes_left_open, "the sleep holds both pipes");
        assert_eq!(finished.stdout.text, "before\n");
        assert_eq!(finished.stderr.text, "after\n");
        assert!(
            took >= PIPE_DRAIN_TIMEOUT && took < PIPE_DRAIN_TIMEOUT + Duration::from_secs(3),
            "answered after {took:?}"
        );
        let outcome = finished.into_outcome(root.path());
        assert!(
            outcome.result["background_note"].is_string(),
            "{}",
            outcome.result
        );
    }

    #[tokio::test]
    async fn a_process_writing_after_sigterm_is_still_read() {
        // The trap's output comes while the call is being stopped: the
        // pipes are read during the grace, so it arrives whole.
        let root = tempfile::tempdir().expect("tempdir");
        let finished = run_isolated(
            bash(
                "trap 'head -c 3000000 /dev/zero | tr \"\\0\" x; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
                root.path(),
            ),
            &context(root.path()),
            &scope("sigterm-output-test", Duration::from_millis(700)),
            Isolation::ProcessGroup,
        )
        .await
        .expect("runs");
        assert!(finished.stopped.is_some(), "timed out");
        assert_eq!(finished.stdout.total, 6 + 3_000_000, "every byte was read");
    }

    #[tokio::test]
    async fn the_clean_up_a_trap_starts_is_not_stopped_and_the_trap_runs_once() {
        // The trap's `sleep` starts after the SIGTERM: it must be left to
        // finish within the grace, and bash must not get a second SIGTERM
        // (it would run the trap again).
        let root = tempfile::tempdir().expect("tempdir");
        let finished = run_isolated(
            bash(
                "trap 'echo trapped; sleep 0.4 && echo cleaned; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
                root.path(),
            ),
            &context(root.path()),
            &scope("trap-clean-up-test", Duration::from_millis(700)),
            Isolation::ProcessGroup,
        )
        .await
        .expect("runs");
        assert!(finished.stopped.is_some(), "timed out");
        assert_eq!(finished.stdout.text, "ready\ntrapped\ncleaned\n");
        assert_eq!(finished.exit_code, Some(3));
    }

    #[test]
    fn only_processes_outside_the_group_are_signalled_one_by_one() {
        let process = |pid, found_by| Killed {
            pid,
            command: "sh".into(),
            found_by,
        };
        let found = [
            process(10, BY_PROCESS_GROUP),
            process(11, BY_CALL_MARKER),
            process(12, BY_CGROUP),
        ];
        let one_by_one: Vec<i32> = outside_the_group(Some(10), &found).collect();
        assert_eq!(one_by_one, [11, 12], "killpg already reaches 10");
        let without_a_group: Vec<i32> = outside_the_group(None, &found).collect();
        assert_eq!(without_a_group, [10, 11, 12]);
    }

    #[tokio::test]
    async fn without_a_cgroup_the_marker_finds_setsid_but_env_i_escapes() {
        let root = tempfile::tempdir().expect("tempdir");
        let id = std::process::id();
        let (marked, wiped) = (format!("301.{id}1"), format!("301.{id}2"));
        let command = format!("setsid sleep {marked} & env -i setsid sleep {wiped} & sleep 300");
        let finished = run_isolated(
            bash(&command, root.path()),
            &context(root.path()),
            &scope("fallback-test", Duration::from_millis(700)),
            Isolation::ProcessGroup,
        )
        .await
        .expect("runs");
        let stopped = finished.stopped.clone().expect("timed out");
        assert_eq!(stopped.cgroup, None);
        let by = |how: &str| stopped.killed.iter().filter(|k| k.found_by == how).count();
        assert!(by(BY_PROCESS_GROUP) >= 1, "{stopped:?}");
        assert_eq!(by(BY_CALL_MARKER), 1, "{stopped:?}");
        assert_eq!(by(BY_CGROUP), 0, "{stopped:?}");
        assert!(alive_with(&format!("sleep {marked}")).is_none());
        let escaped = alive_with(&format!("sleep {wiped}"));
        if let Some(pid) = escaped {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        assert!(escaped.is_some(), "env -i setsid escapes without a cgroup");
        let outcome = finished.into_outcome(root.path());
        let error = outcome.error.expect("an error");
        assert!(
            error.contains("by process group") && error.contains("1 by call marker"),
            "{error}"
        );
    }

    /// A command that writes its own cgroup's `cgroup.kill` kills itself,
    /// and every process later created in that cgroup would die at birth:
    /// the calls after it must not get that cgroup again.
    #[tokio::test]
    async fn a_call_that_kills_its_own_cgroup_spoils_no_later_call() {
        if CallGroup::create().is_none() {
            eprintln!("no writable cgroup v2 here: skipped");
            return;
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        let (mount, _) = super::super::cgroup::hierarchy(&mountinfo).expect("cgroup2 mount");
        let root = tempfile::tempdir().expect("tempdir");
        let mut spec = bash(
            r#"echo 1 > "$MOUNT$(sed -n 's/^0:://p' /proc/self/cgroup)/cgroup.kill"; sleep 5"#,
            root.path(),
        );
        spec.env
            .insert("MOUNT".into(), mount.to_string_lossy().into_owned());
        let scope_of = |id: &str| scope(id, Duration::from_secs(10));
        let killed = run(spec, &context(root.path()), &scope_of("kills-itself"))
            .await
            .expect("runs");
        assert_eq!(killed.exit_code, Some(128 + 9), "{killed:?}");
        for index in 0..=super::super::cgroup::POOL {
            let after = run(
                bash("echo ok", root.path()),
                &context(root.path()),
                &scope_of(&format!("after-{index}")),
            )
            .await
            .expect("runs");
            assert_eq!(after.exit_code, Some(0), "call {index} after: {after:?}");
        }
    }

    /// Every way into the call's cgroup catches a process that left the
    /// group and wiped its environment: created inside it by `clone3`, or
    /// (where that is refused) a `bash -c` script joining by its first
    /// command, another program through the `sh` wrapper (here `setsid
    /// -w`, which forks the escapee at once and waits for it).
    /// (Where this machine allows no cgroup the test says so and checks
    /// nothing: the CLI's `cgroup_v2_writable` tests cover that case.)
    #[tokio::test]
    async fn every_way_of_starting_starts_the_call_inside_its_cgroup() {
        if CallGroup::create().is_none() {
            eprintln!("no writable cgroup v2 here: skipped");
            return;
        }
        let root = tempfile::tempdir().expect("tempdir");
        let id = std::process::id();
        let ways = [
            (Join::BashScript, Isolation::CgroupIfAvailable),
            (Join::Wrapper, Isolation::CgroupIfAvailable),
            (Join::BashScript, Isolation::CgroupSelfJoin),
            (Join::Wrapper, Isolation::CgroupSelfJoin),
        ];
        for (index, (join, isolation)) in ways.into_iter().enumerate() {
            let wiped = format!("302.{id}{index}");
            let mut spec = bash(
                &format!("env -i setsid sleep {wiped} & sleep 300"),
                root.path(),
            );
            spec.join = join;
            if join == Join::Wrapper {
                spec.program = "setsid".into();
                spec.args = ["-w", "env", "-i", "sleep", &wiped]
                    .map(String::from)
                    .to_vec();
            }
            let finished = run_isolated(
                spec,
                &context(root.path()),
                &scope(&format!("join-test-{index}"), Duration::from_millis(700)),
                isolation,
            )
            .await
            .expect("runs");
            let way = format!("{join:?} {isolation:?}");
            let stopped = finished.stopped.clone().expect("timed out");
            assert!(stopped.cgroup.is_some(), "{way}: {stopped:?}");
            let escaped = alive_with(&format!("sleep {wiped}"));
            if let Some(pid) = escaped {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            assert!(escaped.is_none(), "{way}: the env -i escapee survived");
        }
        // `CgroupIfAvailable` took the `clone3` way, not the self-join
        // (where there is a trampoline for it).
        assert_eq!(
            super::super::spawn_in_cgroup::available(),
            cfg!(target_arch = "x86_64")
        );
    }

    #[test]
    fn a_throttle_is_due_once_per_interval() {
        let throttle = Throttle::new();
        assert!(throttle.due(Duration::from_secs(60)));
        assert!(!throttle.due(Duration::from_secs(60)));
        assert!(throttle.due(Duration::ZERO));
    }

    #[test]
    fn the_join_prefix_quotes_the_cgroup_path() {
        let group = CallGroup::for_path(PathBuf::from("/sys/fs/cgroup/it's here"));
        assert_eq!(
            group.join_then("echo $LINENO"),
            r#"{ builtin echo $$ >'/sys/fs/cgroup/it'\''s here/cgroup.procs'; } 2>/dev/null; echo $LINENO"#
        );
    }

    /// What [`run`] adds to a bare spawn of `bash -c true` (pipes read to
    /// EOF, the marker, the cgroup made and removed), median of 300 each,
    /// interleaved. A measurement, not a check:
    /// `cargo test -p runner-cli --release --lib -- --ignored --nocapture run_cost`.
    #[tokio::test]
    #[ignore = "measurement; run by hand"]
    async fn run_cost() {
        const RUNS: usize = 300;
        let root = tempfile::tempdir().expect("tempdir");
        let context = context(root.path());
        let mut bare = Vec::with_capacity(RUNS);
        let mut grouped = Vec::with_capacity(RUNS);
        let mut self_join = Vec::with_capacity(RUNS);
        let mut cgroup = Vec::with_capacity(RUNS);
        // RUN_COST_GAP_MS: a pause after each call (a move into a cgroup
        // waits for an RCU grace period when no other move came just before).
        let gap = std::env::var("RUN_COST_GAP_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(Duration::ZERO, Duration::from_millis);
        for index in 0..RUNS {
            let started = Instant::now();
            let status = Command::new("bash")
                .args(["-c", "true"])
                .status()
                .await
                .expect("runs");
            bare.push(started.elapsed());
            assert!(status.success());
            for (isolation, times) in [
                (Isolation::ProcessGroup, &mut grouped),
                (Isolation::CgroupSelfJoin, &mut self_join),
                (Isolation::CgroupIfAvailable, &mut cgroup),
            ] {
                let started = Instant::now();
                let finished = run_isolated(
                    bash("true", root.path()),
                    &context,
                    &scope(&format!("cost-{index}"), Duration::from_secs(10)),
                    isolation,
                )
                .await
                .expect("runs");
                times.push(started.elapsed());
                assert_eq!(finished.exit_code, Some(0));
                tokio::time::sleep(gap).await;
            }
        }
        let median = |times: &mut Vec<Duration>| {
            times.sort();
            (times[RUNS / 2], times[RUNS * 99 / 100])
        };
        eprintln!(
            "`bash -c true`, (median, p99) of {RUNS}, {gap:?} after each: bare spawn+wait {:?}; process::run with the process group {:?}; with a cgroup it joins {:?}; created in a cgroup {:?}",
            median(&mut bare),
            median(&mut grouped),
            median(&mut self_join),
            median(&mut cgroup)
        );
    }

    /// Spawn cost of `bash -c true` straight and through the cgroup wrapper
    /// (a real cgroup when this machine allows one). A measurement, not a
    /// check: `cargo test -p runner-cli --lib -- --ignored --nocapture spawn_cost`.
    #[tokio::test]
    #[ignore = "measurement; run by hand"]
    async fn spawn_cost() {
        const RUNS: usize = 300;
        async fn median(mut make: impl FnMut() -> Command) -> Duration {
            let mut times = Vec::with_capacity(RUNS);
            for _ in 0..RUNS {
                let started = Instant::now();
                let status = make().status().await.expect("runs");
                times.push(started.elapsed());
                assert!(status.success());
            }
            times.sort();
            times[RUNS / 2]
        }
        let bash = find_program("bash".as_ref(), &HashMap::new()).expect("bash on PATH");
        let direct = median(|| {
            let mut command = Command::new(&bash);
            command.args(["-c", "true"]).process_group(0);
            command
        })
        .await;
        let group = CallGroup::create();
        let in_cgroup = group.is_some();
        let fake = CallGroup::for_path(PathBuf::from("/nonexistent"));
        let wrapped = median(|| {
            let group = group.as_ref().unwrap_or(&fake);
            let (program, args) = group.wrap(bash.as_os_str(), &["-c".into(), "true".into()]);
            let mut command = Command::new(program);
            command.args(args).process_group(0);
            command
        })
        .await;
        let inline = median(|| {
            let group = group.as_ref().unwrap_or(&fake);
            let mut command = Command::new(&bash);
            command
                .arg("-c")
                .arg(group.join_then("true"))
                .process_group(0);
            command
        })
        .await;
        // What a call pays in all: make its cgroup, run, remove the cgroup.
        let mut times = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let started = Instant::now();
            let group = CallGroup::create().unwrap_or(CallGroup::for_path("/nonexistent".into()));
            let (program, args) = group.wrap(bash.as_os_str(), &["-c".into(), "true".into()]);
            let status = Command::new(program)
                .args(args)
                .process_group(0)
                .status()
                .await
                .expect("runs");
            drop(group);
            times.push(started.elapsed());
            assert!(status.success());
        }
        times.sort();
        let per_call = times[RUNS / 2];
        eprintln!(
            "spawn+wait of `bash -c true`, median of {RUNS}: direct {direct:?}, joining by the script's first command {inline:?}, through the wrapper {wrapped:?}, with a new cgroup per call (wrapper) {per_call:?} (real cgroup: {in_cgroup})"
        );
    }

    /// The child's environment: the runner's own (made once) with the
    /// call's variables winning and the marker added, each name once, in
    /// name order.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_call_environment_is_the_runners_with_the_calls_on_top() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut spec = bash("true", root.path());
        let inherited: HashMap<OsString, OsString> = std::env::vars_os().collect();
        // One name the runner has (overridden), two it has not: one that
        // sorts before every other and one after.
        let overridden = inherited
            .keys()
            .find(|name| name.to_str().is_some_and(|name| name != "PATH"))
            .and_then(|name| name.to_str())
            .unwrap_or("PATH")
            .to_owned();
        for (name, value) in [
            (overridden.as_str(), "mine"),
            ("!first", "1"),
            ("~last", "2"),
        ] {
            spec.env.insert(name.to_owned(), value.to_owned());
        }
        let env = child_environment(&spec, &scope("call-7", Duration::from_secs(1)))
            .expect("no NUL anywhere");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|entry| {
                let entry = entry.to_str().expect("UTF-8 here");
                let (name, value) = entry.split_once('=').expect("NAME=value");
                (name.to_owned(), value.to_owned())
            })
            .collect();
        let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "each name once, in order");
        let value = |name: &str| {
            env.iter()
                .find(|(found, _)| found == name)
                .map(|(_, value)| value.as_str())
        };
        assert_eq!(value(&overridden), Some("mine"));
        assert_eq!(value("!first"), Some("1"));
        assert_eq!(value("~last"), Some("2"));
        assert_eq!(value(CALL_MARKER_VAR), Some("call-7"));
        for (name, inherited_value) in &inherited {
            let name = name.to_str().expect("UTF-8 here");
            if name == overridden || name == CALL_MARKER_VAR {
                continue;
            }
            if crate::env_vars::SECRETS.contains(&name) {
                assert_eq!(value(name), None, "{name} is kept from the call");
            } else {
                assert_eq!(value(name), inherited_value.to_str(), "{name}");
            }
        }
        let added = [overridden.as_str(), "!first", "~last", CALL_MARKER_VAR];
        for name in names {
            assert!(
                added.contains(&name) || inherited.contains_key(std::ffi::OsStr::new(name)),
                "{name} comes from nowhere"
            );
        }
    }

    /// An output pipe grows to [`PIPE_CAPACITY`] once a read fills the
    /// buffer, not before.
    #[tokio::test]
    async fn an_output_pipe_widens_once_its_output_is_bulk() {
        let (writer, reader) = tokio::net::unix::pipe::pipe().expect("a pipe");
        let capacity = |reader: &Widening<tokio::net::unix::pipe::Receiver>| {
            nix::fcntl::fcntl(reader.pipe.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ)
                .expect("F_GETPIPE_SZ")
        };
        let mut reader = Widening {
            pipe: reader,
            widened: false,
        };
        let default = capacity(&reader);
        assert!(default < PIPE_CAPACITY as i32, "{default}");
        let mut writer = writer;
        writer.write_all(b"short").await.expect("write");
        let mut buffer = vec![0u8; FIRST_READ];
        let read = reader.read(&mut buffer).await.expect("read");
        assert_eq!(read, 5);
        assert_eq!(capacity(&reader), default, "a short read leaves it");
        writer
            .write_all(&vec![7u8; FIRST_READ])
            .await
            .expect("write");
        let read = reader.read(&mut buffer).await.expect("read");
        assert_eq!(read, FIRST_READ);
        assert!(
            capacity(&reader) >= PIPE_CAPACITY as i32,
            "a full read widens it"
        );
    }

    #[test]
    fn the_marker_variable_cannot_be_overridden() {
        let args = json!({"env": {CALL_MARKER_VAR: "other"}});
        assert!(parse_env(&args).is_err());
        assert!(parse_env(&json!({"env": {"A": "b"}})).is_ok());
        assert!(parse_env(&json!({"env": {"A=": "b"}})).is_err());
        assert!(parse_env(&json!({"env": ["A"]})).is_err());
    }
}
