//! Sessions on sandboxes, relay side, over real sockets: the relay places
//! a session's sandbox on the least loaded sandbox host, hands it a
//! single-use token, sends the session's calls to the runner that connects
//! with it, and destroys it when the session ends. The hosts here are
//! protocol peers driven step by step (the isolation itself is tested with
//! real `runner sandbox-host` processes in the CLI's tests).

use reqwest::{Method, StatusCode};
use runner_proto::sandbox::{
    Capacity, DestroySandbox, Destroyed, SandboxState, SetupReport, StartSandbox, Started,
    DESTROY_TOOL, HOST_ROLE, START_TOOL,
};
use runner_proto::ws::{Call, CallResult, RunnerMessage};
use serde_json::{json, Value};

use runner_relay::metrics::Metrics;
use runner_relay::secret::Secret;

use crate::support::{
    code, hello, open_socket, spawn_relay, spawn_relay_with, FakeRunner, TestRelay, DEADLINE,
};

const SCRAPE_TOKEN: &str = "sandbox-scrape-token";

/// A sandbox host's environment and its connected (fake) host.
async fn host(relay: &TestRelay, name: &str, used: u32, total: u32) -> (String, FakeRunner) {
    let id = relay
        .create_env(json!({ "name": name, "type": HOST_ROLE }))
        .await;
    let token = relay.token(&id).await;
    let mut greeting = hello(name, name, &[START_TOOL, DESTROY_TOOL]);
    greeting.sandbox_capacity = Some(Capacity {
        slots_total: total,
        slots_used: used,
        memory_total_mb: 8192,
        memory_available_mb: 4096,
    });
    let runner = FakeRunner::connect(relay, &token, greeting).await;
    relay.wait_status(&id, |s| s["status"] == "online").await;
    (id, runner)
}

/// Answers a host call with `output` as its JSON result, as the host does.
async fn answer(host: &mut FakeRunner, call: &Call, output: &impl serde::Serialize) {
    host.send(&RunnerMessage::Result(CallResult {
        call_id: call.call_id.clone(),
        result: serde_json::to_value(output).expect("encodes"),
        exit_code: Some(0),
        error: None,
        error_code: None,
    }))
    .await;
}

/// Takes a `sandbox_start` call: connects the sandbox's runner with the
/// token it carries and answers ready.
async fn start_sandbox(relay: &TestRelay, host: &mut FakeRunner) -> (StartSandbox, FakeRunner) {
    let call = host.next_call().await;
    assert_eq!(call.tool, START_TOOL);
    let start: StartSandbox = serde_json::from_value(call.args.clone()).expect("start args");
    let sandbox = FakeRunner::connect(
        relay,
        &start.token.0,
        hello("sandbox", &start.sandbox_id, &["ping", "shell"]),
    )
    .await;
    answer(
        host,
        &call,
        &Started {
            sandbox_id: start.sandbox_id.clone(),
            state: SandboxState::Ready,
            reason: None,
            setup: None,
            elapsed_ms: 40,
        },
    )
    .await;
    (start, sandbox)
}

async fn session(relay: &TestRelay, key: &str, body: Value) -> String {
    let (status, session) = relay
        .request(Method::POST, "/sessions", Some(key), Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    session["id"].as_str().expect("id").to_owned()
}

/// Starts a session call in the background (the first one waits for the
/// sandbox).
fn call_in_background(
    relay: &TestRelay,
    key: &str,
    session: &str,
) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let url = format!("{}/sessions/{session}/invoke-tool", relay.url);
    let key = key.to_owned();
    tokio::spawn(async move {
        let response = reqwest::Client::new()
            .post(url)
            .bearer_auth(key)
            .json(&json!({ "tool_name": "ping", "args": {} }))
            .send()
            .await
            .expect("sent");
        let status = response.status();
        let environment = response
            .headers()
            .get("x-runner-environment")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut body: Value = response.json().await.unwrap_or(Value::Null);
        if let Some(environment) = environment {
            body["environment_header"] = json!(environment);
        }
        (status, body)
    })
}

async fn finished(call: tokio::task::JoinHandle<(StatusCode, Value)>) -> (StatusCode, Value) {
    tokio::time::timeout(DEADLINE, call)
        .await
        .expect("the call ends within the deadline")
        .expect("the call task")
}

