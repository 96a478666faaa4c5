//! Issue 28's figures: a session asking for a sandbox, from `POST
//! /sessions` to its first `true` answered (the sandbox started, isolated,
//! its runner connected, the call run), side by side in the same rounds
//! with a bare isolation start (`bwrap … true`, the engine the host uses)
//! and a local `bash -c true`; then the memory a sandbox holds at idle.
//!
//! One relay on SQLite and one real `runner sandbox-host` on this machine.
//! Each session is ended after its call (not timed), so the host never
//! holds more than one sandbox during the timed rounds.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use tokio::process::Command;

use crate::procs::{self, Bins, Relay, Runner};
use crate::stats::Summary;
use crate::{note, round, RunArgs};

/// Target: a sandbox session's first `true` within this factor of the bare
/// isolation start, plus [`TARGET_SLACK`].
const TARGET_FACTOR: f64 = 1.5;
const TARGET_SLACK: Duration = Duration::from_millis(50);
/// And its p50 under this, with no setup script.
const TARGET_P50: Duration = Duration::from_millis(150);
/// Sandboxes held at once for the idle memory figure.
const IDLE_SANDBOXES: usize = 8;

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-sandbox-")
        .tempdir()?;
    let relay = Relay::spawn(bins, &data.path().join("relay"), "127.0.0.1:0", None).await?;
    let mut host = start_host(bins, &relay).await?;
    let http = procs::http_client(4)?;
    let rounds = if args.quick {
        10
    } else {
        args.sandbox_sessions
    };
    for _ in 0..3 {
        sandbox_true(&http, &relay).await?;
        bare_isolation().await?;
        bash_true().await?;
    }
    let (mut session, mut bare, mut bash) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        session.push(sandbox_true(&http, &relay).await?);
        bare.push(bare_isolation().await?);
        bash.push(bash_true().await?);
    }
    let session = Summary::of(&session);
    let bare = Summary::of(&bare);
    let bash = Summary::of(&bash);
    let bound_us = TARGET_FACTOR * bare.p50_us + TARGET_SLACK.as_secs_f64() * 1e6;
    let met = session.p50_us <= bound_us && session.p50_us <= TARGET_P50.as_secs_f64() * 1e6;
    note(&format!(
        "sandbox session → first true p50 {:.1} ms (p90 {:.1} ms); bare bwrap true {:.1} ms; \
         bash -c true {:.2} ms; bound {:.1} ms",
        session.p50_us / 1e3,
        session.p90_us / 1e3,
        bare.p50_us / 1e3,
        bash.p50_us / 1e3,
        bound_us / 1e3
    ));
    let idle = idle_memory(&http, &relay, &host).await?;
    procs::stop(
        host.child.as_mut().context("the host")?,
        Duration::from_secs(5),
    )
    .await;
    Ok(json!({
        "session_to_first_true": session.to_json(),
        "bare_isolation_true": bare.to_json(),
        "local_bash_true": bash.to_json(),
        "over_bare_p50": round(session.p50_us / bare.p50_us.max(f64::MIN_POSITIVE), 2),
        "target": format!("p50 <= {TARGET_FACTOR} x bare + {} ms and <= {} ms",
            TARGET_SLACK.as_millis(), TARGET_P50.as_millis()),
        "bound_ms": round(bound_us / 1e3, 1),
        "met": met,
        "idle": idle,
    }))
}

/// A sandbox host environment, and `runner sandbox-host` connected to it.
async fn start_host(bins: &Bins, relay: &Relay) -> anyhow::Result<Runner> {
    let (status, env) = relay
        .api(
            reqwest::Method::POST,
            "/execution-environments",
            Some(&json!({"name": "bench-host", "type": "sandbox-host"})),
        )
        .await?;
    if status != 201 {
        bail!("creating the sandbox host's environment: HTTP {status}: {env}");
    }
    let id = env["id"].as_str().context("no id")?.to_owned();
    let (status, token) = relay
        .api(
            reqwest::Method::POST,
            &format!("/execution-environments/{id}/generate-token"),
            Some(&json!({})),
        )
        .await?;
    if status != 200 {
        bail!("a token for the sandbox host: HTTP {status}: {token}");
    }
    let token = token["token"].as_str().context("no token")?.to_owned();
    let mut host = Runner::new()?;
    let log = fs_err::File::create(host.home.path().join("host.log"))?;
    let child = host
        .command(bins)
        .args(["sandbox-host", "--url", &relay.url])
        .env("RUNNER_TOKEN", &token)
        .stdout(Stdio::null())
        .stderr(Stdio::from(log.into_parts().0))
        .spawn()
        .context("starting runner sandbox-host")?;
    host.child = Some(child);
    relay.wait_online(&id).await.with_context(|| {
        format!(
            "the sandbox host (log: {})",
            host.home.path().join("host.log").display()
        )
    })?;
    Ok(host)
}

