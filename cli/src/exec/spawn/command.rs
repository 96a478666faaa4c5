//! The plain way to start a call's process: std's `Command` (through
//! tokio's), in a process group of its own; where the call has a cgroup,
//! the process moves itself into it before it runs anything of the call
//! ([`Join`]).

use std::process::Stdio;

use tokio::process::Command;

use crate::call::{CALL_MARKER_VAR, CALL_OWNER_VAR};
use crate::exec::cgroup::CallGroup;
use crate::exec::environment::keep_secrets_from;
use crate::exec::owner::owner;
use crate::exec::program::find_program;
use crate::exec::spec::{Join, Spec};

/// Starts `spec` with `tokio::process::Command`; with a cgroup, the process
/// moves itself in first ([`Join`]).
pub(super) fn spawn(
    spec: &Spec,
    group: Option<&CallGroup>,
    call_id: &str,
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
    keep_secrets_from(&mut command);
    if let Some(owner) = owner() {
        command.env(CALL_OWNER_VAR, owner);
    }
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
