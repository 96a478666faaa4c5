//! `runner-relay dev` (the real binary, with the real `runner` beside it):
//! the relay outlives its runner. A runner killed with `kill -9` is started
//! again; one stopped by the relay (its token revoked: exit 10) is
//! reported and left stopped, and the relay keeps answering.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::{self, relay_bin};

/// The PID in the dev runner's instance lock, while a live process holds it.
fn runner_pid(state_dir: &Path) -> Option<i32> {
    let path = state_dir.join("runner.lock");
    let file = std::fs::File::open(&path).ok()?;
    // Lockable: no runner holds it.
    if file.try_lock_shared().is_ok() {
        return None;
    }
    std::fs::read_to_string(&path).ok()?.trim().parse().ok()
}

/// `runner-relay dev` started and ready: the process, its log's path, and
/// the URL, API key and environment it printed.
struct Dev {
    relay: tokio::process::Child,
    log_path: std::path::PathBuf,
    url: String,
    key: String,
    env: String,
}

async fn start_dev(dir: &Path) -> Dev {
    let data = dir.join("dev");
    let log_path = dir.join("dev.log");
    let log = std::fs::File::create(&log_path).expect("log");
    let mut relay = Command::new(relay_bin())
        .args(["dev", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .expect("runner-relay dev");
    let mut lines = BufReader::new(relay.stdout.take().expect("stdout")).lines();
    let (mut url, mut key, mut env) = (String::new(), String::new(), String::new());
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read") {
            if let Some(rest) = line.strip_prefix("runner-relay listening on ") {
                url = rest.trim().to_owned();
            } else if let Some(rest) = line.trim().strip_prefix("API key:") {
                key = rest.trim().to_owned();
            } else if let Some(rest) = line.trim().strip_prefix("environment:") {
                env = rest
                    .trim()
                    .trim_start_matches("dev (")
                    .trim_end_matches(')')
                    .to_owned();
            } else if line.contains("Press Ctrl-C to stop") {
                return;
            }
        }
        panic!(
            "dev mode ended before it was ready: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
    })
    .await
    .expect("dev mode is ready in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Dev {
        relay,
        log_path,
        url,
        key,
        env,
    }
}

#[tokio::test]
async fn dev_mode_starts_a_sandbox_host_so_a_sandbox_session_works() {
    if !crate::sandbox_host::can_sandbox("dev_mode_starts_a_sandbox_host") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = start_dev(dir.path()).await;
    let logged = std::fs::read_to_string(&dev.log_path).expect("log");
    assert!(logged.contains("local sandbox host online"), "{logged}");
    let http = reqwest::Client::new();
    let session: serde_json::Value = http
        .post(format!("{}/sessions", dev.url))
        .bearer_auth(&dev.key)
        .json(&serde_json::json!({ "environment": "sandbox" }))
        .send()
        .await
        .expect("session")
        .json()
        .await
        .expect("JSON");
    let id = session["id"].as_str().expect("session id");
    let answer: serde_json::Value = http
        .post(format!("{}/sessions/{id}/invoke-tool", dev.url))
        .bearer_auth(&dev.key)
        .json(
            &serde_json::json!({ "tool_name": "shell", "args": { "command": "id -u; hostname" } }),
        )
        .send()
        .await
        .expect("call")
        .json()
        .await
        .expect("JSON");
    let stdout = answer["result"]["stdout"].as_str().unwrap_or("");
    assert!(
        stdout.starts_with("0\n"),
        "root in its own user namespace: {answer}"
    );
    assert_ne!(
        stdout.lines().nth(1),
        Some(
            nix::unistd::gethostname()
                .expect("hostname")
                .to_str()
                .expect("UTF-8")
        ),
        "its own UTS namespace: {answer}"
    );
    stop_dev(dev).await;
}

/// Stops dev mode as Ctrl-C does, so that it stops its runner and its
/// sandbox host (a killed one would leave them running).
async fn stop_dev(mut dev: Dev) {
    let pid = dev.relay.id().expect("pid") as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let exited = tokio::time::timeout(support::READY_DEADLINE, dev.relay.wait())
        .await
        .expect("dev mode stops in time")
        .expect("wait");
    assert_eq!(
        exited.code(),
        Some(0),
        "{}",
        std::fs::read_to_string(&dev.log_path).unwrap_or_default()
    );
}

#[tokio::test]
async fn dev_mode_restarts_a_crashed_runner_and_keeps_the_relay_up_when_it_is_revoked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("dev");
    let Dev {
        mut relay,
        log_path,
        url,
        key,
        env,
    } = start_dev(dir.path()).await;
    let http = reqwest::Client::new();
    let status = || async {
        let response = http
            .get(format!("{url}/execution-environments/{env}/status"))
            .bearer_auth(&key)
            .send()
            .await
            .expect("the relay answers");
        let code = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        (code, body["status"].as_str().unwrap_or("?").to_owned())
    };
    let state_dir = data.join("runner").join("state");
    let first = runner_pid(&state_dir).expect("a runner holds the lock");

    // kill -9: the relay stays up and starts the runner again.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the runner");
    support::wait_until("a new runner holds the lock", || {
        runner_pid(&state_dir).is_some_and(|pid| pid != first)
    })
    .await;
    let second = runner_pid(&state_dir).expect("restarted");
    let deadline = tokio::time::Instant::now() + support::READY_DEADLINE;
    loop {
        let (code, now) = status().await;
        if code == 200 && now == "online" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{code} {now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let logged = std::fs::read_to_string(&log_path).expect("log");
    assert!(logged.contains("restarting it in 1 s"), "{logged}");

    // Revoked: the runner exits 10, is reported, and is not started again.
    let response = http
        .post(format!("{url}/execution-environments/{env}/revoke-token"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("revoke");
    assert!(response.status().is_success(), "{response:?}");
    support::wait_until("the revoked runner is reported", || {
        std::fs::read_to_string(&log_path).is_ok_and(|log| log.contains("not restarting it"))
    })
    .await;
    assert_eq!(runner_pid(&state_dir), None, "{second} is gone");
    // Longer than the first restart's wait: nothing comes back.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(runner_pid(&state_dir), None, "not restarted");
    let (code, _) = status().await;
    assert_eq!(code, 200, "the relay still answers");
    assert!(
        relay.try_wait().expect("wait").is_none(),
        "dev mode is still running"
    );
    let logged = std::fs::read_to_string(&log_path).expect("log");
    assert!(logged.contains("exit code 10"), "{logged}");

    let pid = relay.id().expect("pid") as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let exited = tokio::time::timeout(support::READY_DEADLINE, relay.wait())
        .await
        .expect("dev mode stops in time")
        .expect("wait");
    assert_eq!(
        exited.code(),
        Some(0),
        "{}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
}
