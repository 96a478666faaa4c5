//! The runner's bounded concurrency and the backlog it reports (SPEC §6):
//! a real relay and a real runner with `--max-concurrent-calls 1`; slow
//! shell calls beyond the first wait in the runner's queue, the heartbeat
//! carries the backlog, and the relay's status API shows the environment
//! `degraded` while they wait and `online` again once the queue is empty.
//!
//! The relay keeps its default heartbeat interval (15 s,
//! `DEFAULT_HEARTBEAT_INTERVAL_S`), so this test waits on real heartbeats:
//! about 30 s.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{self, dev_env, Relay};
use crate::tools_support::online_with;

/// One relay heartbeat interval plus room for a slow machine.
const HEARTBEAT_WAIT: Duration = Duration::from_secs(22);
/// The calls' timeout at the relay: longer than one heartbeat interval, so
/// a heartbeat sees them queued; the relay then cancels them on the runner.
const CALL_TIMEOUT_S: u64 = 25;

async fn status(relay: &Relay, env: &str) -> (String, String) {
    let (code, body) = relay
        .api(
            reqwest::Method::GET,
            &format!("/execution-environments/{env}/status"),
            None,
        )
        .await;
    assert_eq!(code, 200, "{body}");
    (
        body["status"].as_str().unwrap_or("?").to_owned(),
        body["reason"].as_str().unwrap_or("").to_owned(),
    )
}

async fn wait_for_status(relay: &Relay, env: &str, want: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let (status, reason) = status(relay, env).await;
        if status == want {
            return reason;
        }
        assert!(
            Instant::now() < deadline,
            "{env} stayed {status} ({reason}), wanted {want}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn queued_calls_show_as_a_degraded_runner_until_the_queue_drains() {
    let relay = Relay::spawn().await;
    let (env, _runner) =
        online_with(&relay, dev_env(), &[], &["--max-concurrent-calls", "1"]).await;
    assert_eq!(status(&relay, &env).await.0, "online");

    let id = std::process::id();
    let markers: Vec<String> = (1..=3).map(|n| format!("45.{id}{n}")).collect();
    let calls: Vec<_> = markers
        .iter()
        .map(|marker| {
            let relay_url = relay.url.clone();
            let key = relay.admin_key.clone();
            let env = env.clone();
            let body = json!({
                "tool_name": "shell",
                "args": {"command": format!("sleep {marker}")},
                "timeout_s": CALL_TIMEOUT_S,
            });
            tokio::spawn(async move {
                let response = reqwest::Client::new()
                    .post(format!(
                        "{relay_url}/execution-environments/{env}/invoke-tool"
                    ))
                    .bearer_auth(key)
                    .json(&body)
                    .send()
                    .await
                    .expect("relay answers");
                response.status().as_u16()
            })
        })
        .collect();

    // While the first call runs the other two wait: one sleep runs, and the
    // next heartbeat reports the backlog.
    let reason = wait_for_status(&relay, &env, "degraded", HEARTBEAT_WAIT).await;
    eprintln!("degraded while calls queue: {reason}");
    assert!(
        reason.contains("2 calls are waiting for an executor") || reason.contains("probe"),
        "{reason}"
    );
    let running = markers
        .iter()
        .filter(|marker| support::process_with(&format!("sleep {marker}")))
        .count();
    assert_eq!(running, 1, "one call at a time runs");

    // The relay times them out and cancels them; the queue empties and the
    // next heartbeat brings the runner back online.
    for call in calls {
        assert_eq!(call.await.expect("call task"), 504);
    }
    wait_for_status(&relay, &env, "online", HEARTBEAT_WAIT).await;
    for marker in &markers {
        assert!(!support::process_with(&format!("sleep {marker}")));
    }
}

/// SPEC §6: the executor health probe measures something. A workspace
/// that cannot take a file (here a file where the directory was, which
/// stops root too, unlike permission bits) makes the runner `degraded`
/// at the relay; a usable one again makes it `online`.
#[tokio::test]
async fn an_unwritable_workspace_fails_the_executor_probe_and_degrades_the_runner() {
    let relay = Relay::spawn().await;
    let (env, runner) = support::Runner::online(&relay, dev_env()).await;
    // A probe and a heartbeat after each change.
    let within = HEARTBEAT_WAIT + Duration::from_secs(12);
    let workspace = runner.workspace();
    std::fs::remove_dir_all(&workspace).expect("remove the workspace");
    std::fs::write(&workspace, "not a directory").expect("a file in its place");
    let reason = wait_for_status(&relay, &env, "degraded", within).await;
    assert!(reason.contains("probe"), "{reason}");

    std::fs::remove_file(&workspace).expect("remove the file");
    std::fs::create_dir(&workspace).expect("the workspace again");
    wait_for_status(&relay, &env, "online", within).await;
}
