//! From a checked command to what the process layer starts ([`Spec`]):
//! a program with its argv as checked, or a bash script, which runs
//! without bash when it is one plain command bash would `exec` anyway
//! ([`direct`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::program::{find_program, is_executable};
use super::spec::{Join, Spec};
use crate::gate::{CheckedCommand, CommandLine};

/// What runs for `command`, with `stdin` written to it (`None`: stdin is
/// /dev/null).
pub(in crate::exec) fn spec(command: CheckedCommand, stdin: Option<Vec<u8>>) -> Spec {
    let parts = command.into_parts();
    let (workdir, env) = (parts.workdir, parts.env);
    match parts.line {
        CommandLine::Program { path, args } => Spec {
            program: path.into_os_string(),
            arg0: None,
            args,
            workdir,
            env,
            stdin,
            join: Join::Wrapper,
        },
        CommandLine::Script(script) => match direct(&script, &workdir, &env) {
            Some((program, argv, env)) => Spec {
                program,
                arg0: argv.first().cloned(),
                args: argv.into_iter().skip(1).collect(),
                workdir,
                env,
                stdin,
                join: Join::Wrapper,
            },
            None => {
                // Looked up here, on the call's PATH as `execvp` would: the
                // child then `exec`s the path instead of failing an `exec`
                // for every PATH entry before bash's.
                let (program, arg0) = match find_bash(&env) {
                    Some(path) => (path.into_os_string(), Some("bash".to_owned())),
                    None => ("bash".into(), None),
                };
                Spec {
                    program,
                    arg0,
                    args: vec!["-c".to_owned(), script],
                    workdir,
                    env,
                    stdin,
                    join: Join::BashScript,
                }
            }
        },
    }
}

/// bash's builtins (`compgen -b`, bash 5.2): a plain command naming one
/// runs in bash, whether or not a program of that name is on PATH.
const BASH_BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// The program, argv and environment to run `command` without bash, when
/// that is exactly what `bash -c command` would do: one simple command of
/// plain words ([`runner_policy::plain_command`]) naming a program on PATH,
/// which bash would `exec` in place of itself, so the call does not pay
/// for bash's start-up (where the call must move into its cgroup, the
/// `sh` wrapper costs about as much, so the direct path is never slower).
/// Everything else runs in bash: builtins,
/// paths (relative to the working directory), anything bash would read
/// first (`BASH_ENV`, exported functions), programs that are not found
/// (bash's message and 127) or are not binaries or `#!` scripts (bash
/// runs those itself). The environment gets the variables bash sets on
/// such an `exec`: `_` (the program's path), `PWD`, and `SHLVL` (0 when
/// unset; otherwise unchanged, as bash undoes its own increment).
fn direct(
    command: &str,
    workdir: &std::path::Path,
    env: &HashMap<String, String>,
) -> Option<(std::ffi::OsString, Vec<String>, HashMap<String, String>)> {
    let argv = runner_policy::plain_command(command)?;
    let name = argv.first()?;
    if name.contains('/') || BASH_BUILTINS.contains(&name.as_str()) {
        return None;
    }
    if runner_env().bash_reads_first || env.keys().any(|key| bash_reads_first(key)) {
        return None;
    }
    let program = find_program(name.as_ref(), env)?;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(&program)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut magic))
        .ok()?;
    if !(magic[..read].starts_with(b"\x7fELF") || magic[..read].starts_with(b"#!")) {
        return None;
    }
    let mut env = env.clone();
    env.insert("_".to_owned(), program.to_str()?.to_owned());
    env.insert("PWD".to_owned(), workdir.to_str()?.to_owned());
    if !env.contains_key("SHLVL") && !runner_env().has_shlvl {
        env.insert("SHLVL".to_owned(), "0".to_owned());
    }
    Some((program.into_os_string(), argv, env))
}

/// bash on the PATH the call's process will have. On the runner's own
/// PATH (a call that sets none) it is looked up once and then only
/// checked, so a call does not pay a `statx` for every PATH entry before
/// bash's. Where the bash
/// found is gone, it is looked up again; a bash installed later in an
/// earlier PATH directory is used once the runner restarts, as a
/// service's interpreter would be.
fn find_bash(env: &HashMap<String, String>) -> Option<PathBuf> {
    static FOUND: Mutex<Option<PathBuf>> = Mutex::new(None);
    let search = || find_program("bash".as_ref(), env);
    if env.contains_key("PATH") {
        return search();
    }
    kept_or_found(&FOUND, search)
}

/// The program in `kept` while it is still an executable file, else what
/// `search` finds (kept for the next time).
fn kept_or_found(
    kept: &Mutex<Option<PathBuf>>,
    search: impl FnOnce() -> Option<PathBuf>,
) -> Option<PathBuf> {
    let mut kept = kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let still_there = kept.as_deref().is_some_and(is_executable);
    if !still_there {
        *kept = search();
    }
    kept.clone()
}

/// Variables bash reads before running a command: a startup file, and
/// exported functions (which may shadow any program).
fn bash_reads_first(key: &str) -> bool {
    key == "BASH_ENV" || key.starts_with("BASH_FUNC_")
}

/// What [`direct`] needs from the runner's own environment, which every
/// call inherits and which does not change while the runner runs: read
/// once, not on every call.
struct RunnerEnv {
    bash_reads_first: bool,
    has_shlvl: bool,
}

