//! The plain way to start a call's process: std's `Command` (through
//! tokio's), in a process group of its own; where the call has a cgroup,
//! the process moves itself into it before it runs anything of the call
//! ([`Join`]); where the runner hides its files, `nsenter` takes it into
//! the tools' namespaces first ([`in_view`]).

use std::process::Stdio;

use tokio::process::Command;

use crate::call::CALL_MARKER_VAR;
use crate::exec::cgroup::{CallGroup, WRAPPER_SHELL};
use crate::exec::program::find_program;
use crate::exec::spec::{Join, Spec};
use crate::exec::tool_view::View;

/// What runs in the tools' namespaces, after `nsenter` (which leaves the
/// process at the namespace's root): `cd` to the working directory as the
/// namespace sees it (a directory opened outside would lead back out),
/// join the cgroup when one is named, then `exec` the program by the name
/// it was asked by, as [`CallGroup::wrap`] does.
const VIEW_SCRIPT: &str =
    r#"cd -- "$1" || exit 127; [ -z "$2" ] || { echo $$ > "$2"; } 2>/dev/null; shift 2; exec "$@""#;

/// Starts `spec` with `tokio::process::Command`; with a cgroup, the process
/// moves itself in first ([`Join`]); with a view, it enters it first.
pub(super) fn spawn(
    spec: &Spec,
    group: Option<&CallGroup>,
    call_id: &str,
    view: Option<&View>,
) -> Result<tokio::process::Child, String> {
    let mut command = match view {
        Some(view) => in_view(spec, group, view)?,
        None => outside(spec, group)?,
    };
    crate::exec::tool_environment(&mut command);
    command
        .current_dir(&spec.workdir)
        .envs(&spec.env)
        .env(CALL_MARKER_VAR, call_id)
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

/// The command for `spec` in the runner's own namespaces.
fn outside(spec: &Spec, group: Option<&CallGroup>) -> Result<Command, String> {
    let command = match (group, spec.join, spec.args.as_slice()) {
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
            // The wrapper `exec`s the program (by the same PATH search).
            let program = by_name(spec)?;
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
    Ok(command)
}

/// `nsenter` into `view`, then [`VIEW_SCRIPT`] with the working directory,
/// the cgroup's `cgroup.procs` (or nothing) and the program.
fn in_view(spec: &Spec, group: Option<&CallGroup>, view: &View) -> Result<Command, String> {
    let Some((nsenter, enter)) = view.nsenter() else {
        return Err(format!(
            "cannot start {:?}: the runner hides its files from tools, which without clone3 takes nsenter (util-linux), and there is none on the runner's PATH",
            spec.program
        ));
    };
    let program = by_name(spec)?;
    let procs = group.map(|group| group.path().join("cgroup.procs"));
    let mut command = Command::new(nsenter);
    command
        .args(enter)
        .args([WRAPPER_SHELL, "-c", VIEW_SCRIPT, "runner-view"])
        .arg(&spec.workdir)
        .arg(
            procs
                .as_deref()
                .map_or("".as_ref(), |procs| procs.as_os_str()),
        )
        .arg(program)
        .args(&spec.args);
    Ok(command)
}

/// The program as a wrapper `exec`s it: `sh` cannot give a program
/// another `argv[0]` (no `exec -a`), so a program asked for by name is
/// `exec`ed by that name, which `sh` finds on the same PATH. Looked up
/// first, so a missing one fails the call as it does without a wrapper,
/// rather than as exit code 127.
fn by_name(spec: &Spec) -> Result<&std::ffi::OsStr, String> {
    if find_program(&spec.program, &spec.env).is_none() {
        return Err(format!(
            "cannot start {:?} in {}: not found on PATH",
            spec.program,
            spec.workdir.display()
        ));
    }
    Ok(spec
        .arg0
        .as_ref()
        .map_or(spec.program.as_os_str(), |name| name.as_ref()))
}
