//! Running one process for a call: streamed, bounded, and stopped as a tree.
//!
//! Used by `shell` (`bash -c`), the argv tools (`git`, `kubectl`, …) and
//! `claude_code`. Every process gets:
//!
//! * its own process group, and the variable [`CALL_MARKER_VAR`]`=<call id>`
//!   in its environment. On timeout or cancel the group gets SIGTERM, a short
//!   grace, then SIGKILL; processes that left the group (`setsid`, daemons
//!   that double-fork) still carry the variable, so `/proc/*/environ` finds
//!   them and they get the same treatment. A process that also wipes its
//!   environment (`env -i setsid …`) escapes both; only a cgroup would catch
//!   it, and the runner does not require one.
//! * its output read as produced: each chunk goes to a [`Spool`] (head and
//!   tail inline, everything in a file past the inline limit) and, when the
//!   caller streams, to the relay as an `output` frame.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use runner_proto::ws::Stream;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::capture::{Spool, Spooled};
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
const READ_CHUNK: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub program: OsString,
    pub args: Vec<String>,
    pub workdir: PathBuf,
    pub env: HashMap<String, String>,
    /// Written to stdin, which is then closed; `None`: stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
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
    /// `process_group` or `call_marker` (it had left the group).
    pub found_by: &'static str,
}

/// How a process ended.
#[derive(Debug)]
pub struct Finished {
    pub exit_code: Option<i32>,
    pub stdout: Spooled,
    pub stderr: Spooled,
    pub stopped: Option<(StopReason, Vec<Killed>)>,
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
        if truncated {
            result["note"] = json!(
                "output was longer than the inline limit: the middle is cut here; the *_file paths hold all of it (read them with file_read and offset)"
            );
        }
        if self.pipes_left_open {
            result["background_note"] = json!(
                "background processes kept the output open; reading stopped when the command exited"
            );
        }
        let error = match (&self.stopped, &self.wait_error) {
            (Some((reason, killed)), _) => {
                result["killed"] = json!({
                    "process_group": self.pgid,
                    "signals": format!("SIGTERM, then SIGKILL after {} s", KILL_GRACE.as_secs()),
                    "processes": killed.iter().map(|k| json!({
                        "pid": k.pid, "command": k.command, "found_by": k.found_by
                    })).collect::<Vec<_>>(),
                });
                let what = format!(
                    "{} process{} stopped",
                    killed.len(),
                    if killed.len() == 1 { "" } else { "es" }
                );
                Some(match reason {
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

/// Runs `spec` to completion, cancellation or the call's deadline.
pub async fn run(spec: Spec, context: &ToolContext, scope: &CallScope) -> Result<Finished, String> {
    prune_output_dir(context.boundary.root());
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
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
    let mut child = command.spawn().map_err(|error| {
        format!(
            "cannot start {:?} in {}: {error}",
            spec.program,
            spec.workdir.display()
        )
    })?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());

    if let (Some(bytes), Some(mut stdin)) = (spec.stdin, child.stdin.take()) {
        // A process that never reads its stdin must not block us.
        tokio::spawn(async move {
            let _ = stdin.write_all(&bytes).await;
        });
    }
    let stdout = spawn_reader(
        child.stdout.take(),
        Spool::new(INLINE_LIMIT, output_file(context, &scope.call_id, "stdout")),
        scope,
        Stream::Stdout,
    );
    let stderr = spawn_reader(
        child.stderr.take(),
        Spool::new(INLINE_LIMIT, output_file(context, &scope.call_id, "stderr")),
        scope,
        Stream::Stderr,
    );

    let marker = format!("{CALL_MARKER_VAR}={}", scope.call_id);
    let mut stopped = None;
    let status = tokio::select! {
        status = child.wait() => status,
        () = tokio::time::sleep(scope.timeout) => {
            let (status, killed) = stop_tree(pgid, &marker, &mut child).await;
            stopped = Some((StopReason::Timeout, killed));
            status
        }
        () = scope.cancel.cancelled() => {
            let (status, killed) = stop_tree(pgid, &marker, &mut child).await;
            stopped = Some((StopReason::Cancelled, killed));
            status
        }
    };
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

/// SIGTERM to the group and to every process carrying `marker`, up to
/// [`KILL_GRACE`] for them to go, then SIGKILL to whatever is left (the
/// group always: children may outlive the leader).
async fn stop_tree(
    pgid: Option<i32>,
    marker: &str,
    child: &mut tokio::process::Child,
) -> (std::io::Result<std::process::ExitStatus>, Vec<Killed>) {
    let mut killed: Vec<Killed> = Vec::new();
    let mut seen = HashSet::new();
    let mut record = |found: Vec<Killed>, killed: &mut Vec<Killed>| {
        for process in found {
            if seen.insert(process.pid) {
                killed.push(process);
            }
        }
    };
    let found = tree_members(pgid, marker);
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
        let remaining = tree_members(pgid, marker);
        if status.is_some() && remaining.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
        // Late forks get their SIGTERM too.
        let new: Vec<Killed> = remaining
            .into_iter()
            .filter(|process| !killed.iter().any(|k| k.pid == process.pid))
            .collect();
        signal_all(None, &new, Signal::SIGTERM);
        record(new, &mut killed);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // SIGKILL cannot be caught, but a process may fork between our scan and
    // the signal: repeat a few times until nothing is left.
    for _ in 0..5 {
        let found = tree_members(pgid, marker);
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
    (status, killed)
}

fn signal_all(pgid: Option<i32>, processes: &[Killed], signal: Signal) {
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
    for process in processes {
        let _ = kill(Pid::from_raw(process.pid), signal);
    }
}

/// Live processes in the group or carrying the call marker (zombies have
/// no readable environment and are skipped: they are already dead).
fn tree_members(pgid: Option<i32>, marker: &str) -> Vec<Killed> {
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
        if pgid == Some(group) {
            found.push(Killed {
                pid,
                command,
                found_by: "process_group",
            });
            continue;
        }
        let marked = std::fs::read(dir.join("environ")).is_ok_and(|environ| {
            environ
                .split(|byte| *byte == 0)
                .any(|entry| entry == marker.as_bytes())
        });
        if marked {
            found.push(Killed {
                pid,
                command,
                found_by: "call_marker",
            });
        }
    }
    found
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
        let mut buffer = vec![0u8; READ_CHUNK];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(spool) = lock(&shared).as_mut() {
                        spool.push(&buffer[..n]);
                    }
                    if let Some(sink) = sink.as_mut() {
                        sink.send(&buffer[..n]).await;
                    }
                }
            }
        }
        if let Some(sink) = sink.as_mut() {
            sink.flush().await;
        }
    });
    (spool, task)
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

    #[test]
    fn the_marker_variable_cannot_be_overridden() {
        let args = json!({"env": {CALL_MARKER_VAR: "other"}});
        assert!(parse_env(&args).is_err());
        assert!(parse_env(&json!({"env": {"A": "b"}})).is_ok());
        assert!(parse_env(&json!({"env": {"A=": "b"}})).is_err());
        assert!(parse_env(&json!({"env": ["A"]})).is_err());
    }
}
