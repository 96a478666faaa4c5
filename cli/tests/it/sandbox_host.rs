//! `runner sandbox-host` end to end: a real relay, a real host with real
//! bubblewrap, sandboxes started through the relay's invoke API (as the
//! relay's own placement will) and called like any environment.
//!
//! Needs root and bwrap; without them each test says it is skipped.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{dev_env, wait_until, Relay, Runner};

/// Whether this machine can run the tests; says why not.
fn can_sandbox(test: &str) -> bool {
    let root = nix::unistd::geteuid().is_root();
    let bwrap = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()))
        .unwrap_or(false);
    if !(root && bwrap) {
        eprintln!("SKIPPED {test}: needs root and bubblewrap (root: {root}, bwrap: {bwrap})");
        return false;
    }
    true
}

struct Host {
    env: String,
    runner: Runner,
}

impl Host {
    async fn start(relay: &Relay, extra: &[&str]) -> Host {
        let (env, mut runner) = Runner::registered(relay, dev_env()).await;
        let child = runner
            .command()
            .arg("sandbox-host")
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sandbox-host");
        runner.child = Some(child);
        relay.wait_status(&env, "online").await;
        Host { env, runner }
    }

    fn pid(&self) -> i32 {
        self.runner
            .child
            .as_ref()
            .and_then(|c| c.id())
            .expect("running") as i32
    }

    fn sandboxes_dir(&self) -> std::path::PathBuf {
        self.runner.state_dir().join("sandboxes")
    }
}

/// Starts a sandbox on `host` for a new environment; the start's answer,
/// and the environment (online when the answer is ready).
async fn start_sandbox(relay: &Relay, host: &Host, extra: Value) -> (String, Value) {
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut args = json!({
        "sandbox_id": env.to_lowercase(),
        "session_id": "ses_test",
        "relay_url": format!("{}/runner/connect", relay.url.replacen("http", "ws", 1)),
        "token": token,
        "idle_timeout_s": 300,
        "max_lifetime_s": 600,
    });
    if let (Some(args), Value::Object(extra)) = (args.as_object_mut(), extra) {
        args.extend(extra);
    }
    let (status, body) = relay
        .invoke(
            &host.env,
            json!({"tool_name": "sandbox_start", "args": args, "timeout_s": 120}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["error"].is_null(), "{body}");
    let started = body["result"].clone();
    if started["state"] == "ready" {
        relay.wait_status(&env, "online").await;
    }
    (env, started)
}

async fn shell(relay: &Relay, env: &str, command: &str) -> (i64, String, String) {
    let (status, body) = relay
        .invoke(
            env,
            json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 60}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    (
        body["exit_code"].as_i64().unwrap_or(-1),
        body["result"]["stdout"].as_str().unwrap_or("").to_owned(),
        body["result"]["stderr"].as_str().unwrap_or("").to_owned(),
    )
}

/// Processes whose command line holds `marker`, and mounts naming it.
fn traces_of(marker: &str) -> (bool, bool) {
    let process = crate::support::process_with(marker);
    let mounts = std::fs::read_dir("/proc")
        .into_iter()
        .flat_map(|entries| entries.flatten())
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .any(|entry| {
            std::fs::read_to_string(entry.path().join("mountinfo"))
                .map(|text| text.contains(marker))
                .unwrap_or(false)
        });
    (process, mounts)
}

#[tokio::test]
async fn a_sandbox_runs_setup_as_root_serves_calls_and_sees_nothing_of_the_host() {
    if !can_sandbox("a_sandbox_runs_setup_as_root_serves_calls_and_sees_nothing_of_the_host") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let secret_marker = format!("/root/sandbox-test-{}", std::process::id());
    std::fs::write(&secret_marker, "host only").expect("marker in /root");

    let started_at = Instant::now();
    let (env, started) = start_sandbox(
        &relay,
        &host,
        json!({
            "env": [{"name": "GREETING", "value": "hello from the template"}],
            "setup_script": "id -u > /root/setup-uid; echo setting up; apt-get --version >/dev/null && echo apt ok",
        }),
    )
    .await;
    assert_eq!(started["state"], "ready", "{started}");
    assert_eq!(started["setup"]["exit_code"], 0, "{started}");
    assert!(
        started["setup"]["log_tail"]
            .as_str()
            .unwrap()
            .contains("setting up"),
        "{started}"
    );
    eprintln!(
        "sandbox ready in {:?} ({} ms by the host)",
        started_at.elapsed(),
        started["elapsed_ms"]
    );

    let (code, out, err) = shell(
        &relay,
        &env,
        "cat /root/setup-uid; id -u; echo $GREETING; pwd",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "0\n0\nhello from the template\n/workspace\n");

    // Nothing of the host: its /root, the host runner's files (token
    // included), the relay's database.
    let (_, out, _) = shell(
        &relay,
        &env,
        &format!("test -e {secret_marker} && echo visible; ls /root; echo end"),
    )
    .await;
    assert_eq!(out, "setup-uid\nend\n", "the host's /root shows");
    let mut private = vec![relay.dir.path().to_path_buf()];
    for entry in walk(&host.runner.config_dir())
        .into_iter()
        .chain(walk(relay.dir.path()))
    {
        private.push(entry);
    }
    assert!(private.len() > 2, "{private:?}");
    for path in &private {
        let (code, out, _) = shell(
            &relay,
            &env,
            &format!("cat '{}' || ls '{}'", path.display(), path.display()),
        )
        .await;
        assert_ne!(code, 0, "{} is readable inside: {out}", path.display());
    }
    let (_, out, _) = shell(
        &relay,
        &env,
        "cat /etc/shadow; ls /etc/ssh 2>/dev/null | grep -c host_; echo end",
    )
    .await;
    assert_eq!(out, "0\nend\n", "shadow or ssh host keys visible");

    // A file written in one sandbox is absent from the next.
    let (code, _, _) = shell(
        &relay,
        &env,
        "echo one > /usr/local/written-here && echo x > /etc/written-here",
    )
    .await;
    assert_eq!(code, 0);
    let (second, started) = start_sandbox(&relay, &host, json!({})).await;
    assert_eq!(started["state"], "ready", "{started}");
    assert!(started["setup"].is_null(), "{started}");
    let (_, out, _) = shell(
        &relay,
        &second,
        "ls /usr/local/written-here /etc/written-here /root/setup-uid 2>&1 | grep -c 'No such'",
    )
    .await;
    assert_eq!(out, "3\n");
    assert!(
        !std::path::Path::new("/usr/local/written-here").exists(),
        "a sandbox wrote to the host's /usr"
    );
    std::fs::remove_file(&secret_marker).ok();

    // Destroy: gone, and idempotent.
    let id = env.to_lowercase();
    let (status, body) = relay
        .invoke(
            &host.env,
            json!({"tool_name": "sandbox_destroy", "args": {"sandbox_id": id}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"], json!({"sandbox_id": id, "existed": true}));
    assert!(!host.sandboxes_dir().join(&id).exists());
    relay.wait_status(&env, "offline").await;
    let (_, body) = relay
        .invoke(
            &host.env,
            json!({"tool_name": "sandbox_destroy", "args": {"sandbox_id": id}}),
        )
        .await;
    assert_eq!(body["result"]["existed"], false, "{body}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
