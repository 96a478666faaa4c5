//! Starting a call's first process, with its pipes, in a process group of
//! its own and, where the call has one, inside its cgroup; where the
//! runner hides its files, in the tools' namespaces ([`super::tool_view`]).
//!
//! Two ways, one boundary: [`clone3`] creates the process inside the
//! cgroup and the namespaces (the fast path: `unsafe`, x86_64 Linux, the
//! `clone3` feature; used where the kernel allows it), [`command`] starts
//! it with std's `Command` and lets it move itself in, through `nsenter`
//! for the namespaces (the plain path: everywhere else, and whenever the
//! fast path says it cannot). Tests below start the same process both
//! ways and compare everything they can see.

mod command;
// `fast_spawn` (set by build.rs): x86_64 Linux with the `clone3` feature.
#[cfg(fast_spawn)]
mod clone3;

#[cfg(fast_spawn)]
use std::ffi::OsString;
use std::os::fd::AsFd;
#[cfg(fast_spawn)]
use std::path::Path;

use tokio::io::AsyncRead;

#[cfg(fast_spawn)]
use super::cgroup::WRAPPER_SHELL;
use super::cgroup::{hierarchy, own_cgroup, CallGroup};
#[cfg(fast_spawn)]
use super::environment::child_environment;
use super::pipes::Widening;
#[cfg(fast_spawn)]
use super::program::find_program;
use super::spec::{Isolation, Spec};
use super::tool_view::{self, View};

/// Starts `spec` as `isolation` asks, in the tools' namespaces once the
/// runner has them ([`tool_view::install`]): created inside `group` and
/// the namespaces where that is possible, else by the plain path (which
/// joins `group` and enters the namespaces itself).
pub(in crate::exec) fn start(
    spec: &Spec,
    group: Option<&CallGroup>,
    call_id: &str,
    isolation: Isolation,
) -> Result<Running, String> {
    start_in_view(spec, group, call_id, isolation, tool_view::installed())
}

fn start_in_view(
    spec: &Spec,
    group: Option<&CallGroup>,
    call_id: &str,
    isolation: Isolation,
    view: Option<&View>,
) -> Result<Running, String> {
    let fast = match isolation {
        Isolation::CgroupIfAvailable => group.is_some() || view.is_some(),
        Isolation::ProcessGroup => view.is_some(),
        Isolation::CgroupSelfJoin => false,
    };
    if fast {
        if let Some(started) = start_created(spec, group, call_id, view)? {
            return Ok(started);
        }
    }
    command::spawn(spec, group, call_id, view).map(Running::Spawned)
}

/// Starts `sh -c :` the way calls start, in `view`, and waits for it: the
/// error says why calls could not enter it here.
pub(in crate::exec) async fn try_view(view: &View) -> Result<(), String> {
    let spec = Spec {
        program: "/bin/sh".into(),
        arg0: Some("sh".to_owned()),
        args: vec!["-c".to_owned(), ":".to_owned()],
        workdir: "/".into(),
        env: std::collections::HashMap::new(),
        stdin: None,
        join: super::spec::Join::Wrapper,
    };
    let mut child = start_in_view(
        &spec,
        None,
        "tool-view-probe",
        Isolation::ProcessGroup,
        Some(view),
    )?;
    let (_, _, stderr) = child.take_pipes();
    let mut error = String::new();
    if let Some(mut stderr) = stderr {
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut error).await;
    }
    let status = child.wait().await.map_err(|error| error.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`sh -c :` in the namespace ended with {status}: {}",
            error.trim()
        ))
    }
}

/// Whether a call's process can be created inside its cgroup here (built
/// with the fast path, and `clone3` not refused by this kernel).
#[cfg(test)]
pub(in crate::exec) fn fast_path_available() -> bool {
    #[cfg(fast_spawn)]
    return clone3::available();
    #[cfg(not(fast_spawn))]
    return false;
}

/// A call's running process, however it was started.
pub(in crate::exec) enum Running {
    /// By `tokio::process::Command` (no cgroup, or one it joins itself).
    Spawned(tokio::process::Child),
    /// Created inside the call's cgroup.
    #[cfg(fast_spawn)]
    InCgroup(clone3::Child),
}