fn runner_env() -> &'static RunnerEnv {
    static ENV: std::sync::OnceLock<RunnerEnv> = std::sync::OnceLock::new();
    ENV.get_or_init(|| RunnerEnv {
        bash_reads_first: std::env::vars_os()
            .any(|(key, _)| key.to_str().is_some_and(bash_reads_first)),
        has_shlvl: std::env::var_os("SHLVL").is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::run::{run_spec, Finished};
    use super::super::spec::Isolation;
    use super::*;
    use crate::call::CallScope;

    /// bash found once is used while it is there, looked up again once it
    /// is gone or no longer executable.
    #[test]
    fn the_bash_found_is_kept_while_it_is_there() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let program = |name: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            path
        };
        let (first, second) = (program("first"), program("second"));
        let kept = Mutex::new(None);
        assert_eq!(
            kept_or_found(&kept, || Some(first.clone())),
            Some(first.clone())
        );
        assert_eq!(
            kept_or_found(&kept, || Some(second.clone())),
            Some(first.clone()),
            "no search while it is there"
        );
        std::fs::set_permissions(&first, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(
            kept_or_found(&kept, || Some(second.clone())),
            Some(second.clone())
        );
        std::fs::remove_file(&second).expect("remove");
        assert_eq!(kept_or_found(&kept, || None), None, "gone, and none found");
        assert_eq!(kept_or_found(&kept, || Some(first.clone())), Some(first));
    }

    fn scope() -> CallScope {
        CallScope {
            call_id: "same-call".to_owned(),
            cancel: tokio_util::sync::CancellationToken::new(),
            timeout: std::time::Duration::from_secs(20),
            limit: crate::call::Limit::call(20),
            output: None,
            binary_output: true,
        }
    }

    /// What a command printed and how it ended; `env` lines sorted (bash
    /// builds its own environment order).
    fn seen(finished: &Finished, sort: bool) -> (Option<i32>, String, String) {
        let mut stdout = finished.stdout.text.clone();
        if sort {
            let mut lines: Vec<&str> = stdout.lines().collect();
            lines.sort_unstable();
            stdout = lines.join("\n");
        }
        (finished.exit_code, stdout, finished.stderr.text.clone())
    }

    /// Plain commands run without bash, and the program cannot tell: same
    /// output, environment (`_`, `PWD`, `SHLVL` included), `argv[0]` and
    /// exit code as under `bash -c`.
    #[tokio::test]
    async fn plain_commands_run_without_bash_exactly_as_bash_would_run_them() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path().canonicalize().expect("canonical");
        std::fs::write(root.join("a file"), "x").expect("file");
        // Created inside a cgroup (where one can be made), through the
        // `sh` wrapper that joins one, and spawned with no cgroup.
        for isolation in [
            Isolation::CgroupIfAvailable,
            Isolation::CgroupSelfJoin,
            Isolation::ProcessGroup,
        ] {
            for (command, env) in [
                ("env", HashMap::new()),
                ("env", HashMap::from([("SHLVL".to_owned(), "4".to_owned())])),
                ("cat /proc/self/cmdline", HashMap::new()),
                ("ls -a", HashMap::new()),
                ("cat 'a file' missing", HashMap::new()),
                ("sh -c 'exit 3'", HashMap::new()),
            ] {
                assert!(
                    direct(command, &root, &env).is_some(),
                    "{command:?} takes the direct path"
                );
                let bash = Spec {
                    program: "bash".into(),
                    arg0: None,
                    args: vec!["-c".to_owned(), command.to_owned()],
                    workdir: root.clone(),
                    env: env.clone(),
                    stdin: None,
                    join: Join::BashScript,
                };
                let via_bash = run_spec(bash, &root, &scope(), isolation)
                    .await
                    .expect("runs");
                let direct_run = run_spec(
                    {
                        let (program, argv, env) = direct(command, &root, &env).expect("direct");
                        Spec {
                            program,
                            arg0: argv.first().cloned(),
                            args: argv[1..].to_vec(),
                            workdir: root.clone(),
                            env,
                            stdin: None,
                            join: Join::Wrapper,
                        }
                    },
                    &root,
                    &scope(),
                    isolation,
                )
                .await
                .expect("runs");
                let sort = command == "env";
                assert_eq!(
                    seen(&direct_run, sort),
                    seen(&via_bash, sort),
                    "{command:?} {isolation:?}"
                );
            }
        }
    }

    #[test]
    fn everything_else_runs_in_bash() {
        let root = std::path::Path::new("/");
        let none = HashMap::new();
        for command in [
            "echo hi",
            "true",
            "cd /tmp",
            "FOO=1 env",
            "./script",
            "/usr/bin/env",
            "env | cat",
            "env $HOME",
            "no-such-program-here",
            "",
        ] {
            assert!(direct(command, root, &none).is_none(), "{command:?}");
        }
        let bash_env = HashMap::from([("BASH_ENV".to_owned(), "/x".to_owned())]);
        assert!(direct("env", root, &bash_env).is_none());
        let function = HashMap::from([("BASH_FUNC_ls%%".to_owned(), "() { :; }".to_owned())]);
        assert!(direct("ls", root, &function).is_none());
    }
}
