//! Commands that run other commands: transparent wrappers (`sudo`, `env`,
//! `xargs`, `find -exec`, ...) and code-string runners (`bash -c`, `eval`,
//! `trap`, `alias`, `su -c`, shells reading a here-document).
//!
//! Each wrapper's own options are skipped with a table of the options it
//! takes (with or without an argument). An option not in the table, or a
//! dynamic word where an option or the command name is expected, makes the
//! wrapped command unknown, which is denied: guessing how an unknown option
//! consumes words could let `sudo --weird rm` be read as `sudo` running `--weird`.
//!
//! A wrapper invoked so that it starts a shell of its own instead of running
//! a command (`sudo -i`, `su -`, `bash -l`, `script`, `chroot DIR`, ...) is
//! reported as [`Runs::Shell`]: such a shell runs start-up files and reads
//! commands nobody wrote into the script, so it is not "the wrapper plus an
//! allowed command".
//!
//! The walker reaches this module only through [`analyse`]; this module
//! knows nothing of the walker.

use crate::words::{self, Frag, Word};

/// Where a command's standard input comes from (for shells reading a script).
#[derive(Debug, Clone)]
pub(crate) enum Stdin {
    /// Not visible statically: a file, or inherited from the caller.
    Unknown,
    /// The output of the previous stage of a pipeline.
    Pipe,
    /// A here-document or here-string with this static text.
    Static(String),
    /// A here-document or here-string with run-time parts (source text).
    Dynamic(String),
}

/// What a command runs besides itself.
#[derive(Debug)]
pub(crate) enum Runs {
    /// Nothing we know of.
    Nothing,
    /// This argv.
    Command(Vec<Word>),
    /// This shell code.
    Code(Word),
    /// Several of the above (find with several -exec).
    Several(Vec<Runs>),
    /// Something we cannot determine statically (reason).
    Unknown(String),
    /// An interactive or login shell, and what it reads from a
    /// here-document or a pipe (nothing known when its input is inherited).
    Shell(Box<Runs>),
}

/// Option table of one wrapper.
struct Spec {
    /// Short options without an argument.
    flags: &'static str,
    /// Short options taking an argument (attached or next word).
    with_arg: &'static str,
    /// Long options without an argument (an attached `=value` is accepted).
    long_flags: &'static [&'static str],
    /// Long options taking an argument.
    long_with_arg: &'static [&'static str],
    /// `-5`, `-10`: numeric short options (nice).
    numeric: bool,
}

const fn spec(
    flags: &'static str,
    with_arg: &'static str,
    long_flags: &'static [&'static str],
    long_with_arg: &'static [&'static str],
) -> Spec {
    Spec {
        flags,
        with_arg,
        long_flags,
        long_with_arg,
        numeric: false,
    }
}

/// Options seen while skipping: (option name, its argument if any).
type Seen = Vec<(String, Option<Word>)>;

