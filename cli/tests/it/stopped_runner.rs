//! A runner stopped with SIGSTOP mid-call (issue 34's fault drill): its
//! socket stays open, so only its missing heartbeats tell the relay. The
//! relay drops it after six missed ones, the call fails in the journal
//! (`runner_disconnected`) and its caller gets its 503 then, not at its
//! timeout; the environment shows offline. After SIGCONT the same runner
//! process reconnects by itself, serves new calls, and reports the old
//! call's result, which replaces the `failed` entry (docs/relay.md, "A
//! later result wins").
//!
//! The relay asks for a heartbeat every second (the hidden `serve
//! --heartbeat-interval 1`), so "six missed" is 6 s, not the default 90 s.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{self, dev_env, Relay, Runner};

/// The call's own timeout at the relay: far longer than the relay takes
/// to notice the stopped runner, so an answer before it is the relay's.
const CALL_TIMEOUT_S: u64 = 300;
/// How long the call sleeps: past the relay's 6 s of silence, so the call
/// is still running when the relay gives up on the runner.
const CALL_SLEEP_S: u64 = 12;
/// Six missed heartbeats of 1 s, with room for a loaded machine.
const NOTICED_WITHIN: Duration = Duration::from_secs(30);

async fn entry(relay: &Relay, call_id: &str) -> Value {
    let (status, entry) = relay
        .api(Method::GET, &format!("/invocations/{call_id}"), None)
        .await;
    assert_eq!(status, 200, "{entry}");
    entry
}

#[tokio::test]
async fn a_stopped_runner_fails_its_call_at_once_and_reports_it_when_continued() {
    let relay = Relay::spawn_logged(&["--heartbeat-interval", "1"], &[]).await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let pid = Pid::from_raw(
        runner
            .child
            .as_ref()
            .and_then(tokio::process::Child::id)
            .and_then(|pid| i32::try_from(pid).ok())
            .expect("the runner's pid"),
    );
    let started = runner.workspace().join("started");
    let call_id = format!("stopped-{}", std::process::id());
    let body = json!({
        "tool_name": "shell",
        "call_id": call_id,
        "timeout_s": CALL_TIMEOUT_S,
        "args": {"command": format!("touch '{}'; sleep {CALL_SLEEP_S}; echo slept", started.display())},
    });
    let caller = {
        let (url, key, env) = (relay.url.clone(), relay.admin_key.clone(), env.clone());
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(format!("{url}/execution-environments/{env}/invoke-tool"))
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .expect("the relay answers");
            let status = response.status().as_u16();
            let answer: Value = response.json().await.expect("a JSON answer");
            (status, answer)
        })
    };
    support::wait_until("the call runs", || started.exists()).await;

    kill(pid, Signal::SIGSTOP).expect("SIGSTOP the runner");
    let stopped_at = Instant::now();
    let (status, answer) = tokio::time::timeout(NOTICED_WITHIN, caller)
        .await
        .expect("the caller is answered once the relay notices, not at its timeout")
        .expect("the caller");
    let waited = stopped_at.elapsed();
    assert_eq!(status, 503, "{answer}");
    assert_eq!(answer["error"]["code"], "runner_disconnected", "{answer}");
    assert!(
        waited >= Duration::from_secs(4),
        "answered {waited:?} after the stop: before six heartbeats were missed"
    );
    let (_, current) = relay
        .api(
            Method::GET,
            &format!("/execution-environments/{env}/status"),
            None,
        )
        .await;
    assert_eq!(current["status"], "offline", "{current}");
    let failed = entry(&relay, &call_id).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(failed["error_code"], "runner_disconnected", "{failed}");
    assert!(
        relay
            .log()
            .contains("no frame from the runner within the idle timeout"),
        "dropped for its silence: {}",
        relay.log()
    );
    eprintln!("stopped runner: its caller was answered {waited:?} after SIGSTOP");

    kill(pid, Signal::SIGCONT).expect("SIGCONT the runner");
    relay.wait_status(&env, "online").await;
    let (status, pong) = relay
        .invoke(
            &env,
            json!({"tool_name": "ping", "args": {"after": "SIGCONT"}}),
        )
        .await;
    assert_eq!(status, 200, "{pong}");
    assert!(
        runner
            .child
            .as_mut()
            .expect("running")
            .try_wait()
            .expect("wait")
            .is_none(),
        "the same runner process reconnected"
    );

    // The call kept running under the stopped runner; once it ends the
    // runner reports it and the journal takes its result over `failed`.
    let deadline = Instant::now() + Duration::from_secs(CALL_SLEEP_S) + support::READY_DEADLINE;
    let done = loop {
        let current = entry(&relay, &call_id).await;
        if current["state"] == "done" {
            break current;
        }
        assert_eq!(current["state"], "failed", "{current}");
        assert!(Instant::now() < deadline, "never reported: {current}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["exit_code"], 0, "{done}");
    assert_eq!(done["result"]["stdout"], "slept\n", "{done}");
    assert!(done["error_code"].is_null(), "{done}");
    let _ = runner.stop().await;
}