pub(in crate::exec) type Input = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;
pub(in crate::exec) type Output = Box<dyn AsyncRead + Send + Unpin>;

impl Running {
    pub(in crate::exec) fn id(&self) -> Option<u32> {
        match self {
            Running::Spawned(child) => child.id(),
            #[cfg(fast_spawn)]
            Running::InCgroup(child) => Some(child.id()),
        }
    }

    /// stdin (when piped), stdout and stderr, with larger output pipes.
    pub(in crate::exec) fn take_pipes(
        &mut self,
    ) -> (Option<Input>, Option<Output>, Option<Output>) {
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
            #[cfg(fast_spawn)]
            Running::InCgroup(child) => (
                input(child.stdin.take()),
                output(child.stdout.take()),
                output(child.stderr.take()),
            ),
        }
    }

    pub(in crate::exec) async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Running::Spawned(child) => child.wait().await,
            #[cfg(fast_spawn)]
            Running::InCgroup(child) => child.wait().await,
        }
    }

    pub(in crate::exec) fn try_wait(
        &mut self,
    ) -> std::io::Result<Option<std::process::ExitStatus>> {
        match self {
            Running::Spawned(child) => child.try_wait(),
            #[cfg(fast_spawn)]
            Running::InCgroup(child) => child.try_wait(),
        }
    }

    pub(in crate::exec) fn start_kill(&mut self) -> std::io::Result<()> {
        match self {
            Running::Spawned(child) => child.start_kill(),
            #[cfg(fast_spawn)]
            Running::InCgroup(child) => child.start_kill(),
        }
    }
}

/// Starts `spec` with `clone3` ([`clone3`]), inside `group` and `view`
/// where given: no move into the cgroup, no wrapper, no script prefix.
/// `Ok(None)` where that is not possible here: the caller takes the plain
/// path.
#[cfg(fast_spawn)]
fn start_created(
    spec: &Spec,
    group: Option<&CallGroup>,
    call_id: &str,
    view: Option<&View>,
) -> Result<Option<Running>, String> {
    use clone3::{Error, Request};
    if !clone3::available() {
        return Ok(None);
    }
    // Held open by the cgroup since it was made; one whose files could not
    // be opened is left to the plain path.
    let cgroup = match group.map(CallGroup::dir_fd) {
        Some(None) => return Ok(None),
        Some(Some(cgroup)) => Some(cgroup),
        None => None,
    };
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
        cgroup,
        namespaces: view.map(View::namespaces),
        program: &program,
        argv,
        env: child_environment(spec, call_id).map_err(|error| {
            format!(
                "cannot start {:?} in {}: {error}",
                spec.program,
                spec.workdir.display()
            )
        })?,
        workdir: &spec.workdir,
        stdin: spec.stdin.is_some(),
    };
    match clone3::spawn(&request) {
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

#[cfg(not(fast_spawn))]
fn start_created(
    _: &Spec,
    _: Option<&CallGroup>,
    _: &str,
    _: Option<&View>,
) -> Result<Option<Running>, String> {
    Ok(None)
}

/// One line on per-call cgroups here, for `runner doctor` and the
/// runner's start-up log: whether calls get one, whether they start inside
/// it (a probe: `sh -c :` created in a fresh call cgroup), and, where they
/// must move in instead, the mount option that makes moving cheap.
pub async fn describe() -> String {
    let Some(own) = own_cgroup() else {
        return "not available (no writable cgroup v2 here): calls are stopped by process group and marker only".to_owned();
    };
    let Some(group) = CallGroup::create() else {
        return format!(
            "not available (cannot make a cgroup under {}): calls are stopped by process group and marker only",
            own.display()
        );
    };
    let refused = match start_inside(&group).await {
        Ok(()) => {
            return format!(
                "each call gets one under {}, and starts inside it (clone3)",
                own.display()
            )
        }
        Err(why) => why,
    };
    let hierarchy = std::fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|mountinfo| hierarchy(&mountinfo));
    let start = format!(
        "each call gets one under {}; starting calls inside it was refused ({refused}), so each call moves in",
        own.display()
    );
    match hierarchy {
        Some((_, true)) => format!("{start} (favordynmods is on: moves are cheap)"),
        Some((mount, false)) => format!(
            "{start}, and cgroup2 is mounted without favordynmods, so each move can wait for an RCU grace period, which every call after a pause pays: `mount -o remount,favordynmods {}` as root, at each boot, removes that",
            mount.display()
        ),
        None => start,
    }
}