/// One session: created, its first call `shell true` answered (timed),
/// then ended (not timed).
async fn sandbox_true(http: &reqwest::Client, relay: &Relay) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let id = new_sandbox_session(http, relay).await?;
    call_true(http, relay, &id).await?;
    let took = started.elapsed();
    end_session(http, relay, &id).await?;
    Ok(took)
}

async fn new_sandbox_session(http: &reqwest::Client, relay: &Relay) -> anyhow::Result<String> {
    let (status, session) = procs::api(
        http,
        &relay.url,
        &relay.admin_key,
        reqwest::Method::POST,
        "/sessions",
        Some(&json!({"environment": "sandbox"})),
    )
    .await?;
    if status != 201 {
        bail!("creating a sandbox session: HTTP {status}: {session}");
    }
    Ok(session["id"].as_str().context("no session id")?.to_owned())
}

async fn call_true(http: &reqwest::Client, relay: &Relay, id: &str) -> anyhow::Result<()> {
    let (status, body) = procs::api(
        http,
        &relay.url,
        &relay.admin_key,
        reqwest::Method::POST,
        &format!("/sessions/{id}/invoke-tool"),
        Some(&json!({"tool_name": "shell", "args": {"command": "true"}})),
    )
    .await?;
    if status != 200 || body["exit_code"] != json!(0) {
        bail!("true in the sandbox: HTTP {status}: {body}");
    }
    Ok(())
}

async fn end_session(http: &reqwest::Client, relay: &Relay, id: &str) -> anyhow::Result<()> {
    let (status, body) = procs::api(
        http,
        &relay.url,
        &relay.admin_key,
        reqwest::Method::DELETE,
        &format!("/sessions/{id}"),
        None,
    )
    .await?;
    if status != 204 {
        bail!("ending session {id}: HTTP {status}: {body}");
    }
    Ok(())
}

/// The isolation alone: the namespaces a sandbox gets, around `true`.
async fn bare_isolation() -> anyhow::Result<Duration> {
    timed(
        Command::new("bwrap").args([
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--unshare-all",
            "--uid",
            "0",
            "--gid",
            "0",
            "--die-with-parent",
            "--",
            "true",
        ]),
        "bwrap true",
    )
    .await
}

async fn bash_true() -> anyhow::Result<Duration> {
    timed(Command::new("bash").args(["-c", "true"]), "bash -c true").await
}

async fn timed(command: &mut Command, what: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .with_context(|| format!("running {what}"))?;
    let took = started.elapsed();
    if !status.success() {
        bail!("{what} failed: {status}");
    }
    Ok(took)
}

/// Memory the host's process tree holds with [`IDLE_SANDBOXES`] idle
/// sandboxes, less what it holds with none, per sandbox.
async fn idle_memory(
    http: &reqwest::Client,
    relay: &Relay,
    host: &Runner,
) -> anyhow::Result<Value> {
    let host_pid = host.pid()?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let empty_kib = tree_rss_kib(host_pid);
    let mut sessions = Vec::with_capacity(IDLE_SANDBOXES);
    for _ in 0..IDLE_SANDBOXES {
        let id = new_sandbox_session(http, relay).await?;
        call_true(http, relay, &id).await?;
        sessions.push(id);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let full_kib = tree_rss_kib(host_pid);
    for id in &sessions {
        end_session(http, relay, id).await?;
    }
    let each_kib = full_kib.saturating_sub(empty_kib) / IDLE_SANDBOXES as u64;
    note(&format!(
        "{IDLE_SANDBOXES} idle sandboxes: {:.1} MiB each (host tree {:.1} → {:.1} MiB)",
        each_kib as f64 / 1024.0,
        empty_kib as f64 / 1024.0,
        full_kib as f64 / 1024.0
    ));
    Ok(json!({
        "sandboxes": IDLE_SANDBOXES,
        "rss_each_mib": round(each_kib as f64 / 1024.0, 1),
        "host_tree_empty_mib": round(empty_kib as f64 / 1024.0, 1),
        "host_tree_full_mib": round(full_kib as f64 / 1024.0, 1),
    }))
}

/// RSS of `pid` and every descendant, KiB (shared pages counted in each).
fn tree_rss_kib(pid: u32) -> u64 {
    let mut total = 0;
    let mut stack = vec![pid];
    while let Some(pid) = stack.pop() {
        total += procs::memory(pid).map_or(0, |memory| memory.rss_kib);
        stack.extend(children(pid));
    }
    total
}

fn children(pid: u32) -> Vec<u32> {
    let task = Path::new("/proc").join(pid.to_string()).join("task");
    let Ok(threads) = fs_err::read_dir(&task) else {
        return Vec::new();
    };
    threads
        .filter_map(Result::ok)
        .filter_map(|thread| fs_err::read_to_string(thread.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
