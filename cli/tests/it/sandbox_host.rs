//! `runner sandbox-host` end to end: a real relay, a real host with real
//! bubblewrap, sandboxes started through the relay's invoke API (as the
//! relay's own placement will) and called like any environment.
//!
//! Needs root and bwrap; without them each test says it is skipped.

use std::time::Instant;

use serde_json::{json, Value};

use crate::support::{dev_env, wait_until, Relay, Runner};

/// Whether this machine can run the tests; says why not.
pub fn can_sandbox(test: &str) -> bool {
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

    /// SIGTERM, as a service manager stops it: it destroys its sandboxes.
    async fn stop(mut self) {
        let (code, stderr) = self.runner.stop().await;
        assert_eq!(code, Some(0), "{stderr}");
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
            .expect("log tail")
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
    host.stop().await;
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

/// A plain HTTP server on the host's 127.0.0.1 answering `hello` to anything.
async fn hello_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    port
}

/// A Python program that honours the proxy variables (urllib): prints the
/// body, or the HTTP status of a refusal.
fn fetch(url: &str) -> String {
    format!(
        "python3 -c 'import urllib.request,urllib.error,sys\ntry: print(urllib.request.urlopen(\"{url}\", timeout=10).read().decode())\nexcept urllib.error.HTTPError as e: print(\"status\", e.code)\nexcept Exception as e: print(\"failed\", type(e).__name__)'"
    )
}

/// A Python program that goes around any proxy: a raw TCP connection.
fn raw_connect(port: u16) -> String {
    format!(
        "python3 -c 'import socket\ntry:\n socket.create_connection((\"127.0.0.1\", {port}), timeout=5); print(\"connected\")\nexcept Exception as e: print(\"failed\", type(e).__name__)'"
    )
}

#[tokio::test]
async fn network_none_reaches_nothing_allowlist_only_its_domains_allow_all_everything() {
    if !can_sandbox("network_none_reaches_nothing_allowlist_only_its_domains_allow_all_everything")
    {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let port = hello_server().await;

    // No relay_url: the host's own.
    let (none, started) =
        start_sandbox(&relay, &host, json!({"network": "none", "relay_url": ""})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let (_, out, _) = shell(&relay, &none, &raw_connect(port)).await;
    assert!(
        out.starts_with("failed"),
        "none connected to the host: {out}"
    );
    let (_, out, _) = shell(&relay, &none, "env | grep -ci proxy; true").await;
    assert_eq!(out, "0\n", "none gives tools proxy variables");
    let (_, out, _) = shell(&relay, &none, &fetch(&format!("http://localhost:{port}/"))).await;
    assert!(
        out.starts_with("failed"),
        "none fetched through something: {out}"
    );

    let (list, started) = start_sandbox(
        &relay,
        &host,
        json!({"network": "allowlist", "allowed_domains": ["localhost"]}),
    )
    .await;
    assert_eq!(started["state"], "ready", "{started}");
    let (_, out, _) = shell(&relay, &list, &fetch(&format!("http://localhost:{port}/"))).await;
    assert_eq!(out, "hello\n", "the allowed domain");
    let (_, out, _) = shell(&relay, &list, &fetch(&format!("http://127.0.0.1:{port}/"))).await;
    assert_eq!(out, "status 403\n", "an IP literal is no allowed domain");
    let (_, out, _) = shell(
        &relay,
        &list,
        &fetch(&format!("http://localhost.example:{port}/")),
    )
    .await;
    assert_eq!(out, "status 403\n", "another domain");
    let (_, out, _) = shell(&relay, &list, &raw_connect(port)).await;
    assert!(
        out.starts_with("failed"),
        "a raw socket went around the proxy: {out}"
    );

    let (all, started) = start_sandbox(&relay, &host, json!({"network": "allow_all"})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let (_, out, _) = shell(&relay, &all, &raw_connect(port)).await;
    assert_eq!(out, "connected\n", "allow_all is the host's network");
    host.stop().await;
}

#[tokio::test]
async fn a_failing_setup_fails_the_start_with_its_log_tail_and_leaves_nothing() {
    if !can_sandbox("a_failing_setup_fails_the_start_with_its_log_tail_and_leaves_nothing") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(
        &relay,
        &host,
        json!({"setup_script": "for i in $(seq 3000); do echo line $i; done; echo the last words >&2; exit 7"}),
    )
    .await;
    assert_eq!(started["state"], "failed", "{started}");
    assert_eq!(started["setup"]["exit_code"], 7, "{started}");
    let tail = started["setup"]["log_tail"].as_str().expect("tail");
    assert!(tail.ends_with("the last words\n"), "{tail}");
    assert!(
        tail.len() <= 4096 && !tail.contains("line 1\n"),
        "{}",
        tail.len()
    );
    assert!(
        started["reason"]
            .as_str()
            .expect("text")
            .contains("exit code 7"),
        "{started}"
    );
    assert_eq!(relay.status(&env).await, "pending");
    assert!(!host.sandboxes_dir().join(env.to_lowercase()).exists());
    host.stop().await;
}

#[tokio::test]
async fn an_idle_sandbox_stops_and_is_destroyed() {
    if !can_sandbox("an_idle_sandbox_stops_and_is_destroyed") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(&relay, &host, json!({"idle_timeout_s": 2})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let (code, _, _) = shell(&relay, &env, "true").await;
    assert_eq!(code, 0);
    let dir = host.sandboxes_dir().join(env.to_lowercase());
    assert!(dir.exists());
    wait_until("the idle sandbox is destroyed", || !dir.exists()).await;
    relay.wait_status(&env, "offline").await;
    let (process, mounts) = traces_of(&dir.display().to_string());
    assert!(!process && !mounts, "process {process}, mounts {mounts}");
    host.stop().await;
}

#[tokio::test]
async fn a_killed_host_leaves_nothing_after_its_restart() {
    if !can_sandbox("a_killed_host_leaves_nothing_after_its_restart") {
        return;
    }
    let relay = Relay::spawn().await;
    let mut host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(&relay, &host, json!({})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let dir = host.sandboxes_dir().join(env.to_lowercase());
    let marker = dir.display().to_string();
    assert_eq!(traces_of(&marker), (true, true), "a running sandbox shows");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(host.pid()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill -9");
    let _ = host.runner.child.take().expect("child").wait().await;
    wait_until("the sandbox's processes and mounts are gone", || {
        traces_of(&marker) == (false, false)
    })
    .await;
    relay.wait_status(&env, "offline").await;

    // The restarted host removes the directory and the cgroups.
    let child = host
        .runner
        .command()
        .arg("sandbox-host")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("restart");
    host.runner.child = Some(child);
    relay.wait_status(&host.env, "online").await;
    assert!(!dir.exists(), "the sandbox's directory is left");
    assert!(
        sandbox_cgroups(&env.to_lowercase()).is_empty(),
        "a cgroup is left"
    );
    let cgroups: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .expect("mountinfo")
        .lines()
        .filter(|line| line.contains(" - cgroup"))
        .filter_map(|line| line.split_whitespace().nth(4).map(str::to_owned))
        .collect();
    let id = env.to_lowercase();
    let own = std::fs::read_to_string("/proc/self/cgroup").expect("cgroup");
    for mount in cgroups {
        for line in own.lines() {
            let path = line.splitn(3, ':').nth(2).unwrap_or("/");
            let left = std::path::Path::new(&mount)
                .join(path.trim_start_matches('/'))
                .join("runner-sandboxes");
            let left = walk_dirs(&left).into_iter().find(|dir| dir.ends_with(&id));
            assert!(left.is_none(), "{left:?} is left");
        }
    }
    host.stop().await;
}

#[tokio::test]
async fn sandboxes_end_when_the_relay_is_gone_longer_than_their_idle_timeout() {
    if !can_sandbox("sandboxes_end_when_the_relay_is_gone_longer_than_their_idle_timeout") {
        return;
    }
    let mut relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(&relay, &host, json!({"idle_timeout_s": 2})).await;
    assert_eq!(started["state"], "ready", "{started}");
    // Busy (a long call) so that its own idle exit does not come first.
    let dir = host.sandboxes_dir().join(env.to_lowercase());
    let call = {
        let url = relay.url.clone();
        let key = relay.admin_key.clone();
        let env = env.clone();
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(format!("{url}/execution-environments/{env}/invoke-tool"))
                .bearer_auth(key)
                .json(&json!({"tool_name": "shell", "args": {"command": "sleep 61.5"}, "timeout_s": 120}))
                .send()
                .await;
        })
    };
    wait_until("the long call runs", || {
        crate::support::process_with("sleep 61.5")
    })
    .await;
    relay.kill().await;
    call.abort();
    wait_until("the host destroys the unreachable sandbox", || {
        !dir.exists()
    })
    .await;
    let (process, mounts) = traces_of(&dir.display().to_string());
    assert!(!process && !mounts, "process {process}, mounts {mounts}");
    host.stop().await;
}

#[tokio::test]
async fn memory_and_process_limits_hold() {
    if !can_sandbox("memory_and_process_limits_hold") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(
        &relay,
        &host,
        json!({"limits": {"memory_mb": 96, "pids": 40, "cpus": 0.5}}),
    )
    .await;
    assert_eq!(started["state"], "ready", "{started}");
    let groups = sandbox_cgroups(&env.to_lowercase());
    assert!(!groups.is_empty(), "no cgroup for the sandbox");
    let read = |file: &str| {
        groups
            .iter()
            .find_map(|dir| std::fs::read_to_string(dir.join(file)).ok())
            .map(|text| text.trim().to_owned())
    };
    match read("memory.max") {
        // cgroup v2
        Some(max) => {
            assert_eq!(max, (96 * 1024 * 1024).to_string());
            assert_eq!(read("cpu.max").as_deref(), Some("50000 100000"));
        }
        None => {
            assert_eq!(
                read("memory.limit_in_bytes"),
                Some((96 * 1024 * 1024).to_string())
            );
            assert_eq!(read("cpu.cfs_quota_us").as_deref(), Some("50000"));
        }
    }
    assert_eq!(read("pids.max").as_deref(), Some("40"));
    let (code, _, _) = shell(
        &relay,
        &env,
        "python3 -c 'b = bytearray(300 * 1024 * 1024); print(len(b))'",
    )
    .await;
    assert_ne!(code, 0, "300 MiB fit under a 96 MiB limit");
    let (_, out, _) = shell(
        &relay,
        &env,
        "python3 -c 'b = bytearray(20 * 1024 * 1024); print(len(b))'",
    )
    .await;
    assert_eq!(out, "20971520\n", "20 MiB did not fit");
    let (_, out, _) = shell(
        &relay,
        &env,
        "for i in $(seq 80); do sleep 5 & done 2>/dev/null; jobs -p | wc -l; kill $(jobs -p); wait",
    )
    .await;
    let started_processes: u32 = out.trim().parse().unwrap_or(0);
    assert!(
        started_processes < 40,
        "{started_processes} processes under a limit of 40"
    );
    // And the sandbox still answers.
    let (code, _, _) = shell(&relay, &env, "true").await;
    assert_eq!(code, 0);
    host.stop().await;
}

/// Every directory under `dir`.
fn walk_dirs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path().is_dir() {
            dirs.push(entry.path());
            dirs.extend(walk_dirs(&entry.path()));
        }
    }
    dirs
}

#[tokio::test]
async fn a_machine_that_cannot_sandbox_is_told_what_is_missing_and_the_host_refuses() {
    // No bwrap on PATH: the host refuses (exit 15) and doctor names it.
    let relay = Relay::spawn().await;
    let (_env, runner) = Runner::registered(&relay, dev_env()).await;
    let empty = tempfile::tempdir().expect("tempdir");
    let output = runner
        .command()
        .arg("sandbox-host")
        .env("PATH", empty.path())
        .output()
        .await
        .expect("run sandbox-host");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(15), "{stderr}");
    assert!(
        stderr.contains("refusing to start") && stderr.contains("bwrap is not on PATH"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: ") && stderr.contains("install bubblewrap"),
        "{stderr}"
    );

    let doctor = runner
        .command()
        .args(["doctor", "--sandbox-host"])
        .env("PATH", empty.path())
        .output()
        .await
        .expect("run doctor");
    let stdout = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        stdout.contains("Running sandboxes (runner sandbox-host)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("✗ bubblewrap") && stdout.contains("fix: install bubblewrap"),
        "{stdout}"
    );
    if can_sandbox("a_machine_that_cannot_sandbox_…: the all-met half") {
        let doctor = runner
            .command()
            .args(["doctor", "--sandbox-host"])
            .output()
            .await
            .expect("run doctor");
        let stdout = String::from_utf8_lossy(&doctor.stdout);
        for name in [
            "root",
            "bubblewrap",
            "user namespaces",
            "overlay",
            "cgroups",
        ] {
            assert!(stdout.contains(&format!("✓ {name}")), "{name}: {stdout}");
        }
    }
}

#[tokio::test]
async fn sandbox_starts_are_timed_start_to_first_call() {
    if !can_sandbox("sandbox_starts_are_timed_start_to_first_call") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &["--slots", "20"]).await;
    let (mut by_host, mut to_first_call, mut ids) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..10 {
        let begun = Instant::now();
        let (env, started) = start_sandbox(&relay, &host, json!({})).await;
        assert_eq!(started["state"], "ready", "{started}");
        let (code, _, _) = shell(&relay, &env, "true").await;
        assert_eq!(code, 0);
        to_first_call.push(begun.elapsed().as_millis() as u64);
        by_host.push(started["elapsed_ms"].as_u64().expect("elapsed_ms"));
        ids.push(env.to_lowercase());
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let memory: Vec<u64> = ids
        .iter()
        .filter_map(|id| {
            sandbox_cgroups(id).iter().find_map(|dir| {
                ["memory.current", "memory.usage_in_bytes"]
                    .iter()
                    .find_map(|file| std::fs::read_to_string(dir.join(file)).ok())
                    .and_then(|text| text.trim().parse().ok())
            })
        })
        .collect();
    assert_eq!(memory.len(), ids.len(), "memory of each sandbox");
    eprintln!(
        "memory per idle sandbox (its cgroup, page cache included): mean {} MiB, max {} MiB",
        memory.iter().sum::<u64>() / memory.len() as u64 / (1024 * 1024),
        memory.iter().max().copied().unwrap_or(0) / (1024 * 1024)
    );
    let percentiles = |mut v: Vec<u64>| {
        v.sort_unstable();
        (v[v.len() / 2], v[v.len() * 9 / 10])
    };
    let (host_p50, host_p90) = percentiles(by_host);
    let (call_p50, call_p90) = percentiles(to_first_call);
    eprintln!(
        "sandbox_start (host: request to runner started): p50 {host_p50} ms, p90 {host_p90} ms; \
         caller: start, env online, first `true` answered: p50 {call_p50} ms, p90 {call_p90} ms"
    );
    assert!(host_p50 < 1000, "a start takes {host_p50} ms");
    host.stop().await;
}

#[tokio::test]
async fn a_full_host_refuses_another_sandbox_until_one_ends() {
    if !can_sandbox("a_full_host_refuses_another_sandbox_until_one_ends") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &["--slots", "1"]).await;
    let (first, started) = start_sandbox(&relay, &host, json!({})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let (_, refused) = start_sandbox(&relay, &host, json!({})).await;
    assert_eq!(refused["state"], "failed", "{refused}");
    assert!(
        refused["reason"].as_str().expect("reason").contains("full"),
        "{refused}"
    );
    let (status, body) = relay
        .invoke(
            &host.env,
            json!({"tool_name": "sandbox_destroy", "args": {"sandbox_id": first.to_lowercase()}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, started) = start_sandbox(&relay, &host, json!({})).await;
    assert_eq!(
        started["state"], "ready",
        "a freed slot is used again: {started}"
    );
    host.stop().await;
}

/// The cgroup directories of sandbox `id`, in every hierarchy.
fn sandbox_cgroups(id: &str) -> Vec<std::path::PathBuf> {
    let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
        .expect("mountinfo")
        .lines()
        .filter(|line| line.contains(" - cgroup"))
        .filter_map(|line| line.split_whitespace().nth(4).map(str::to_owned))
        .collect();
    let own = std::fs::read_to_string("/proc/self/cgroup").expect("cgroup");
    let mut found = Vec::new();
    for mount in mounts {
        for line in own.lines() {
            let path = line.splitn(3, ':').nth(2).unwrap_or("/");
            let parent = std::path::Path::new(&mount)
                .join(path.trim_start_matches('/'))
                .join("runner-sandboxes");
            found.extend(
                walk_dirs(&parent)
                    .into_iter()
                    .filter(|dir| dir.ends_with(id)),
            );
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The wire, read directly: a WebSocket server standing in for the relay.
#[tokio::test]
async fn the_host_announces_its_two_tools_and_its_capacity_in_hello_and_heartbeats() {
    use futures_util::{SinkExt, StreamExt};
    use runner_proto::ws::{
        EnvironmentInfo, Policy, RelayMessage, RunnerMessage, ToolAccess, Welcome,
    };
    use tokio_tungstenite::tungstenite::Message;
    if !can_sandbox("the_host_announces_its_two_tools_and_its_capacity_in_hello_and_heartbeats") {
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let mut host = Runner {
        home: tempfile::tempdir().expect("tempdir"),
        child: None,
    };
    host.child = Some(
        host.command()
            .args(["sandbox-host", "--url", &url, "--slots", "3"])
            .env("RUNNER_TOKEN", "rnrt_not_checked_here")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn sandbox-host"),
    );
    let (tcp, _) = tokio::time::timeout(crate::support::READY_DEADLINE, listener.accept())
        .await
        .expect("the host connects")
        .expect("accept");
    let mut socket = tokio_tungstenite::accept_async(tcp).await.expect("upgrade");
    let hello = loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => {
                break serde_json::from_str::<RunnerMessage>(&text).expect("a runner frame")
            }
            Some(Ok(_)) => continue,
            other => panic!("the host went away: {other:?}"),
        }
    };
    let RunnerMessage::Hello(hello) = hello else {
        panic!("no hello first");
    };
    let names: Vec<&str> = hello.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["sandbox_start", "sandbox_destroy"]);
    let schema = &hello.tools[0].input_schema;
    for field in ["sandbox_id", "relay_url", "token", "network", "limits"] {
        assert!(
            schema["properties"].get(field).is_some(),
            "{field}: {schema}"
        );
    }
    let capacity = hello.sandbox_capacity.expect("capacity in hello");
    assert_eq!((capacity.slots_total, capacity.slots_used), (3, 0));
    assert!(
        capacity.memory_total_mb > 0 && capacity.memory_available_mb > 0,
        "{capacity:?}"
    );

    let welcome = RelayMessage::Welcome(Welcome {
        protocol_version: runner_proto::PROTOCOL_VERSION,
        environment: EnvironmentInfo {
            id: "env_host".into(),
            name: "host".into(),
            tags: vec![],
        },
        policy: Policy {
            tools: ToolAccess::All,
            file_paths: vec![],
            approval_required: vec![],
        },
        heartbeat_interval_s: 1,
        session_id: "s1".into(),
        epoch: 1,
        binary_output: true,
        tier: None,
        install_browser_tools: false,
    });
    socket
        .send(Message::Text(
            serde_json::to_string(&welcome).expect("json").into(),
        ))
        .await
        .expect("send welcome");
    let beat = loop {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(5), socket.next())
            .await
            .expect("a heartbeat within 5 s");
        if let Some(Ok(Message::Text(text))) = frame {
            if let Ok(RunnerMessage::Heartbeat(beat)) = serde_json::from_str(&text) {
                break beat;
            }
        }
    };
    let capacity = beat.sandbox_capacity.expect("capacity in heartbeats");
    assert_eq!((capacity.slots_total, capacity.slots_used), (3, 0));
    // Stopped, not killed: it removes its cgroup directories.
    let (code, stderr) = host.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test]
async fn a_sandbox_ends_at_its_maximum_lifetime_even_when_busy() {
    if !can_sandbox("a_sandbox_ends_at_its_maximum_lifetime_even_when_busy") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(&relay, &host, json!({"max_lifetime_s": 3})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let dir = host.sandboxes_dir().join(env.to_lowercase());
    let begun = Instant::now();
    // A call longer than the lifetime: cut off, not waited for.
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "sleep 30"}, "timeout_s": 60}),
        )
        .await;
    assert_ne!(body["exit_code"], 0, "{status} {body}");
    wait_until("the sandbox is destroyed at its lifetime", || !dir.exists()).await;
    assert!(
        begun.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        begun.elapsed()
    );
    relay.wait_status(&env, "offline").await;
    host.stop().await;
}

#[tokio::test]
async fn a_base_image_is_the_sandboxes_root_and_stays_unchanged() {
    if !can_sandbox("a_base_image_is_the_sandboxes_root_and_stays_unchanged") {
        return;
    }
    // A small root: the host's /usr as hard links (same file system, no
    // copy), its own /etc.
    let image = tempfile::tempdir().expect("tempdir");
    let root = image.path();
    let linked = std::process::Command::new("cp")
        .args(["-al", "/usr"])
        .arg(root.join("usr"))
        .status()
        .expect("cp");
    assert!(linked.success());
    for dir in ["etc", "proc", "dev", "tmp", "root", "run", "workspace"] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    for link in ["bin", "lib", "lib64", "sbin"] {
        if let Ok(target) = std::fs::read_link(format!("/{link}")) {
            std::os::unix::fs::symlink(target, root.join(link)).expect("symlink");
        }
    }
    for file in ["passwd", "group"] {
        std::fs::copy(format!("/etc/{file}"), root.join("etc").join(file)).expect("copy");
    }
    std::fs::write(root.join("etc/image-marker"), "from the image\n").expect("marker");

    let relay = Relay::spawn().await;
    let image_arg = root.display().to_string();
    let host = Host::start(&relay, &["--base-image", &image_arg]).await;
    let (env, started) = start_sandbox(
        &relay,
        &host,
        json!({"setup_script": "echo set > /usr/local/from-setup"}),
    )
    .await;
    assert_eq!(started["state"], "ready", "{started}");
    let (_, out, _) = shell(
        &relay,
        &env,
        "cat /etc/image-marker /usr/local/from-setup; ls /etc",
    )
    .await;
    assert_eq!(out, "from the image\nset\ngroup\nimage-marker\npasswd\n");
    assert!(
        !root.join("usr/local/from-setup").exists(),
        "the image was written to"
    );
    host.stop().await;
}

#[tokio::test]
async fn a_relay_behind_a_private_ca_is_trusted_by_the_sandboxes_of_a_host_that_trusts_it() {
    if !can_sandbox(
        "a_relay_behind_a_private_ca_is_trusted_by_the_sandboxes_of_a_host_that_trusts_it",
    ) {
        return;
    }
    let pki = crate::tls::TestPki::with_ca_name("sandbox test CA");
    let cert = pki.path("server.pem").display().to_string();
    let key = pki.path("server.key").display().to_string();
    let ca = pki.path("ca.pem").display().to_string();
    let relay = Relay::spawn_with(&["--tls-cert", &cert, "--tls-key", &key]).await;
    assert!(relay.url.starts_with("https://"), "{}", relay.url);
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut runner = Runner {
        home: tempfile::tempdir().expect("tempdir"),
        child: None,
    };
    runner.child = Some(
        runner
            .command()
            .args(["sandbox-host", "--url", &relay.url])
            .env("RUNNER_TOKEN", &token)
            .env("RUNNER_CA_FILE", &ca)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sandbox-host"),
    );
    relay.wait_status(&env, "online").await;
    let host = Host { env, runner };
    let (sandbox, started) = start_sandbox(&relay, &host, json!({})).await;
    assert_eq!(started["state"], "ready", "{started}");
    let (code, out, _) = shell(&relay, &sandbox, "echo over tls").await;
    assert_eq!((code, out.as_str()), (0, "over tls\n"));
    host.stop().await;
}

/// The whole path: the relay's own placement starts the sandbox of a
/// session asking for one (with a template: its variables and setup) on
/// this real host, the session's calls run in it, and ending the session
/// destroys it.
#[tokio::test]
async fn a_sandbox_session_runs_in_a_real_sandbox_and_ending_it_destroys_the_sandbox() {
    if !can_sandbox("a_sandbox_session_runs_in_a_real_sandbox_and_ending_it_destroys_the_sandbox") {
        return;
    }
    let relay = Relay::spawn().await;
    let (env, mut runner) =
        Runner::registered(&relay, json!({"name": "real-host", "type": "sandbox-host"})).await;
    runner.child = Some(
        runner
            .command()
            .arg("sandbox-host")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn sandbox-host"),
    );
    relay.wait_status(&env, "online").await;
    let host = Host { env, runner };

    let (status, template) = relay
        .api(
            reqwest::Method::POST,
            "/templates",
            Some(json!({
                "name": "real",
                "network": "none",
                "env_text": "GREETING=from the template\n",
                "setup_script": "echo prepared > /root/prepared; id -u\n",
            })),
        )
        .await;
    assert_eq!(status, 201, "{template}");
    let (status, session) = relay
        .api(
            reqwest::Method::POST,
            "/sessions",
            Some(json!({"environment": "sandbox", "template": "real"})),
        )
        .await;
    assert_eq!(status, 201, "{session}");
    let session = session["id"].as_str().expect("session id").to_owned();
    let path = format!("/sessions/{session}/invoke-tool");
    let invoke = |command: &str| {
        let body = json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 60});
        relay.api(reqwest::Method::POST, &path, Some(body))
    };
    let (status, body) =
        invoke("id -u; hostname; echo $GREETING; cat /root/prepared; echo kept > /root/note").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["stdout"], "0\nsandbox\nfrom the template\nprepared\n",
        "{body}"
    );
    let (_, body) = invoke("cat /root/note").await;
    assert_eq!(
        body["result"]["stdout"], "kept\n",
        "the same sandbox: {body}"
    );

    let sandboxes = std::fs::read_dir(host.sandboxes_dir())
        .expect("sandboxes dir")
        .flatten()
        .map(|entry| entry.path())
        .collect::<Vec<_>>();
    assert_eq!(sandboxes.len(), 1, "{sandboxes:?}");
    let (status, ended) = relay
        .api(
            reqwest::Method::DELETE,
            &format!("/sessions/{session}"),
            None,
        )
        .await;
    assert!(status < 300, "{status} {ended}");
    wait_until("ending the session destroys the sandbox", || {
        !sandboxes[0].exists()
    })
    .await;
    host.stop().await;
}

#[tokio::test]
async fn a_sandbox_without_limits_of_time_stays_a_deployment() {
    if !can_sandbox("a_sandbox_without_limits_of_time_stays_a_deployment") {
        return;
    }
    let relay = Relay::spawn().await;
    let host = Host::start(&relay, &[]).await;
    let (env, started) = start_sandbox(
        &relay,
        &host,
        json!({"idle_timeout_s": 0, "max_lifetime_s": 0, "network": "allow_all"}),
    )
    .await;
    assert_eq!(started["state"], "ready", "{started}");
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let (code, out, _) = shell(&relay, &env, "echo still here").await;
    assert_eq!((code, out.as_str()), (0, "still here\n"));
    assert!(host.sandboxes_dir().join(env.to_lowercase()).exists());
    host.stop().await;
}
