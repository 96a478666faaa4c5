//! A tool cannot read the runner's secrets through `/proc`: a runner
//! started as an unprivileged user (tools run as the runner's user) with
//! `RUNNER_API_KEY` in its environment, and `shell` calls that try its
//! environment and its memory.

use std::os::unix::fs::chown;
use std::path::Path;

use serde_json::json;

use crate::support::*;

/// `nobody`'s ids on Debian.
const NOBODY: u32 = 65534;
const SECRET: &str = "rnrk_secret-the-tools-must-not-see";

fn chown_tree(path: &Path) {
    chown(path, Some(NOBODY), Some(NOBODY)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read dir") {
            chown_tree(&entry.expect("entry").path());
        }
    }
}

#[tokio::test]
async fn a_tool_cannot_read_the_runners_environment_or_memory() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!(
            "skipped: starting the runner as another user needs root (CI runs as root); \
             as root a tool could read anything, so the test needs both"
        );
        return;
    }
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut runner = Runner::register(&relay, &token).await;
    chown_tree(runner.home.path());
    let mut command = runner.command();
    let program = command.as_std().get_program().to_owned();
    let mut as_nobody = tokio::process::Command::new("setpriv");
    as_nobody
        .args([
            "--reuid",
            &NOBODY.to_string(),
            "--regid",
            &NOBODY.to_string(),
            "--clear-groups",
            "--",
        ])
        .arg(program)
        .arg("run");
    for (key, value) in command.as_std().get_envs() {
        match value {
            Some(value) => as_nobody.env(key, value),
            None => as_nobody.env_remove(key),
        };
    }
    as_nobody
        .env("RUNNER_API_KEY", SECRET)
        .env("HOME", runner.home.path())
        .kill_on_drop(true);
    command = as_nobody;
    runner.child = Some(command.spawn().expect("start the runner as nobody"));
    relay.wait_status(&env, "online").await;

    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "id -u; echo ppid=$PPID"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let stdout = body["result"]["stdout"].as_str().unwrap_or_default();
    assert!(
        stdout.starts_with(&format!("{NOBODY}\n")),
        "the tool runs as nobody: {body}"
    );

    for (what, command) in [
        ("environment", "tr '\\0' '\\n' < /proc/$PPID/environ"),
        (
            "memory",
            "set -o pipefail; head -c 16 /proc/$PPID/mem | od -c",
        ),
        ("file descriptors", "ls -l /proc/$PPID/fd"),
    ] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": command}}),
            )
            .await;
        assert_eq!(status, 200, "{what}: {body}");
        let text = body.to_string();
        assert!(
            !text.contains(SECRET),
            "the tool read the key from the runner's {what}: {body}"
        );
        assert_ne!(
            body["exit_code"], 0,
            "the runner's {what} was readable: {body}"
        );
        assert!(
            body["result"]["stderr"]
                .as_str()
                .unwrap_or_default()
                .contains("Permission denied"),
            "{what}: {body}"
        );
    }
}
