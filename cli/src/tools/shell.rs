//! The `shell` tool: `bash -c COMMAND` in the workspace, in its own process
//! group, with bounded output capture and a deadline.
//!
//! Stopping a call (timeout or cancel) stops the whole process tree: SIGTERM
//! to the process group, a short grace, then SIGKILL to the group, so a
//! `sleep` started by the script dies with it. The child is started without
//! `pre_exec` (only `process_group`), which lets std use `posix_spawn`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::capture::Capture;
use super::{optional_string_arg, string_arg, ToolContext, ToolOutcome};

/// Output kept inline per stream; the rest is dropped from the middle.
pub const INLINE_LIMIT: usize = 1024 * 1024;
/// Time between SIGTERM and SIGKILL when stopping a process group.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// After the shell exits, how long background children may keep our pipes
/// open before we stop reading (and answer) anyway.
pub const PIPE_DRAIN_TIMEOUT: Duration = Duration::from_millis(500);

/// Why a call's processes were stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Timeout,
    Cancelled,
}

pub async fn run(
    args: Value,
    context: &ToolContext,
    cancel: CancellationToken,
    timeout: Duration,
) -> ToolOutcome {
    match run_inner(args, context, cancel, timeout).await {
        Ok(outcome) => outcome,
        Err(message) => ToolOutcome::error(message),
    }
}

async fn run_inner(
    args: Value,
    context: &ToolContext,
    cancel: CancellationToken,
    timeout: Duration,
) -> Result<ToolOutcome, String> {
    let command = string_arg(&args, "command")?;
    if let Some(permissions) = &context.permissions {
        let decision = permissions.check(command);
        if !decision.allowed {
            return Err(format!(
                "denied by the runner's permission file: {}",
                decision.summary()
            ));
        }
    }
    let workdir = match optional_string_arg(&args, "workdir")? {
        Some(dir) => context
            .boundary
            .resolve_existing(dir)
            .map_err(|error| format!("workdir: {error}"))?,
        None => context.boundary.root().to_path_buf(),
    };
    let env = parse_env(&args)?;

    let mut child = Command::new("bash");
    child
        .arg("-c")
        .arg(command)
        .current_dir(&workdir)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = child
        .spawn()
        .map_err(|error| format!("cannot start bash: {error}"))?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());

    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let stdout_task = spawn_reader(stdout);
    let stderr_task = spawn_reader(stderr);

    let mut stopped = None;
    let status = tokio::select! {
        status = child.wait() => status,
        () = tokio::time::sleep(timeout) => {
            stopped = Some(StopReason::Timeout);
            stop_group(pgid, &mut child).await
        }
        () = cancel.cancelled() => {
            stopped = Some(StopReason::Cancelled);
            stop_group(pgid, &mut child).await
        }
    };

    let (stdout, stdout_open) = finish_reader(stdout_task).await;
    let (stderr, stderr_open) = finish_reader(stderr_task).await;
    let truncated = stdout.truncated() || stderr.truncated();
    let (stdout_bytes, stderr_bytes) = (stdout.total(), stderr.total());

    let exit_code = match &status {
        Ok(status) => status
            .code()
            .or_else(|| signal_of(status).map(|signal| 128 + signal)),
        Err(_) => None,
    };
    let mut result = json!({
        "stdout": stdout.into_text(),
        "stderr": stderr.into_text(),
        "stdout_bytes": stdout_bytes,
        "stderr_bytes": stderr_bytes,
        "truncated": truncated,
    });
    if stdout_open || stderr_open {
        result["note"] = json!(
            "background processes kept the output open; reading stopped when the shell exited"
        );
    }
    let error = match (stopped, &status) {
        (Some(StopReason::Timeout), _) => Some(format!(
            "timed out after {}s; the process group was stopped",
            timeout.as_secs()
        )),
        (Some(StopReason::Cancelled), _) => {
            Some("cancelled; the process group was stopped".to_owned())
        }
        (None, Err(error)) => Some(format!("waiting for bash failed: {error}")),
        (None, Ok(_)) => None,
    };
    if stopped.is_some() {
        result["killed"] = json!({ "process_group": pgid, "signal": "SIGTERM, then SIGKILL after grace" });
    }
    Ok(ToolOutcome {
        result,
        exit_code,
        error,
    })
}

fn parse_env(args: &Value) -> Result<HashMap<String, String>, String> {
    let mut env = HashMap::new();
    match args.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (key, value) in map {
                let Value::String(value) = value else {
                    return Err(format!("env {key:?} must be a string"));
                };
                if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
                    return Err(format!("env {key:?} is not a valid variable"));
                }
                env.insert(key.clone(), value.clone());
            }
        }
        Some(_) => return Err("argument \"env\" must be an object of strings".to_owned()),
    }
    Ok(env)
}

/// SIGTERM to the group, wait up to [`KILL_GRACE`], then SIGKILL to the group
/// (always: children may outlive the leader).
async fn stop_group(
    pgid: Option<i32>,
    child: &mut tokio::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
    }
    let status = match tokio::time::timeout(KILL_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    if let Some(pgid) = pgid {
        // ESRCH (group already empty) is the good case.
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    status
}

/// Reads a pipe into a shared capture, so that what was read is kept even
/// when we stop waiting for EOF.
fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(
    reader: Option<R>,
) -> (Arc<Mutex<Capture>>, tokio::task::JoinHandle<()>) {
    let capture = Arc::new(Mutex::new(Capture::new(INLINE_LIMIT)));
    let shared = Arc::clone(&capture);
    let task = tokio::spawn(async move {
        let Some(mut reader) = reader else { return };
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => lock(&shared).push(&buffer[..n]),
            }
        }
    });
    (capture, task)
}

fn lock(capture: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    // A poisoned lock only means a reader panicked mid-push; the bytes kept
    // so far are still valid.
    capture.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits for a reader to reach EOF; if background processes hold the pipe,
/// gives up after [`PIPE_DRAIN_TIMEOUT`]. Returns the capture and whether the
/// pipe was still open.
async fn finish_reader(
    (capture, task): (Arc<Mutex<Capture>>, tokio::task::JoinHandle<()>),
) -> (Capture, bool) {
    let abort = task.abort_handle();
    let still_open = tokio::time::timeout(PIPE_DRAIN_TIMEOUT, task).await.is_err();
    if still_open {
        abort.abort();
    }
    let taken = std::mem::replace(&mut *lock(&capture), Capture::new(0));
    (taken, still_open)
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