/// Creates a process inside `group` the way calls are started, and waits
/// for it; the error says why that is not possible here. A refusal of
/// `clone3` as a whole is remembered, so calls go straight to moving in.
#[cfg(fast_spawn)]
async fn start_inside(group: &CallGroup) -> Result<(), String> {
    use clone3::{spawn, Request};
    let cgroup = group
        .dir_fd()
        .ok_or("the call cgroup's directory could not be opened")?;
    let request = Request {
        cgroup: Some(cgroup),
        namespaces: None,
        program: Path::new(WRAPPER_SHELL),
        argv: vec!["sh".into(), "-c".into(), ":".into()],
        env: Vec::new(),
        workdir: Path::new("/"),
        stdin: false,
    };
    let mut child = spawn(&request).map_err(|error| error.to_string())?;
    let status = child.wait().await.map_err(|error| error.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the probe `sh -c :` ended with {status}"))
    }
}

#[cfg(not(fast_spawn))]
async fn start_inside(_: &CallGroup) -> Result<(), String> {
    Err("this runner was built without clone3 (x86_64 Linux, feature `clone3`)".to_owned())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::super::spec::Join;
    use super::*;

    /// What a started process showed: exit code, stdout (its cgroup's
    /// path replaced by `<call cgroup>` once checked to be the call's),
    /// stderr.
    async fn started(spec: &Spec, isolation: Isolation) -> Option<(Option<i32>, String, String)> {
        let group = CallGroup::create()?;
        let mut child = start(spec, Some(&group), "same-call", isolation).expect("starts");
        let (stdin, stdout, stderr) = child.take_pipes();
        let mut stdin = stdin.expect("stdin is piped");
        stdin.write_all(b"hello\n").await.expect("write");
        drop(stdin);
        let (mut out, mut err) = (String::new(), String::new());
        let read_out = async {
            if let Some(mut pipe) = stdout {
                pipe.read_to_string(&mut out).await.expect("stdout");
            }
        };
        let read_err = async {
            if let Some(mut pipe) = stderr {
                pipe.read_to_string(&mut err).await.expect("stderr");
            }
        };
        tokio::join!(read_out, read_err);
        let status = child.wait().await.expect("waits");
        let seen = out
            .lines()
            .find_map(|line| line.strip_prefix("cgroup: "))
            .expect("the cgroup line")
            .to_owned();
        assert!(
            !seen.is_empty() && group.path().ends_with(seen.trim_start_matches('/')),
            "{isolation:?}: in {seen:?}, not in {}",
            group.path().display()
        );
        Some((status.code(), out.replace(&seen, "<call cgroup>"), err))
    }

    /// Both ways of starting a call's process (created inside its cgroup
    /// by `clone3` where built, moving itself in by the plain path) give
    /// the same process: same exit code, output, working directory,
    /// argv, environment, stdin, and membership of the call's cgroup; for
    /// a bash script and for a program under the wrapper.
    #[tokio::test]
    async fn both_ways_of_starting_give_the_same_process() {
        if super::super::cgroup::skips_without_call_cgroup(
            "both_ways_of_starting_give_the_same_process",
        ) {
            return;
        }
        let root = tempfile::tempdir().expect("tempdir");
        let script = r#"read line; echo "in: $line"; echo "cgroup: $(sed -n 's/^0:://p' /proc/self/cgroup)"; echo "cwd: $PWD"; echo "argv0: $0"; echo "marker: $RUNNER_CALL_ID"; echo "var: $MINE"; echo err >&2; exit 7"#;
        for join in [Join::BashScript, Join::Wrapper] {
            let spec = Spec {
                program: "bash".into(),
                arg0: None,
                args: vec!["-c".to_owned(), script.to_owned()],
                workdir: root.path().to_owned(),
                env: HashMap::from([("MINE".to_owned(), "x y".to_owned())]),
                stdin: Some(b"hello\n".to_vec()),
                join,
            };
            let fast = started(&spec, Isolation::CgroupIfAvailable).await;
            let plain = started(&spec, Isolation::CgroupSelfJoin).await;
            let (fast, plain) = (fast.expect("a cgroup"), plain.expect("a cgroup"));
            assert_eq!(fast, plain, "{join:?}");
            assert_eq!(fast.0, Some(7), "{fast:?}");
            assert!(
                fast.1.starts_with("in: hello\ncgroup: <call cgroup>\n"),
                "{fast:?}"
            );
            assert!(fast.1.contains("marker: same-call\nvar: x y"), "{fast:?}");
            assert_eq!(fast.2, "err\n");
        }
        assert_eq!(fast_path_available(), cfg!(fast_spawn));
    }

    /// A namespace like the runner's tools get, with `hidden` covered by
    /// an empty tmpfs, made and held by util-linux's `unshare` (root only;
    /// the runner's own helper is its binary, which unit tests lack).
    async fn view_hiding(hidden: &Path) -> View {
        use tokio::io::AsyncBufReadExt;
        let mut holder = tokio::process::Command::new("unshare")
            .args(["--mount", "--propagation", "slave", "sh", "-c"])
            .arg(r#"mount -t tmpfs -o ro,mode=0755 runner-hidden "$1" && echo ready && exec cat"#)
            .arg("sh")
            .arg(hidden)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("unshare starts");
        let stdout = holder.stdout.take().expect("stdout");
        let mut line = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .expect("the holder answers");
        assert_eq!(line, "ready\n");
        View::held_by(holder, tool_view::Plan::default()).expect("the view opens")
    }

    /// Every way of starting a call's process in the tools' namespaces
    /// (created inside them by `clone3`, with and without a cgroup; by
    /// `nsenter` on the plain path, with and without one) gives the same
    /// process: in the namespace, the hidden directory empty and the
    /// working directory, argv, environment, stdin and exit code as asked.
    #[tokio::test]
    async fn every_way_of_starting_in_the_tools_view_gives_the_same_process() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: making a mount namespace with util-linux's unshare needs root");
            return;
        }
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path().canonicalize().expect("canonical");
        let (hidden, workdir) = (root.join("hidden"), root.join("work"));
        std::fs::create_dir_all(&hidden).expect("hidden");
        std::fs::create_dir_all(&workdir).expect("work");
        std::fs::write(hidden.join("secret"), "the secret").expect("secret");
        let view = view_hiding(&hidden).await;
        let namespace = |pid: &str| {
            std::fs::read_link(format!("/proc/{pid}/ns/mnt"))
                .expect("mount namespace")
                .display()
                .to_string()
        };
        let script = format!(
            r#"read line; echo "in: $line"; echo "ns: $(readlink /proc/self/ns/mnt)"; ls -A '{}' | wc -l; cat '{}/secret'; pwd; echo "argv0: $0"; echo "marker: $RUNNER_CALL_ID"; echo "var: $MINE"; echo err >&2; exit 7"#,
            hidden.display(),
            hidden.display()
        );
        let spec = Spec {
            program: "bash".into(),
            arg0: None,
            args: vec!["-c".to_owned(), script],
            workdir: workdir.clone(),
            env: HashMap::from([("MINE".to_owned(), "x y".to_owned())]),
            stdin: Some(b"hello\n".to_vec()),
            join: Join::BashScript,
        };
        let group = CallGroup::create();
        let fast = fast_path_available();
        let mut ways: Vec<(&str, Running)> = vec![
            (
                "clone3, or nsenter where it is refused",
                start_in_view(
                    &spec,
                    None,
                    "same-call",
                    Isolation::ProcessGroup,
                    Some(&view),
                )
                .expect("starts"),
            ),
            (
                "nsenter",
                command::spawn(&spec, None, "same-call", Some(&view))
                    .map(Running::Spawned)
                    .expect("starts"),
            ),
        ];
        if let Some(group) = &group {
            ways.push((
                "clone3 in a cgroup",
                start_in_view(
                    &spec,
                    Some(group),
                    "same-call",
                    Isolation::CgroupIfAvailable,
                    Some(&view),
                )
                .expect("starts"),
            ));
            ways.push((
                "nsenter, then into a cgroup",
                start_in_view(
                    &spec,
                    Some(group),
                    "same-call",
                    Isolation::CgroupSelfJoin,
                    Some(&view),
                )
                .expect("starts"),
            ));
        }
        let expected = format!(
            "in: hello\nns: {}\n0\n{}\nargv0: bash\nmarker: same-call\nvar: x y\n",
            namespace(&view_pid(&view)),
            workdir.display()
        );
        assert_ne!(namespace("self"), namespace(&view_pid(&view)));
        for (way, mut child) in ways {
            if way.starts_with("clone3") && !fast {
                eprintln!("{way}: clone3 is not available here, so this is nsenter again");
            }
            let (stdin, stdout, stderr) = child.take_pipes();
            let mut stdin = stdin.expect("stdin is piped");
            stdin.write_all(b"hello\n").await.expect("write");
            drop(stdin);
            let (mut out, mut err) = (String::new(), String::new());
            let (mut stdout, mut stderr) = (stdout.expect("stdout"), stderr.expect("stderr"));
            let (read_out, read_err) = tokio::join!(
                stdout.read_to_string(&mut out),
                stderr.read_to_string(&mut err)
            );
            read_out.expect("stdout reads");
            read_err.expect("stderr reads");
            let status = child.wait().await.expect("waits");
            assert_eq!(out, expected, "{way}: {err}");
            assert!(
                err.contains("No such file"),
                "{way}: the secret was read: {err}"
            );
            assert!(err.ends_with("err\n"), "{way}: {err}");
            assert_eq!(status.code(), Some(7), "{way}");
        }
    }

    /// The holder's pid, as the `/proc` path `nsenter` is given names it.
    fn view_pid(view: &View) -> String {
        let (_, args) = view.nsenter().expect("nsenter is installed");
        args.iter()
            .find_map(|arg| arg.strip_prefix("--mount=/proc/"))
            .and_then(|rest| rest.split('/').next())
            .expect("the holder's pid")
            .to_owned()
    }

    /// Where this machine lets us make call cgroups, the probe creates a
    /// process inside one and the description says calls start there.
    #[tokio::test]
    async fn the_description_says_how_calls_get_into_their_cgroup() {
        let description = describe().await;
        if own_cgroup().is_none() {
            eprintln!("no cgroup v2 here: only the description of that is checked");
            assert!(description.starts_with("not available"), "{description}");
            return;
        }
        if cfg!(fast_spawn) {
            assert!(
                description.contains("and starts inside it (clone3)"),
                "{description}"
            );
        } else {
            assert!(
                description.contains("so each call moves in"),
                "{description}"
            );
        }
    }

    /// `unsafe` is denied in the workspace and allowed in three modules
    /// only, [`clone3`], the relay's `heap.rs` (`malloc_trim`) and its
    /// `store/sqlite_audit_fast_path.rs` (SQLite's calls): a new exception
    /// in any crate must be argued for, not slipped in. The whole workspace
    /// is scanned from here (source files, not a dependency on the relay).
    #[test]
    fn unsafe_code_is_allowed_in_three_modules_only() {
        fn walk(dir: &Path, found: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|ext| ext == "rs") {
                    let text = std::fs::read_to_string(&path).expect("source is UTF-8");
                    let allows = ["allow", "expect"]
                        .iter()
                        .any(|how| text.contains(&format!("{how}(unsafe_code)")));
                    if allows {
                        found.push(path.display().to_string());
                    }
                }
            }
        }
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("cli/ sits in the workspace");
        let mut found = Vec::new();
        for krate in ["cli", "relay", "policy", "proto", "bench"] {
            let root = workspace.join(krate);
            assert!(root.join("src").is_dir(), "{} is a crate", root.display());
            for dir in ["src", "tests"] {
                walk(&root.join(dir), &mut found);
            }
        }
        found.sort();
        let allowed = [
            "cli/src/exec/spawn/clone3.rs",
            "relay/src/heap.rs",
            "relay/src/store/sqlite_audit_fast_path.rs",
        ];
        assert_eq!(found.len(), allowed.len(), "{found:?}");
        for (path, allowed) in found.iter().zip(allowed) {
            assert!(path.ends_with(allowed), "{found:?}");
        }
    }
}