/// Skip the options of `argv[1..]`; returns the index of the first operand.
fn skip_options(argv: &[Word], spec: &Spec) -> Result<(usize, Seen), String> {
    let mut seen = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let Some(word) = words::static_text(&argv[i]) else {
            return Err(format!(
                "{:?} is only known at run time where an option or a command is expected",
                words::display(&argv[i])
            ));
        };
        if word == "--" {
            return Ok((i + 1, seen));
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(words::lit(v))),
                None => (long, None),
            };
            if spec.long_flags.contains(&name) {
                seen.push((format!("--{name}"), value));
                i += 1;
            } else if spec.long_with_arg.contains(&name) {
                if value.is_some() {
                    seen.push((format!("--{name}"), value));
                    i += 1;
                } else if i + 1 < argv.len() {
                    seen.push((format!("--{name}"), Some(argv[i + 1].clone())));
                    i += 2;
                } else {
                    return Err(format!("option --{name} lacks its argument"));
                }
            } else {
                return Err(format!("unknown option \"--{name}\""));
            }
            continue;
        }
        if word.len() < 2 || !word.starts_with('-') {
            return Ok((i, seen));
        }
        if spec.numeric && word[1..].bytes().all(|b| b.is_ascii_digit()) {
            seen.push((word.clone(), None));
            i += 1;
            continue;
        }
        let letters: Vec<char> = word[1..].chars().collect();
        let mut consumed_next = false;
        for (k, c) in letters.iter().enumerate() {
            if spec.flags.contains(*c) {
                seen.push((format!("-{c}"), None));
            } else if spec.with_arg.contains(*c) {
                let attached: String = letters[k + 1..].iter().collect();
                if !attached.is_empty() {
                    seen.push((format!("-{c}"), Some(words::lit(&attached))));
                } else if i + 1 < argv.len() {
                    seen.push((format!("-{c}"), Some(argv[i + 1].clone())));
                    consumed_next = true;
                } else {
                    return Err(format!("option -{c} lacks its argument"));
                }
                break;
            } else {
                return Err(format!("unknown option \"-{c}\" in \"{word}\""));
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    Ok((i, seen))
}

fn has(seen: &Seen, names: &[&str]) -> bool {
    seen.iter().any(|(n, _)| names.contains(&n.as_str()))
}

fn arg<'a>(seen: &'a Seen, names: &[&str]) -> Option<&'a Word> {
    seen.iter()
        .rev()
        .find(|(n, _)| names.contains(&n.as_str()))
        .and_then(|(_, v)| v.as_ref())
}

/// Skip `NAME=value` words (env, sudo); a dynamic word there is unknown.
fn skip_assignments(argv: &[Word], mut i: usize) -> Result<usize, String> {
    while i < argv.len() {
        let Some(word) = words::static_text(&argv[i]) else {
            // `NAME=$x` is still an assignment if its name part is static.
            if let Some(Frag::Lit(head)) = argv[i].first() {
                if is_assignment(head) {
                    i += 1;
                    continue;
                }
            }
            return Err(format!(
                "{:?} is only known at run time where a command is expected",
                words::display(&argv[i])
            ));
        };
        if !is_assignment(&word) {
            break;
        }
        i += 1;
    }
    Ok(i)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn rest(argv: &[Word], i: usize) -> Runs {
    if i < argv.len() {
        Runs::Command(argv[i..].to_vec())
    } else {
        Runs::Nothing
    }
}

/// Words joined with spaces, as `eval` and `sh -c` of several words do.
fn joined_code(argv: &[Word]) -> Runs {
    if argv.is_empty() {
        Runs::Nothing
    } else {
        Runs::Code(words::join(argv))
    }
}

const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "rbash", "ash", "mksh"];

/// What the command `argv` (whose argv[0] has basename `name`) runs.
pub(crate) fn analyse(name: &str, argv: &[Word], stdin: &Stdin) -> Runs {
    match analyse_inner(name, argv, stdin) {
        Ok(runs) => runs,
        Err(reason) => Runs::Unknown(format!("{name}: {reason}")),
    }
}