#[tokio::test]
async fn a_sandbox_session_runs_on_the_least_loaded_host_and_ends_with_its_sandbox() {
    let relay = spawn_relay_with(|state| {
        state.with_metrics(Metrics::new().with_scrape_token(&Secret::new(SCRAPE_TOKEN)))
    })
    .await;
    let (_busy_id, mut busy) = host(&relay, "busy-host", 3, 4).await;
    let (idle_id, mut idle) = host(&relay, "idle-host", 0, 4).await;
    let member = relay.member(false, &[]).await;
    let id = session(&relay, &member, json!({ "environment": "sandbox" })).await;

    let first = call_in_background(&relay, &member, &id);
    let (start, mut sandbox) = start_sandbox(&relay, &mut idle).await;
    assert_eq!(start.session_id, id);
    assert!(start.sandbox_id.starts_with("sbx_"), "{}", start.sandbox_id);
    assert_eq!(
        start.network,
        runner_proto::sandbox::Network::None,
        "default: no network"
    );
    assert!(start.relay_url.is_empty(), "the host's own URL");
    let call = sandbox.next_call().await;
    assert_eq!(call.tool, "ping");
    sandbox.answer(&call, 0).await;
    let (status, body) = finished(first).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["environment_header"], json!(start.sandbox_id));

    // The token was for that one connection.
    let again = open_socket(&relay, &start.token.0).await;
    assert!(again.is_err(), "a used sandbox token opens nothing");

    // The next call goes to the same sandbox; no host hears of it.
    let second = call_in_background(&relay, &member, &id);
    let call = sandbox.next_call().await;
    sandbox.answer(&call, 0).await;
    assert_eq!(finished(second).await.0, StatusCode::OK);

    let (status, view) = relay
        .request(Method::GET, &format!("/sessions/{id}"), Some(&member), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["sandbox"]["id"], json!(start.sandbox_id), "{view}");
    assert_eq!(view["sandbox"]["host_id"], json!(idle_id));
    assert_eq!(view["sandbox"]["host_name"], "idle-host");
    assert_eq!(view["sandbox"]["state"], "ready");

    // Sandboxes and hosts are not environments a member lists or calls.
    let (_, listed) = relay
        .request(Method::GET, "/execution-environments", Some(&member), None)
        .await;
    assert_eq!(listed["environments"], json!([]), "{listed}");
    let (status, refused) = relay
        .invoke(&idle_id, json!({ "tool_name": START_TOOL, "args": {} }))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("sandbox host"),
        "{refused}"
    );

    // Ending the session destroys the sandbox on its host.
    let ending = {
        let url = format!("{}/sessions/{id}", relay.url);
        let member = member.clone();
        tokio::spawn(async move {
            reqwest::Client::new()
                .delete(url)
                .bearer_auth(member)
                .send()
                .await
                .expect("sent")
                .status()
        })
    };
    let destroy = idle.next_call().await;
    assert_eq!(destroy.tool, DESTROY_TOOL);
    let args: DestroySandbox = serde_json::from_value(destroy.args.clone()).expect("args");
    assert_eq!(args.sandbox_id, start.sandbox_id);
    answer(
        &mut idle,
        &destroy,
        &Destroyed {
            sandbox_id: args.sandbox_id.clone(),
            existed: true,
        },
    )
    .await;
    assert_eq!(
        tokio::time::timeout(DEADLINE, ending)
            .await
            .expect("ends")
            .expect("task"),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        code(&sandbox.closed().await),
        Some(runner_proto::close::DELETED)
    );
    let (_, record) = relay.get(&format!("/sandboxes/{}", start.sandbox_id)).await;
    assert_eq!(record["state"], "stopped", "{record}");
    assert_eq!(record["reason"], "its session ended");

    let metrics = relay
        .http
        .get(format!("{}/metrics", relay.url))
        .bearer_auth(SCRAPE_TOKEN)
        .send()
        .await
        .expect("scraped")
        .text()
        .await
        .expect("body");
    assert!(
        metrics.contains("runner_relay_sandbox_starts_total{outcome=\"ready\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("runner_relay_sandbox_start_duration_seconds_count 1"),
        "{metrics}"
    );

    // The busy host was never asked.
    busy.send(&RunnerMessage::Heartbeat(Default::default()))
        .await;
    assert!(matches!(
        busy.next_frame().await,
        runner_proto::ws::RelayMessage::HeartbeatAck(_)
    ));
}

