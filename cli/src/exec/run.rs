//! Running one process for a call: streamed, bounded, and stopped as a tree.
//!
//! Every process gets:
//!
//! * its own process group, and the variable [`CALL_MARKER_VAR`]`=<call id>`
//!   in its environment. On timeout or cancel the group gets SIGTERM, a short
//!   grace, then SIGKILL; processes that left the group (`setsid`, daemons
//!   that double-fork) still carry the variable, so `/proc/*/environ` finds
//!   them and they get the same treatment ([`super::tree`]).
//! * where the runner can make one (Linux, cgroup v2 writable: see
//!   [`super::cgroup`]), its own cgroup, which also holds the processes that
//!   left the group *and* wiped their environment (`env -i setsid …`); the
//!   final SIGKILL goes to the whole cgroup. Without a cgroup such a process
//!   escapes: the process group and the marker are all there is.
//! * its output read as produced ([`super::pipes`]): each chunk goes to a
//!   [`Spool`] (head and tail inline, everything in a file past the inline
//!   limit) and, when the caller streams, to the relay as an `output` frame.

use std::path::{Path, PathBuf};

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::capture::{Spool, Spooled};
use super::cgroup::CallGroup;
use super::kept::{
    display_path, enforce_cap, output_cap, output_file, prune_output_dir, INLINE_LIMIT,
};
use super::pipes::{finish_reader, spawn_reader};
use super::spawn::start;
use super::spec::{Isolation, Spec};
use super::tree::{
    stop_tree, StopReason, Stopped, Tree, BY_CALL_MARKER, BY_CGROUP, BY_PROCESS_GROUP, KILL_GRACE,
};
use crate::call::{CallScope, ToolOutcome, CALL_MARKER_VAR};
use runner_proto::ws::Stream;

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
    pub limit: crate::call::Limit,
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
                        format!("{}; {what}", self.limit.timed_out())
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

/// Runs `spec` to completion, cancellation or the call's deadline, its
/// processes kept together as `isolation` asks; output too long for the
/// result is kept under `workspace`.
pub(in crate::exec) async fn run_spec(
    spec: Spec,
    workspace: &Path,
    scope: &CallScope,
    isolation: Isolation,
) -> Result<Finished, String> {
    prune_output_dir(workspace);
    let group = match isolation {
        Isolation::CgroupIfAvailable | Isolation::CgroupSelfJoin => CallGroup::create(),
        Isolation::ProcessGroup => None,
    };
    let mut child = start(&spec, group.as_ref(), &scope.call_id, isolation)?;
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
        None => Spool::new(INLINE_LIMIT, output_file(workspace, &scope.call_id, name)),
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
    let own: Vec<&std::path::Path> = [&stdout.file, &stderr.file]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    if !own.is_empty() {
        let removed = enforce_cap(workspace, output_cap(), &own);
        if !removed.is_empty() {
            tracing::info!(
                removed = removed.len(),
                cap_mb = output_cap() / (1024 * 1024),
                "kept output over its cap: removed the oldest files"
            );
        }
    }
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
        limit: scope.limit,
    })
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use tokio::process::Command;

    use super::super::pipes::PIPE_DRAIN_TIMEOUT;
    use super::super::procfs::live_processes;
    use super::super::program::find_program;
    use super::super::spec::Join;
    use super::*;

    fn scope(call_id: &str, timeout: Duration) -> CallScope {
        CallScope {
            call_id: call_id.to_owned(),
            cancel: tokio_util::sync::CancellationToken::new(),
            timeout,
            limit: crate::call::Limit::call(timeout.as_secs()),
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
        live_processes().find_map(|process| {
            let cmdline = std::fs::read(process.dir.join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            text.contains(needle).then_some(process.pid)
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
        let finished = run_spec(
            bash(
                &format!("echo before; sleep {marker} & echo after >&2"),
                root.path(),
            ),
            root.path(),
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
        let finished = run_spec(
            bash(
                "trap 'head -c 3000000 /dev/zero | tr \"\\0\" x; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
                root.path(),
            ),
            root.path(),
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
        let finished = run_spec(
            bash(
                "trap 'echo trapped; sleep 0.4 && echo cleaned; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
                root.path(),
            ),
            root.path(),
            &scope("trap-clean-up-test", Duration::from_millis(700)),
            Isolation::ProcessGroup,
        )
        .await
        .expect("runs");
        assert!(finished.stopped.is_some(), "timed out");
        assert_eq!(finished.stdout.text, "ready\ntrapped\ncleaned\n");
        assert_eq!(finished.exit_code, Some(3));
    }

    #[tokio::test]
    async fn without_a_cgroup_the_marker_finds_setsid_but_env_i_escapes() {
        let root = tempfile::tempdir().expect("tempdir");
        let id = std::process::id();
        let (marked, wiped) = (format!("301.{id}1"), format!("301.{id}2"));
        let command = format!("setsid sleep {marked} & env -i setsid sleep {wiped} & sleep 300");
        let finished = run_spec(
            bash(&command, root.path()),
            root.path(),
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
        if super::super::cgroup::skips_without_call_cgroup(
            "a_call_that_kills_its_own_cgroup_spoils_no_later_call",
        ) {
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
        let killed = run_spec(
            spec,
            root.path(),
            &scope_of("kills-itself"),
            Isolation::CgroupIfAvailable,
        )
        .await
        .expect("runs");
        assert_eq!(killed.exit_code, Some(128 + 9), "{killed:?}");
        for index in 0..=super::super::cgroup::POOL {
            let after = run_spec(
                bash("echo ok", root.path()),
                root.path(),
                &scope_of(&format!("after-{index}")),
                Isolation::CgroupIfAvailable,
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
        if super::super::cgroup::skips_without_call_cgroup(
            "every_way_of_starting_starts_the_call_inside_its_cgroup",
        ) {
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
            let finished = run_spec(
                spec,
                root.path(),
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
        assert_eq!(super::super::spawn::fast_path_available(), cfg!(fast_spawn));
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
                let finished = run_spec(
                    bash("true", root.path()),
                    root.path(),
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
            "`bash -c true`, (median, p99) of {RUNS}, {gap:?} after each: bare spawn+wait {:?}; exec with the process group {:?}; with a cgroup it joins {:?}; created in a cgroup {:?}",
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
    #[cfg(fast_spawn)]
    #[test]
    fn the_call_environment_is_the_runners_with_the_calls_on_top() {
        let root = tempfile::tempdir().expect("tempdir");
        let mut spec = bash("true", root.path());
        let inherited: HashMap<std::ffi::OsString, std::ffi::OsString> =
            std::env::vars_os().collect();
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
        let env =
            super::super::environment::child_environment(&spec, "call-7").expect("no NUL anywhere");
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
}
