//! Differential test against real bash: every command bash actually runs
//! for a generated, engine-allowed script must itself be allowed.
//!
//! Commands resolve to logging stubs in a throwaway directory; bash runs
//! with `env -i PATH=<stubs>` and with `enable -n` for the builtins that
//! could run something behind the stubs' back (`source`, `.`, `enable`).

use crate::support::rules;
use proptest::prelude::*;
use std::path::Path;
use std::process::Command;

const STUBS: &[&str] = &[
    "ls", "cat", "grep", "head", "wc", "rm", "curl", "tee", "sort",
];

fn make_stubs(dir: &Path, log: &Path) {
    for name in STUBS {
        let path = dir.join(name);
        // One write per invocation (O_APPEND), so concurrent stubs in a
        // pipeline never interleave their lines.
        let script = format!(
            "#!/bin/sh\nline=\"${{0##*/}}\"\nfor a in \"$@\"; do line=\"$line $a\"; done\nprintf '%s\\n' \"$line\" >> '{}'\n",
            log.display()
        );
        std::fs::write(&path, script).expect("write stub");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
}

fn bash_available() -> bool {
    Command::new("bash")
        .arg("-c")
        .arg("true")
        .status()
        .is_ok_and(|s| s.success())
}

fn command() -> impl Strategy<Value = String> {
    let name = prop::sample::select(STUBS);
    let arg = prop::sample::select(
        &[
            "a",
            "-l",
            "x.txt",
            "'q q'",
            "\"$(ls)\"",
            "$(cat a)",
            "{a,b}",
            "-n1",
        ][..],
    );
    (name, prop::collection::vec(arg, 0..3)).prop_map(|(n, args)| {
        let mut s = n.to_string();
        for a in args {
            s.push(' ');
            s.push_str(a);
        }
        s
    })
}

fn script() -> impl Strategy<Value = String> {
    let leaf = command();
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} | {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}; {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} && {b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} || {b}")),
            inner.clone().prop_map(|a| format!("( {a} )")),
            inner.clone().prop_map(|a| format!("{{ {a}; }}")),
            inner.clone().prop_map(|a| format!("echo $({a})")),
            inner.clone().prop_map(|a| format!("if {a}; then ls; fi")),
            inner
                .clone()
                .prop_map(|a| format!("for i in 1 2; do {a}; done")),
            inner.clone().prop_map(|a| format!("f() {{ {a}; }}; f")),
            inner
                .clone()
                .prop_map(|a| format!("bash -c {}", shell_quote(&a))),
            inner
                .clone()
                .prop_map(|a| format!("eval {}", shell_quote(&a))),
            inner.clone().prop_map(|a| format!("cat <({a})")),
            inner.clone().prop_map(|a| format!("{a} > /tmp/out")),
        ]
    })
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn bash_runs_only_allowed_commands(script in script()) {
        if !bash_available() {
            return Ok(());
        }
        let set = rules(&[
            ("*", "deny"), ("ls", "allow"), ("ls *", "allow"), ("cat", "allow"), ("cat *", "allow"), ("grep", "allow"),
            ("grep *", "allow"), ("head *", "allow"), ("wc *", "allow"), ("echo *", "allow"), ("sort", "allow"),
            ("bash -c *", "allow"), ("eval *", "allow"), ("f", "allow"), ("true", "allow"),
        ]);
        let decision = set.check(&script);
        if !decision.allowed {
            return Ok(());
        }
        let ran = run_in_bash(&script);
        for line in &ran {
            let argv: Vec<String> = line.split(' ').map(str::to_owned).collect();
            let verdict = set.check_argv(&argv);
            prop_assert!(verdict.allowed, "bash ran {line:?} for allowed script {script:?}: {}", verdict.summary());
        }
    }
}

/// Run a script under bash with logging stubs; the command lines it ran.
fn run_in_bash(script: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let stubs = dir.path().join("bin");
    std::fs::create_dir(&stubs).expect("mkdir");
    let log = dir.path().join("log");
    std::fs::write(&log, "").expect("log");
    make_stubs(&stubs, &log);
    // Real bash for `bash -c` (its commands still resolve to the stubs).
    #[cfg(unix)]
    std::os::unix::fs::symlink("/bin/bash", stubs.join("bash")).expect("symlink bash");
    let wrapped = format!("enable -n source . enable 2>/dev/null\n{script}");
    let _ = Command::new("env")
        .arg("-i")
        .arg(format!("PATH={}", stubs.display()))
        .arg("/bin/bash")
        .arg("--norc")
        .arg("--noprofile")
        .arg("-c")
        .arg(&wrapped)
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bash runs");
    std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_harness_sees_what_bash_runs() {
    if !bash_available() {
        return;
    }
    let ran = run_in_bash("ls | grep a; echo $(cat x); bash -c 'wc -l'; eval 'head -n1' {a,b}");
    for expected in ["ls", "grep a", "cat x", "wc -l", "head -n1 a b"] {
        assert!(
            ran.iter().any(|l| l == expected),
            "{expected:?} not in {ran:?}"
        );
    }
}
