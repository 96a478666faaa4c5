//! `runner status --local` and the `--health-addr` endpoint against a real
//! relay and runner: connected, degraded while calls queue, disconnected
//! with the reason when the relay goes, stopped when the runner does.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{dev_env, wait_until, Relay, Runner};

/// `exit::NO_RUNNER`, `exit::CONFIG`.
const NO_RUNNER: i32 = 69;
const CONFIG: i32 = 78;

/// A port nobody listens on right now (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn status_local(runner: &Runner) -> (Option<i32>, Value) {
    let output = runner
        .command()
        .args(["status", "--local", "--json"])
        .output()
        .await
        .expect("run status --local");
    let body = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "status --local --json printed no JSON: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), body)
}

async fn get(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.expect("health endpoint answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON body"))
}

/// Polls `url` until `check` holds for its JSON (bounded).
async fn wait_json(url: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = get(url).await;
        if check(&body) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}; last: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn local_status_and_health_endpoint_follow_the_runner() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
    let addr = format!("127.0.0.1:{}", free_port());
    runner.start(&["--health-addr", &addr, "--max-concurrent-calls", "1"]);
    relay.wait_status(&env, "online").await;
    let base = format!("http://{addr}");

    // Connected: the endpoint and the command agree.
    let status = wait_json(&format!("{base}/status.json"), "connected", |b| {
        b["state"] == "connected"
    })
    .await;
    assert_eq!(status["environment_id"], json!(env));
    assert_eq!(status["relay"], json!(relay.url));
    assert_eq!(status["version"], json!(env!("CARGO_PKG_VERSION")));
    assert_eq!(status["max_concurrent_calls"], json!(1));
    let (code, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(
        (code, &body["status"]),
        (200, &json!("connected")),
        "{body}"
    );
    let (code, local) = status_local(&runner).await;
    assert_eq!(code, Some(0), "{local}");
    assert_eq!(local["running"], json!(true));
    assert_eq!(local["status"]["state"], json!("connected"));
    assert_eq!(local["status"]["environment_id"], json!(env));

    // Two slow calls with one slot: one runs, one queues → degraded, still
    // "up" for a watchdog (200), with the reason.
    let mut calls = Vec::new();
    for _ in 0..2 {
        let relay_url = relay.url.clone();
        let key = relay.admin_key.clone();
        let env = env.clone();
        calls.push(tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!(
                    "{relay_url}/execution-environments/{env}/invoke-tool"
                ))
                .bearer_auth(key)
                .json(
                    &json!({"tool_name": "shell", "args": {"command": "sleep 3"}, "timeout_s": 30}),
                )
                .send()
                .await
                .map(|r| r.status().as_u16())
        }));
    }
    let busy = wait_json(&format!("{base}/status.json"), "degraded", |b| {
        b["state"] == "degraded"
    })
    .await;
    assert_eq!(
        (busy["in_flight"].clone(), busy["backlog"].clone()),
        (json!(1), json!(1)),
        "{busy}"
    );
    let reason = busy["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("waiting for a free slot"), "{reason}");
    let (code, body) = get(&format!("{base}/healthz")).await;
    assert_eq!((code, &body["status"]), (200, &json!("degraded")), "{body}");
    for call in calls {
        assert_eq!(call.await.expect("join").expect("invoke"), 200);
    }
    wait_json(&format!("{base}/status.json"), "idle again", |b| {
        b["state"] == "connected" && b["in_flight"] == 0 && b["backlog"] == 0
    })
    .await;

    // The relay goes away: 503 with the reason, and `status --local` says
    // so with exit 69, while the runner keeps retrying.
    drop(relay);
    let down = wait_json(&format!("{base}/status.json"), "disconnected", |b| {
        b["state"] == "disconnected"
    })
    .await;
    assert!(
        down["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{down}"
    );
    let (code, body) = get(&format!("{base}/healthz")).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["status"], json!("disconnected"));
    let (code, local) = status_local(&runner).await;
    assert_eq!(code, Some(NO_RUNNER), "{local}");
    assert_eq!(local["status"]["state"], json!("disconnected"));

    // Stopped: the file outlives the process; the lock tells.
    runner.stop().await;
    let (code, local) = status_local(&runner).await;
    assert_eq!(code, Some(NO_RUNNER), "{local}");
    assert_eq!(local["running"], json!(false));
    assert_eq!(local["status"]["state"], json!("stopped"));
}

#[tokio::test]
async fn text_status_names_the_state_and_a_machine_without_a_runner_says_so() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(&relay, dev_env()).await;

    // Never run here: a clear error and exit 69.
    let output = runner
        .command()
        .args(["status", "--local"])
        .output()
        .await
        .expect("status");
    assert_eq!(output.status.code(), Some(NO_RUNNER));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no runner has run"), "{stderr}");

    runner.start(&[]);
    relay.wait_status(&env, "online").await;
    let state_dir = runner.state_dir();
    wait_until("the status file says connected", || {
        std::fs::read_to_string(state_dir.join("status.json"))
            .is_ok_and(|text| text.contains("\"connected\""))
    })
    .await;
    let output = runner
        .command()
        .args(["status", "--local"])
        .output()
        .await
        .expect("status");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("status") && stdout.contains("connected"),
        "{stdout}"
    );
    assert!(stdout.contains(&env), "{stdout}");
    assert!(
        stdout.contains("0 running, 0 queued (limit 32)"),
        "{stdout}"
    );

    // ENV and --local are exclusive; neither is a usage error.
    let output = runner
        .command()
        .args(["status"])
        .output()
        .await
        .expect("status");
    assert_eq!(output.status.code(), Some(2));
    runner.stop().await;
}

#[tokio::test]
async fn a_health_address_in_use_stops_the_runner_at_start() {
    let relay = Relay::spawn().await;
    let (_env, runner) = Runner::registered(&relay, dev_env()).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let output = runner
        .command()
        .args(["run", "--health-addr", &addr])
        .output()
        .await
        .expect("run");
    assert_eq!(output.status.code(), Some(CONFIG));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("health endpoint") && stderr.contains(&addr),
        "{stderr}"
    );
}