#[tokio::test]
async fn a_failing_setup_reaches_the_caller_with_its_log_and_leaves_no_environment() {
    let relay = spawn_relay().await;
    let (_, mut host) = host(&relay, "host", 0, 2).await;
    let member = relay.member(false, &[]).await;
    let id = session(&relay, &member, json!({ "environment": "sandbox" })).await;
    let first = call_in_background(&relay, &member, &id);
    let call = host.next_call().await;
    let start: StartSandbox = serde_json::from_value(call.args.clone()).expect("args");
    answer(
        &mut host,
        &call,
        &Started {
            sandbox_id: start.sandbox_id.clone(),
            state: SandboxState::Failed,
            reason: Some("setup failed".into()),
            setup: Some(SetupReport {
                exit_code: Some(3),
                duration_ms: 12,
                log_tail: "installing\nE: no such package: frobnicate\n".into(),
            }),
            elapsed_ms: 50,
        },
    )
    .await;
    let (status, body) = finished(first).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "sandbox_setup_failed", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("exited 3"), "{message}");
    assert!(message.contains("no such package: frobnicate"), "{message}");
    let (_, environments) = relay.get("/execution-environments").await;
    assert!(
        !environments.to_string().contains(&start.sandbox_id),
        "the failed sandbox's environment is gone: {environments}"
    );
    let (_, record) = relay.get(&format!("/sandboxes/{}", start.sandbox_id)).await;
    assert_eq!(record["state"], "failed", "{record}");
    assert_eq!(record["setup"]["exit_code"], 3, "{record}");
}

#[tokio::test]
async fn without_a_host_a_sandbox_session_says_so_and_auto_falls_back_to_a_sandbox() {
    let relay = spawn_relay().await;
    let member = relay.member(false, &[]).await;
    let id = session(&relay, &member, json!({ "environment": "sandbox" })).await;
    let (status, body) = finished(call_in_background(&relay, &member, &id)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "no_sandbox_host", "{body}");

    // `auto` with no runner but a host online gets a sandbox.
    let (_, mut host) = host(&relay, "host", 0, 2).await;
    let id = session(&relay, &member, json!({})).await;
    let first = call_in_background(&relay, &member, &id);
    let (start, mut sandbox) = start_sandbox(&relay, &mut host).await;
    let call = sandbox.next_call().await;
    sandbox.answer(&call, 0).await;
    let (status, body) = finished(first).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["environment_header"], json!(start.sandbox_id));
    let (_, view) = relay
        .request(Method::GET, &format!("/sessions/{id}"), Some(&member), None)
        .await;
    assert!(
        view["selection_reason"]
            .as_str()
            .unwrap_or("")
            .contains("sandbox"),
        "{view}"
    );
}