fn analyse_inner(name: &str, argv: &[Word], stdin: &Stdin) -> Result<Runs, String> {
    Ok(match name {
        "sudo" => {
            const S: Spec = spec(
                "AbEHiKklnPSsVvNBe",
                "ugCDhprtTUR",
                &[
                    "askpass",
                    "background",
                    "preserve-env",
                    "set-home",
                    "login",
                    "remove-timestamp",
                    "reset-timestamp",
                    "list",
                    "non-interactive",
                    "preserve-groups",
                    "stdin",
                    "shell",
                    "version",
                    "validate",
                    "edit",
                    "help",
                    "bell",
                ],
                &[
                    "user",
                    "group",
                    "close-from",
                    "chdir",
                    "host",
                    "prompt",
                    "role",
                    "type",
                    "command-timeout",
                    "other-user",
                    "chroot",
                ],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if has(
                &seen,
                &[
                    "-e",
                    "--edit",
                    "-l",
                    "--list",
                    "-V",
                    "--version",
                    "-h",
                    "--help",
                ],
            ) && i >= argv.len()
            {
                return Ok(Runs::Nothing);
            }
            if has(&seen, &["-e", "--edit"]) {
                return Ok(Runs::Nothing);
            }
            let i = skip_assignments(argv, i)?;
            if has(&seen, &["-s", "--shell", "-i", "--login"]) && i >= argv.len() {
                return Ok(shell_start(stdin));
            }
            if has(&seen, &["-s", "--shell", "-i", "--login"]) {
                // The command is passed to a shell as `-c "args..."`.
                return Ok(joined_code(&argv[i..]));
            }
            rest(argv, i)
        }
        "doas" => {
            const S: Spec = spec("nsL", "uC", &[], &[]);
            let (i, seen) = skip_options(argv, &S)?;
            if has(&seen, &["-s"]) && i >= argv.len() {
                return Ok(shell_start(stdin));
            }
            rest(argv, i)
        }
        "env" => {
            const S: Spec = spec(
                "i0v",
                "uCS",
                &[
                    "ignore-environment",
                    "null",
                    "debug",
                    "list-signal-handling",
                    "default-signal",
                    "ignore-signal",
                    "block-signal",
                ],
                &["unset", "chdir", "split-string"],
            );
            let (i, seen) = skip_options(argv, &S)?;
            let i = skip_assignments(argv, i)?;
            if let Some(split) = arg(&seen, &["-S", "--split-string"]) {
                // -S splits its argument into words: treat it as code.
                let mut code = vec![split.clone()];
                code.extend(argv[i..].iter().cloned());
                return Ok(joined_code(&code));
            }
            rest(argv, i)
        }
        "timeout" => {
            const S: Spec = spec(
                "v",
                "sk",
                &[
                    "preserve-status",
                    "foreground",
                    "verbose",
                    "help",
                    "version",
                ],
                &["signal", "kill-after"],
            );
            let (i, _) = skip_options(argv, &S)?;
            // The first operand is the duration.
            rest(argv, i + 1)
        }
        "nice" => {
            const S: Spec = Spec {
                flags: "",
                with_arg: "n",
                long_flags: &["help", "version"],
                long_with_arg: &["adjustment"],
                numeric: true,
            };
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "ionice" => {
            const S: Spec = spec(
                "tuhV",
                "cnpPu",
                &["ignore", "help", "version"],
                &["class", "classdata", "pid", "pgid", "uid"],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if has(&seen, &["-p", "-P", "-u", "--pid", "--pgid", "--uid"]) {
                return Ok(Runs::Nothing);
            }
            rest(argv, i)
        }
        "nohup" => {
            const S: Spec = spec("", "", &["help", "version"], &[]);
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "stdbuf" => {
            const S: Spec = spec(
                "",
                "ioe",
                &["help", "version"],
                &["input", "output", "error"],
            );
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        // Beyond the spec's list (C3 d): util-linux and friends that run a
        // command given after their own options and operands.
        "busybox" => match argv.get(1).and_then(words::static_text) {
            // `busybox --list`, `busybox --help`: no applet.
            Some(applet) if applet.starts_with('-') => Runs::Nothing,
            Some(_) => rest(argv, 1),
            None => Runs::Unknown("the applet is only known at run time".to_owned()),
        },
        "flock" => {
            const S: Spec = spec(
                "sxenouFhV",
                "Ewc",
                &[
                    "shared",
                    "exclusive",
                    "nonblock",
                    "nb",
                    "close",
                    "unlock",
                    "no-fork",
                    "verbose",
                    "help",
                    "version",
                ],
                &["conflict-exit-code", "timeout", "wait", "command"],
            );
            let (i, seen) = skip_options(argv, &S)?;
            // `flock FILE -c CODE`: options may follow the lock file.
            let (after, late) = skip_options(&argv[i.min(argv.len() - 1)..], &S)?;
            match arg(&seen, &["-c", "--command"]).or(arg(&late, &["-c", "--command"])) {
                Some(code) => Runs::Code(code.clone()),
                // `flock FILE COMMAND…`; `flock FD` runs nothing.
                None => rest(argv, i + after.max(1)),
            }
        }
        "chroot" => {
            const S: Spec = spec(
                "",
                "",
                &["skip-chdir", "help", "version"],
                &["userspec", "groups"],
            );
            let (i, _) = skip_options(argv, &S)?;
            // NEWROOT, then the command (none: an interactive shell).
            if i + 1 >= argv.len() {
                return Ok(shell_start(stdin));
            }
            rest(argv, i + 1)
        }
        "taskset" => {
            const S: Spec = spec(
                "acphV",
                "",
                &["all-tasks", "cpu-list", "pid", "help", "version"],
                &[],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if has(&seen, &["-p", "--pid"]) {
                return Ok(Runs::Nothing);
            }
            // MASK, then the command.
            rest(argv, i + 1)
        }
        "chrt" => {
            const S: Spec = spec(
                "bdfiormapvhRV",
                "TPD",
                &[
                    "batch",
                    "deadline",
                    "fifo",
                    "idle",
                    "other",
                    "rr",
                    "reset-on-fork",
                    "max",
                    "all-tasks",
                    "pid",
                    "verbose",
                    "help",
                    "version",
                ],
                &["sched-runtime", "sched-period", "sched-deadline"],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if has(&seen, &["-p", "--pid", "-m", "--max"]) {
                return Ok(Runs::Nothing);
            }
            // PRIORITY, then the command.
            rest(argv, i + 1)
        }
        "pkexec" => {
            const S: Spec = spec(
                "",
                "",
                &["keep-cwd", "disable-internal-agent", "help", "version"],
                &["user"],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if i >= argv.len() && !has(&seen, &["--help", "--version"]) {
                return Ok(shell_start(stdin));
            }
            rest(argv, i)
        }
        "sg" => {
            // `sg [-] GROUP [-c] COMMAND`: the command is one string for /bin/sh.
            let mut i = 1;
            if argv.get(i).and_then(words::static_text).as_deref() == Some("-") {
                i += 1;
            }
            i += 1;
            if argv.get(i).and_then(words::static_text).as_deref() == Some("-c") {
                i += 1;
            }
            if i >= argv.len() {
                // No command: a shell with the group, as newgrp starts.
                return Ok(shell_start(stdin));
            }
            joined_code(argv.get(i..).unwrap_or_default())
        }
        "script" => {
            const S: Spec = spec(
                "aeqfEIOBTtmhV",
                "cloiEBTm",
                &[
                    "append", "return", "quiet", "flush", "force", "help", "version",
                ],
                &[
                    "command",
                    "echo",
                    "log-in",
                    "log-out",
                    "log-io",
                    "log-timing",
                    "logging-format",
                    "output-limit",
                    "timing",
                ],
            );
            let (_, seen) = skip_options(argv, &S)?;
            match arg(&seen, &["-c", "--command"]) {
                Some(code) => Runs::Code(code.clone()),
                None if has(&seen, &["-h", "-V", "--help", "--version"]) => Runs::Nothing,
                // Without -c, script starts an interactive $SHELL.
                None => shell_start(stdin),
            }
        }
        "unshare" => {
            const S: Spec = spec(
                "muinpUCTfrcRwhV",
                "SGRw",
                &[
                    "mount",
                    "uts",
                    "ipc",
                    "net",
                    "pid",
                    "user",
                    "cgroup",
                    "time",
                    "fork",
                    "map-root-user",
                    "map-current-user",
                    "kill-child",
                    "mount-proc",
                    "keep-caps",
                    "help",
                    "version",
                ],
                &[
                    "propagation",
                    "setgroups",
                    "setuid",
                    "setgid",
                    "root",
                    "wd",
                    "map-user",
                    "map-group",
                    "map-users",
                    "map-groups",
                    "monotonic",
                    "boottime",
                ],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if i >= argv.len() && !has(&seen, &["-h", "-V", "--help", "--version"]) {
                // No command: unshare starts $SHELL.
                return Ok(shell_start(stdin));
            }
            rest(argv, i)
        }
        "setsid" => {
            const S: Spec = spec(
                "cfwhV",
                "",
                &["ctty", "fork", "wait", "help", "version"],
                &[],
            );
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "time" => {
            const S: Spec = spec(
                "pvqa",
                "fo",
                &[
                    "portability",
                    "verbose",
                    "quiet",
                    "append",
                    "help",
                    "version",
                ],
                &["format", "output"],
            );
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "command" => {
            const S: Spec = spec("pvV", "", &[], &[]);
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "builtin" | "coproc" => {
            const S: Spec = spec("", "", &[], &[]);
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "exec" => {
            const S: Spec = spec("cl", "a", &[], &[]);
            let (i, _) = skip_options(argv, &S)?;
            rest(argv, i)
        }
        "watch" => {
            const S: Spec = spec(
                "bcCdeghptvwx",
                "nq",
                &[
                    "beep",
                    "color",
                    "no-color",
                    "differences",
                    "errexit",
                    "chgexit",
                    "exec",
                    "help",
                    "precise",
                    "no-title",
                    "version",
                    "no-wrap",
                    "no-linewrap",
                ],
                &["interval", "equexit"],
            );
            let (i, seen) = skip_options(argv, &S)?;
            if has(&seen, &["-x", "--exec"]) {
                rest(argv, i)
            } else {
                // Without -x watch passes its arguments to `sh -c`.
                joined_code(&argv[i..])
            }
        }
        "xargs" => xargs(argv)?,
        "find" => find(argv)?,
        "eval" => {
            let start =
                usize::from(argv.get(1).and_then(words::static_text).as_deref() == Some("--")) + 1;
            joined_code(&argv[start..])
        }
        "trap" => {
            const S: Spec = spec("lp", "", &[], &[]);
            let (i, seen) = skip_options(argv, &S)?;
            if has(&seen, &["-l", "-p"]) || i >= argv.len() {
                return Ok(Runs::Nothing);
            }
            if words::static_text(&argv[i]).as_deref() == Some("-") {
                return Ok(Runs::Nothing);
            }
            Runs::Code(argv[i].clone())
        }
        "alias" => {
            let mut runs = Vec::new();
            for word in &argv[1..] {
                match word.first() {
                    Some(Frag::Lit(head)) if head.contains('=') => {
                        let (_, value_head) = head.split_once('=').unwrap_or_default();
                        let mut value = words::lit(value_head);
                        value.extend(word[1..].iter().cloned());
                        runs.push(Runs::Code(value));
                    }
                    Some(Frag::Lit(_)) => {}
                    _ => runs.push(Runs::Code(word.clone())),
                }
            }
            Runs::Several(runs)
        }
        // `runuser` is `su` for root, plus `-u USER COMMAND…`.
        "su" | "runuser" => {
            const S: Spec = spec(
                "lmpPfh",
                "cugGsw",
                &[
                    "login",
                    "preserve-environment",
                    "pty",
                    "help",
                    "version",
                    "fast",
                ],
                &[
                    "command",
                    "session-command",
                    "user",
                    "group",
                    "supp-group",
                    "shell",
                    "whitelist-environment",
                ],
            );
            // `runuser -u USER [--] COMMAND…`: options, then the command.
            if let Ok((i, seen)) = skip_options(argv, &S) {
                if has(&seen, &["-u", "--user"]) && arg(&seen, &["-c", "--command"]).is_none() {
                    return Ok(rest(argv, i));
                }
            }
            let (_, seen) = skip_options_su(argv, &S)?;
            match arg(&seen, &["-c", "--command", "--session-command"]) {
                Some(code) => Runs::Code(code.clone()),
                None if has(&seen, &["-h", "--help", "--version"]) => Runs::Nothing,
                // A (login) shell, reading its commands from stdin.
                None => shell_start(stdin),
            }
        }
        shell if SHELLS.contains(&shell) => shell_runs(argv, stdin)?,
        // Programs that only start a shell (a new group's, a login's, a
        // terminal multiplexer's first window).
        "newgrp" | "login" => shell_start(stdin),
        "tmux" | "screen" if argv.len() == 1 => shell_start(stdin),
        // `source FILE`: a file we cannot see, unless it is standard input.
        "source" | "." => match argv.get(1).and_then(words::static_text) {
            Some(file) if reads_stdin(&file) => stdin_code(stdin),
            Some(_) => Runs::Nothing,
            None => Runs::Unknown("the sourced file is only known at run time".to_owned()),
        },
        _ => Runs::Nothing,
    })
}

/// `su` accepts `-` (login) and options after the user name.
fn skip_options_su(argv: &[Word], spec: &Spec) -> Result<(usize, Seen), String> {
    let mut filtered: Vec<Word> = Vec::with_capacity(argv.len());
    for word in argv {
        if words::static_text(word).as_deref() != Some("-") {
            filtered.push(word.clone());
        }
    }
    // Options may follow the user name: skip operands between options.
    let mut seen = Vec::new();
    let mut i = 1;
    let mut last = 0;
    while i < filtered.len() {
        let mut view = vec![filtered[0].clone()];
        view.extend(filtered[i..].iter().cloned());
        let (next, more) = skip_options(&view, spec)?;
        seen.extend(more);
        let consumed = next - 1;
        i += consumed;
        last = i;
        if i < filtered.len() {
            // An operand (the user name): skip it and go on.
            i += 1;
        }
    }
    Ok((last, seen))
}

fn stdin_code(stdin: &Stdin) -> Runs {
    match stdin {
        Stdin::Static(code) => Runs::Code(words::lit(code)),
        Stdin::Dynamic(source) => Runs::Code(words::dyn_word(source)),
        Stdin::Unknown | Stdin::Pipe => Runs::Code(words::dyn_word("<standard input>")),
    }
}

/// A shell started to read commands rather than to run one: what it reads
/// is checked when it is a here-document or a pipe; input inherited from
/// the caller is not the script's.
fn shell_start(stdin: &Stdin) -> Runs {
    Runs::Shell(Box::new(match stdin {
        Stdin::Unknown => Runs::Nothing,
        _ => stdin_code(stdin),
    }))
}

/// `bash [options] -c CODE [name args...]`, `bash [options] [FILE]`, or a
/// shell reading its script from standard input.
fn shell_runs(argv: &[Word], stdin: &Stdin) -> Result<Runs, String> {
    let mut i = 1;
    let mut command_mode = false;
    let mut read_stdin = false;
    let mut interactive = false;
    while i < argv.len() {
        let Some(word) = words::static_text(&argv[i]) else {
            if command_mode {
                break;
            }
            return Err(format!(
                "{:?} is only known at run time",
                words::display(&argv[i])
            ));
        };
        if word == "--" || word == "-" {
            i += 1;
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            match long {
                "help" | "version" => return Ok(Runs::Nothing),
                "login" => {
                    interactive = true;
                    i += 1;
                }
                "norc" | "noprofile" | "posix" | "restricted" | "verbose" | "noediting"
                | "debugger" | "dump-strings" | "dump-po-strings" | "protected"
                | "pretty-print" => i += 1,
                "rcfile" | "init-file" => i += 2,
                _ => return Err(format!("unknown option \"--{long}\"")),
            }
            continue;
        }
        if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
            let letters: Vec<char> = word[1..].chars().collect();
            if !letters.iter().all(char::is_ascii_alphabetic) {
                return Err(format!("unknown option \"{word}\""));
            }
            i += 1;
            for c in letters {
                match c {
                    'c' => command_mode = true,
                    's' => read_stdin = true,
                    // Interactive or login: start-up files run first.
                    'i' | 'l' if word.starts_with('-') => interactive = true,
                    // Shell option names: `-o errexit`, `-O extglob`.
                    'o' | 'O' => i += 1,
                    _ => {}
                }
            }
            continue;
        }
        break;
    }
    if command_mode {
        return match argv.get(i) {
            Some(code) => Ok(Runs::Code(code.clone())),
            None => Err("-c without a code string".to_owned()),
        };
    }
    if i < argv.len() && !read_stdin {
        match words::static_text(&argv[i]) {
            // `bash /dev/stdin <<< CODE` reads its script from stdin.
            Some(file) if reads_stdin(&file) => {}
            // `bash FILE`: the script is a file we cannot see; the rules
            // decide on the command text alone.
            _ => return Ok(Runs::Nothing),
        }
    }
    if interactive {
        return Ok(shell_start(stdin));
    }
    Ok(stdin_code(stdin))
}

/// Paths that name the reading process's standard input.
fn reads_stdin(path: &str) -> bool {
    matches!(
        path,
        "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0" | "/proc/thread-self/fd/0"
    )
}

fn xargs(argv: &[Word]) -> Result<Runs, String> {
    const S: Spec = spec(
        "0prtxo",
        "aEdILnPsei",
        &[
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
            "help",
            "version",
        ],
        &[
            "arg-file",
            "delimiter",
            "eof",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "replace",
            "process-slot-var",
        ],
    );
    // -e, -i and -l take an optional attached argument only.
    let mut fixed: Vec<Word> = argv.to_vec();
    for word in fixed.iter_mut().skip(1) {
        if let Some(text) = words::static_text(word) {
            if text == "-i" || text == "-e" || text == "-l" {
                *word = words::lit(&format!("{text}{}", if text == "-i" { "{}" } else { "1" }));
            }
        }
    }
    let (i, seen) = skip_options(&fixed, &S)?;
    let replace = arg(&seen, &["-I", "-i", "--replace"]).and_then(words::static_text);
    let mut command: Vec<Word> = if i < argv.len() {
        argv[i..].to_vec()
    } else {
        vec![words::lit("echo")]
    };
    match replace {
        Some(marker) if !marker.is_empty() => {
            for word in command.iter_mut() {
                *word = replace_marker(word, &marker, "{input}");
            }
        }
        _ => command.push(words::dyn_word("{input}")),
    }
    Ok(Runs::Command(command))
}

/// Replace every occurrence of `marker` in the literal parts by a dynamic part.
fn replace_marker(word: &Word, marker: &str, source: &str) -> Word {
    let mut out: Word = Vec::new();
    for frag in word {
        match frag {
            Frag::Lit(s) => {
                let mut first = true;
                for piece in s.split(marker) {
                    if !first {
                        out.push(Frag::Dyn(source.to_owned()));
                    }
                    first = false;
                    if !piece.is_empty() {
                        words::push_lit(&mut out, piece);
                    }
                }
            }
            Frag::Dyn(d) => out.push(Frag::Dyn(d.clone())),
        }
    }
    if out.is_empty() {
        out.push(Frag::Lit(String::new()));
    }
    out
}

fn find(argv: &[Word]) -> Result<Runs, String> {
    let mut runs = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let action = words::static_text(&argv[i]);
        if matches!(
            action.as_deref(),
            Some("-exec" | "-execdir" | "-ok" | "-okdir")
        ) {
            let start = i + 1;
            let mut end = start;
            loop {
                if end >= argv.len() {
                    return Err(format!(
                        "{} without a terminating ';' or '+'",
                        action.unwrap_or_default()
                    ));
                }
                match words::static_text(&argv[end]).as_deref() {
                    Some(";") => break,
                    Some("+")
                        if end > start
                            && words::static_text(&argv[end - 1]).as_deref() == Some("{}") =>
                    {
                        break
                    }
                    _ => end += 1,
                }
            }
            if end == start {
                return Err("-exec without a command".to_owned());
            }
            let command: Vec<Word> = argv[start..end]
                .iter()
                .map(|w| replace_marker(w, "{}", "{}"))
                .collect();
            runs.push(Runs::Command(command));
            i = end + 1;
        } else {
            i += 1;
        }
    }
    Ok(Runs::Several(runs))
}
