//! `runner invoke --wait-approval` and `runner approvals`: a real relay, a
//! real runner, and a command whose effect on disk shows whether it ran.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

/// A development environment whose `shell` needs approval, its runner
/// online, and a CI agent (the requester) with its own API key.
async fn setup() -> (Relay, String, Runner, String) {
    setup_with(&[]).await
}

async fn setup_with(serve_flags: &[&str]) -> (Relay, String, Runner, String) {
    let relay = Relay::spawn_with(serve_flags).await;
    let (env, runner) = Runner::online(
        &relay,
        json!({
            "name": "gated",
            "tier": "development",
            "policy": {"tools": {"mode": "all"}, "approval_required": ["shell"]}
        }),
    )
    .await;
    let (status, member) = relay
        .api(
            reqwest::Method::POST,
            "/members",
            Some(json!({"name": "ci", "kind": "agent"})),
        )
        .await;
    assert_eq!(status, 201, "{member}");
    let key = member["api_key"].as_str().expect("key").to_owned();
    (relay, env, runner, key)
}

/// `runner invoke … --wait-approval=WAIT` as the agent, in the background.
fn invoke_waiting(
    relay: &Relay,
    key: &str,
    env: &str,
    command: &str,
    wait: &str,
) -> tokio::process::Child {
    relay
        .admin_command()
        .env("RUNNER_API_KEY", key)
        .args(["invoke", env, "shell", "--arg"])
        .arg(format!("command={command}"))
        .arg(format!("--wait-approval={wait}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn runner invoke")
}

/// The id of the one pending approval, once it exists.
async fn pending_id(relay: &Relay) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, list) = relay
            .api(reqwest::Method::GET, "/approvals?status=pending", None)
            .await;
        if let Some(id) = list["approvals"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no approval: {list}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn approvals(relay: &Relay, args: &[&str]) -> std::process::Output {
    relay
        .admin_command()
        .arg("approvals")
        .args(args)
        .output()
        .await
        .expect("runner approvals")
}

#[tokio::test]
async fn an_approved_call_runs_once_and_the_invoke_exits_with_its_code() {
    let (relay, env, runner, key) = setup().await;
    let marker = runner.workspace().join("ran-once");
    let command = format!("echo ran >> {} && exit 7", marker.display());
    let child = invoke_waiting(&relay, &key, &env, &command, "1m");
    let id = pending_id(&relay).await;
    assert!(!marker.exists(), "ran before approval");

    let listed = approvals(&relay, &["list"]).await;
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listed:?}");
    assert!(table.contains(&id) && table.contains("ran-once"), "{table}");

    let approved = approvals(&relay, &["approve", &id, "--comment", "ok", "--json"]).await;
    assert!(approved.status.success(), "{approved:?}");
    let body: Value = serde_json::from_slice(&approved.stdout).expect("json");
    assert_eq!(body["status"], "approved");
    // A second approval changes nothing.
    let again = approvals(&relay, &["approve", &id]).await;
    assert!(again.status.success(), "{again:?}");

    let (code, output) = wait_output(child).await;
    assert_eq!(code, Some(7), "{output}");
    assert!(
        output.contains(&format!("approval {id} requested")),
        "{output}"
    );
    assert_eq!(
        std::fs::read_to_string(&marker).expect("ran"),
        "ran\n",
        "exactly once"
    );
}

#[tokio::test]
async fn a_denied_call_exits_66_and_never_runs() {
    let (relay, env, runner, key) = setup().await;
    let marker = runner.workspace().join("never");
    let child = invoke_waiting(
        &relay,
        &key,
        &env,
        &format!("touch {}", marker.display()),
        "1m",
    );
    let id = pending_id(&relay).await;
    let denied = approvals(&relay, &["deny", &id, "--comment", "freeze"]).await;
    assert!(denied.status.success(), "{denied:?}");
    let (code, output) = wait_output(child).await;
    assert_eq!(code, Some(66), "{output}");
    assert!(
        output.contains("denied") && output.contains("freeze"),
        "{output}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "a denied call ran");

    // The requester cannot approve its own request (nor anything: an agent).
    let own = relay
        .admin_command()
        .env("RUNNER_API_KEY", &key)
        .args(["approvals", "approve", &id])
        .output()
        .await
        .expect("approve");
    assert_eq!(own.status.code(), Some(66), "{own:?}");
}

#[tokio::test]
async fn a_call_nobody_decides_in_time_exits_75_and_never_runs() {
    let (relay, env, runner, key) = setup().await;
    let marker = runner.workspace().join("undecided");
    let child = invoke_waiting(
        &relay,
        &key,
        &env,
        &format!("touch {}", marker.display()),
        "2s",
    );
    let (code, output) = wait_output(child).await;
    assert_eq!(code, Some(75), "{output}");
    assert!(output.contains("still pending"), "{output}");
    assert!(!marker.exists());
    // Without --wait-approval the refusal is immediate: 66.
    let refused = relay
        .admin_command()
        .env("RUNNER_API_KEY", &key)
        .args(["invoke", &env, "shell", "--arg", "command=true"])
        .output()
        .await
        .expect("invoke");
    assert_eq!(refused.status.code(), Some(66), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--wait-approval"), "{stderr}");
}

#[tokio::test]
async fn an_expired_approval_exits_66_and_never_runs() {
    let (relay, env, runner, key) = setup_with(&["--approval-ttl", "2"]).await;
    let marker = runner.workspace().join("expired");
    let child = invoke_waiting(
        &relay,
        &key,
        &env,
        &format!("touch {}", marker.display()),
        "1m",
    );
    let id = pending_id(&relay).await;
    let (code, output) = wait_output(child).await;
    assert_eq!(code, Some(66), "{output}");
    assert!(output.contains("expired"), "{output}");
    let late = approvals(&relay, &["approve", &id]).await;
    assert_eq!(late.status.code(), Some(64), "{late:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "an expired call ran");
}