#[tokio::test]
async fn a_host_that_dies_takes_its_sandboxes_and_their_sessions_say_so() {
    let relay = spawn_relay().await;
    let (_, mut host) = host(&relay, "doomed-host", 0, 2).await;
    let member = relay.member(false, &[]).await;
    let id = session(&relay, &member, json!({ "environment": "sandbox" })).await;
    let first = call_in_background(&relay, &member, &id);
    let (_, mut sandbox) = start_sandbox(&relay, &mut host).await;
    let call = sandbox.next_call().await;
    sandbox.answer(&call, 0).await;
    assert_eq!(finished(first).await.0, StatusCode::OK);

    drop(host);
    drop(sandbox);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let body = loop {
        let (status, body) = finished(call_in_background(&relay, &member, &id)).await;
        if status == StatusCode::GONE {
            break body;
        }
        assert!(tokio::time::Instant::now() < deadline, "{status} {body}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(body["error"]["code"], "session_sandbox_gone", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("doomed-host"), "{message}");
    assert!(message.contains("never moves"), "{message}");
    let (_, sandboxes) = relay.get("/sandboxes").await;
    let record = &sandboxes["sandboxes"][0];
    assert_eq!(record["state"], "failed", "{sandboxes}");
    assert!(
        record["reason"]
            .as_str()
            .unwrap_or("")
            .contains("went away"),
        "{record}"
    );
}

#[tokio::test]
async fn a_sandbox_that_stopped_on_its_host_is_destroyed_and_not_replaced() {
    let relay = spawn_relay().await;
    let (_, mut host) = host(&relay, "host", 0, 2).await;
    let member = relay.member(false, &[]).await;
    let id = session(&relay, &member, json!({ "environment": "sandbox" })).await;
    let first = call_in_background(&relay, &member, &id);
    let (start, mut sandbox) = start_sandbox(&relay, &mut host).await;
    let call = sandbox.next_call().await;
    sandbox.answer(&call, 0).await;
    assert_eq!(finished(first).await.0, StatusCode::OK);

    // Its runner exits (the host's idle timeout); the host stays.
    drop(sandbox);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while relay
        .status(&start.sandbox_id)
        .await
        .get("status")
        .is_some_and(|status| status == "online")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sandbox stays online"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let next = call_in_background(&relay, &member, &id);
    let destroy = host.next_call().await;
    assert_eq!(destroy.tool, DESTROY_TOOL, "the host is told to clean up");
    answer(
        &mut host,
        &destroy,
        &Destroyed {
            sandbox_id: start.sandbox_id.clone(),
            existed: false,
        },
    )
    .await;
    let (status, body) = finished(next).await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("idle timeout"),
        "{body}"
    );
    let (_, record) = relay.get(&format!("/sandboxes/{}", start.sandbox_id)).await;
    assert_eq!(record["state"], "stopped", "{record}");
}

#[tokio::test]
async fn sandbox_types_are_the_relays_own() {
    let relay = spawn_relay().await;
    let (status, body) = relay
        .post(
            "/execution-environments",
            json!({ "name": "fake", "type": "sandbox" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let team_member = relay.member(false, &["ops"]).await;
    let (status, body) = relay
        .request(
            Method::POST,
            "/execution-environments",
            Some(&team_member),
            Some(json!({ "name": "h", "type": HOST_ROLE, "scope": "team:ops" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let plain = relay.create_env(json!({ "name": "plain" })).await;
    let (status, body) = relay
        .request(
            Method::PATCH,
            &format!("/execution-environments/{plain}"),
            Some(&relay.admin_key),
            Some(json!({ "type": HOST_ROLE })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let host = relay
        .create_env(json!({ "name": "h", "type": HOST_ROLE }))
        .await;
    let (_, view) = relay.get(&format!("/execution-environments/{host}")).await;
    assert_eq!(
        view["policy"]["tools"],
        json!({ "mode": "list", "tools": [START_TOOL, DESTROY_TOOL] }),
        "{view}"
    );
}

#[tokio::test]
async fn deploy_runs_a_managed_runner_with_a_new_token_and_undeploy_stops_it() {
    let relay = spawn_relay().await;
    let (_, mut host) = host(&relay, "host", 0, 2).await;
    let (env, manual_token) = relay.dev_env("deployed").await;
    // A runner installed by hand is online with the old token; the
    // managed one replaces it (one runner an environment).
    let mut manual =
        FakeRunner::connect(&relay, &manual_token, hello("laptop", "manual", &["ping"])).await;

    let deploying = {
        let url = format!("{}/execution-environments/{env}/deploy", relay.url);
        let key = relay.admin_key.clone();
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(url)
                .bearer_auth(key)
                .json(&json!({ "grace_hours": 1 }))
                .send()
                .await
                .expect("sent");
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        })
    };
    let (start, _managed) = {
        let call = host.next_call().await;
        assert_eq!(call.tool, START_TOOL);
        let start: StartSandbox = serde_json::from_value(call.args.clone()).expect("args");
        assert_ne!(start.token.0, manual_token, "a new token");
        assert_eq!(start.network, runner_proto::sandbox::Network::AllowAll);
        assert_eq!(
            (start.idle_timeout_s, start.max_lifetime_s),
            (0, 0),
            "never stops on its own"
        );
        let managed = FakeRunner::connect(
            &relay,
            &start.token.0,
            hello("managed", "managed", &["ping"]),
        )
        .await;
        answer(
            &mut host,
            &call,
            &Started {
                sandbox_id: start.sandbox_id.clone(),
                state: SandboxState::Ready,
                reason: None,
                setup: None,
                elapsed_ms: 30,
            },
        )
        .await;
        (start, managed)
    };
    let (status, deployed) = finished(deploying).await;
    assert_eq!(status, StatusCode::OK, "{deployed}");
    assert_eq!(
        code(&manual.closed().await),
        Some(runner_proto::close::REPLACED)
    );
    assert_eq!(deployed["state"], "ready");
    assert_eq!(deployed["deployment_of"], json!(env));
    assert_eq!(deployed["id"], json!(start.sandbox_id));
    // The previous token keeps working for the grace period.
    let (status, _) = relay.register(&manual_token).await;
    assert_eq!(status, StatusCode::OK, "the old token still works");
    let (status, again) = relay
        .post(&format!("/execution-environments/{env}/deploy"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    let (_, shown) = relay
        .get(&format!("/execution-environments/{env}/deployment"))
        .await;
    assert_eq!(shown["state"], "ready", "{shown}");

    let undeploying = {
        let url = format!("{}/execution-environments/{env}/undeploy", relay.url);
        let key = relay.admin_key.clone();
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(url)
                .bearer_auth(key)
                .send()
                .await
                .expect("sent");
            let status = response.status();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        })
    };
    let destroy = host.next_call().await;
    assert_eq!(destroy.tool, DESTROY_TOOL);
    answer(
        &mut host,
        &destroy,
        &Destroyed {
            sandbox_id: start.sandbox_id.clone(),
            existed: true,
        },
    )
    .await;
    let (status, stopped) = finished(undeploying).await;
    assert_eq!(status, StatusCode::OK, "{stopped}");
    assert_eq!(stopped["state"], "stopped");
    assert_eq!(stopped["reason"], "undeployed");
    // The environment itself stays.
    let (status, _) = relay.get(&format!("/execution-environments/{env}")).await;
    assert_eq!(status, StatusCode::OK);
}
