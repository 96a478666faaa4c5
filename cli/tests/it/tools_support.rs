//! Support for the tool tests: runners started with a chosen environment
//! (PATH, MCP config, permission file), Server-Sent Events from the relay,
//! a tiny HTTP server on 127.0.0.1:0, and process facts from /proc.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Relay, Runner, READY_DEADLINE};

/// Registers and starts a runner for a new environment with extra
/// environment variables and `run` arguments; waits until it is online.
pub async fn online_with(
    relay: &Relay,
    env_body: Value,
    env: &[(&str, &str)],
    run_args: &[&str],
) -> (String, Runner) {
    let environment = relay.create_env(env_body).await;
    let token = relay.token(&environment).await;
    let mut runner = Runner::register(relay, &token).await;
    let mut command = runner.command();
    command
        .arg("run")
        .args(run_args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    runner.child = Some(command.spawn().expect("spawn runner run"));
    relay.wait_status(&environment, "online").await;
    (environment, runner)
}

/// The entries of `GET /execution-environments/{id}/tools`.
pub async fn listed_tools(relay: &Relay, environment: &str) -> Vec<Value> {
    let (status, body) = relay
        .api(
            reqwest::Method::GET,
            &format!("/execution-environments/{environment}/tools"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["tools"].as_array().expect("tools array").clone()
}

/// The names in `GET /execution-environments/{id}/tools`.
pub async fn tool_names(relay: &Relay, environment: &str) -> Vec<String> {
    listed_tools(relay, environment)
        .await
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// Polls the catalogue until `check` holds on the tool names.
pub async fn wait_for_tools(
    relay: &Relay,
    environment: &str,
    what: &str,
    check: impl Fn(&[String]) -> bool,
) {
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        let names = tool_names(relay, environment).await;
        if check(&names) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting until {what}: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A directory to put on a runner's PATH, with symlinks to real binaries
/// and stand-in scripts.
pub struct BinDir {
    pub dir: tempfile::TempDir,
}

impl BinDir {
    pub fn new() -> BinDir {
        BinDir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Links `name` to the binary of that name on the test's PATH.
    pub fn link(&self, name: &str) -> PathBuf {
        let target =
            which(name).unwrap_or_else(|| panic!("{name} must be installed for this test"));
        let link = self.dir.path().join(name);
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        link
    }

    /// Writes an executable script.
    pub fn script(&self, name: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join(name);
        // Write to a temp name and rename, so a runner scanning PATH never
        // sees a half-written file.
        let temp = self.dir.path().join(format!(".{name}.tmp"));
        std::fs::write(&temp, text).expect("write script");
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::rename(&temp, &path).expect("rename");
        path
    }
}

/// This machine's Chromium, found as the runner finds it.
pub fn chromium() -> Option<PathBuf> {
    runner_cli::tools::toolbox::find_browser()
}

/// Fails the test, saying how to get one, where there is no Chromium.
pub fn require_chromium() {
    assert!(
        chromium().is_some(),
        "Chromium must be installed for this test (scripts/install-test-deps.sh)"
    );
}

pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `POST invoke-tool` with `Accept: text/event-stream`; returns the events
/// with the time each arrived.
pub async fn invoke_events(
    relay: &Relay,
    environment: &str,
    body: Value,
) -> (u16, Vec<(String, Value, Instant)>) {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/execution-environments/{environment}/invoke-tool",
            relay.url
        ))
        .bearer_auth(&relay.admin_key)
        .header("accept", "text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("relay answers");
    let status = response.status().as_u16();
    let mut response = response;
    let mut buffer = String::new();
    let mut events = Vec::new();
    while let Some(chunk) = tokio::time::timeout(READY_DEADLINE, response.chunk())
        .await
        .expect("the event stream goes on")
        .expect("read the event stream")
    {
        let now = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    name = value.to_owned();
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push_str(value);
                }
            }
            if !name.is_empty() {
                let value = serde_json::from_str(&data).unwrap_or(Value::String(data));
                events.push((name, value, now));
            }
        }
    }
    (status, events)
}

/// A one-route HTTP/1.1 server on 127.0.0.1:0 answering every request with
/// `body` (`content_type`), until the test ends. Returns its base URL.
pub async fn serve(body: Vec<u8>, content_type: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                // Read the request head (we answer every request the same).
                let mut head = Vec::new();
                let mut byte = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut byte).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&byte[..n]),
                    }
                }
                let header = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nx-test: yes\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(header.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{address}")
}

/// `VmHWM` (peak resident memory) of a process, in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}
