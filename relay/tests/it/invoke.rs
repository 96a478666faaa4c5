//! invoke-tool: validation, policy, relaying, timeouts and disconnects.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use runner_proto::ws::RelayMessage;
use serde_json::json;

use crate::support::{hello, spawn_relay, FakeRunner};

#[tokio::test]
async fn timeout_and_body_shape_are_validated() {
    let relay = spawn_relay().await;
    let (id, _) = relay.dev_env("box").await;
    for (body, field) in [
        (json!({"tool_name": "shell", "timeout_s": 0}), "timeout_s"),
        (
            json!({"tool_name": "shell", "timeout_s": 3601}),
            "timeout_s",
        ),
        (
            json!({"tool_name": "shell", "timeout_s": "10"}),
            "timeout_s",
        ),
        (json!({"tool_name": "shell", "args": [1]}), "args"),
        (json!({"tool_name": 5}), "tool_name"),
        (json!({"args": {}}), "tool_name"),
        (json!([]), "object"),
    ] {
        let (status, error) = relay.invoke(&id, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(field),
            "{body}: {error}"
        );
    }
    let response = relay
        .http
        .post(format!(
            "{}/execution-environments/{id}/invoke-tool",
            relay.url
        ))
        .bearer_auth(&relay.admin_key)
        .body("{\"tool_name\": ")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn policy_refusals_are_403() {
    let relay = spawn_relay().await;
    let id = relay
        .create_env(json!({
            "name": "prod",
            "policy": {
                "tools": {"mode": "list", "tools": ["git", "file_read", "kubectl"]},
                "file_paths": ["/etc", "/srv/data"],
                "approval_required": ["kubectl"]
            }
        }))
        .await;
    let (status, error) = relay.invoke(&id, json!({"tool_name": "shell"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"]["code"], "tool_not_allowed");

    let (status, error) = relay.invoke(&id, json!({"tool_name": "kubectl"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"]["code"], "approval_required");

    for path in [
        "/etc2/passwd",
        "/etc/../root/.ssh/id_rsa",
        "/srv",
        "/srv/database",
    ] {
        let (status, error) = relay
            .invoke(
                &id,
                json!({"tool_name": "file_read", "args": {"path": path}}),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(error["error"]["code"], "path_not_allowed", "{path}");
    }
    // Allowed paths pass the policy and only then find no runner.
    for path in ["/etc/hosts", "/srv/data/../data/x", "/etc"] {
        let (status, error) = relay
            .invoke(
                &id,
                json!({"tool_name": "file_read", "args": {"path": path}}),
            )
            .await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {error}");
        assert_eq!(error["error"]["code"], "runner_not_connected");
    }
}

#[tokio::test]
async fn empty_file_paths_block_file_tools() {
    let relay = spawn_relay().await;
    // A production environment starts with no file paths.
    let id = relay.create_env(json!({"name": "prod"})).await;
    let (status, error) = relay
        .invoke(
            &id,
            json!({"tool_name": "file_read", "args": {"path": "/tmp/x"}}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"]["code"], "path_not_allowed");
}

#[tokio::test]
async fn relative_paths_resolve_against_the_runner_workspace() {
    let relay = spawn_relay().await;
    let id = relay
        .create_env(json!({
            "name": "ws",
            "policy": {"tools": {"mode": "all"}, "file_paths": ["/home/tester/workspace"]}
        }))
        .await;
    let token = relay.token(&id).await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["file_read"])).await;

    let (status, error) = relay
        .invoke(
            &id,
            json!({"tool_name": "file_read", "args": {"path": "../other/secret"}}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{error}");
    assert_eq!(error["error"]["code"], "path_not_allowed");

    let relay = std::sync::Arc::new(relay);
    let invoker = {
        let relay = relay.clone();
        let id = id.clone();
        tokio::spawn(async move {
            relay
                .invoke(
                    &id,
                    json!({"tool_name": "file_read", "args": {"path": "notes/today.md"}}),
                )
                .await
        })
    };
    let call = runner.next_call().await;
    assert_eq!(call.args["path"], "notes/today.md");
    runner.answer(&call, 0).await;
    let (status, _) = invoker.await.expect("joined");
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn no_runner_is_503() {
    let relay = spawn_relay().await;
    let (id, _) = relay.dev_env("idle").await;
    let (status, error) = relay.invoke(&id, json!({"tool_name": "shell"})).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(error["error"]["code"], "runner_not_connected");
}

#[tokio::test]
async fn round_trip_through_a_runner() {
    let relay = std::sync::Arc::new(spawn_relay().await);
    let (id, token) = relay.dev_env("box").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("box", "i1", &["shell"])).await;
    assert_eq!(runner.welcome.environment.id, id);
    assert_eq!(runner.welcome.heartbeat_interval_s, 15);

    for exit_code in [0, 3] {
        let invoker = {
            let relay = relay.clone();
            let id = id.clone();
            tokio::spawn(async move {
                relay
                    .invoke(&id, json!({"tool_name": "shell", "args": {"command": "echo hi"}, "timeout_s": 30}))
                    .await
            })
        };
        let call = runner.next_call().await;
        assert_eq!(call.tool, "shell");
        assert_eq!(call.timeout_s, 30);
        runner.answer(&call, exit_code).await;
        let (status, body) = invoker.await.expect("joined");
        // 200 even when the tool failed: exit_code and error tell.
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["call_id"], call.call_id.as_str());
        assert_eq!(body["result"]["echo"]["command"], "echo hi");
        assert_eq!(body["exit_code"], exit_code);
        assert_eq!(body["error"].is_null(), exit_code == 0);
    }

    let (status, error) = relay.invoke(&id, json!({"tool_name": "docker"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["error"]["code"], "unknown_tool");
}

#[tokio::test]
async fn timeout_is_504_and_the_runner_is_told_to_cancel() {
    let relay = std::sync::Arc::new(spawn_relay().await);
    let (id, token) = relay.dev_env("slow").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("slow", "i1", &["shell"])).await;
    let invoker = {
        let relay = relay.clone();
        let id = id.clone();
        tokio::spawn(async move {
            relay
                .invoke(
                    &id,
                    json!({"tool_name": "shell", "args": {"command": "sleep 100"}, "timeout_s": 1}),
                )
                .await
        })
    };
    let call = runner.next_call().await;
    let (status, error) = invoker.await.expect("joined");
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{error}");
    assert_eq!(error["error"]["code"], "timeout");
    assert_eq!(error["error"]["call_id"], call.call_id.as_str());
    match runner.next_frame().await {
        RelayMessage::Cancel { call_id } => assert_eq!(call_id, call.call_id),
        other => panic!("expected cancel, got {other:?}"),
    }
    // A late result is dropped harmlessly; the runner keeps working.
    runner.answer(&call, 0).await;
    let invoker = {
        let relay = relay.clone();
        let id = id.clone();
        tokio::spawn(async move { relay.invoke(&id, json!({"tool_name": "shell"})).await })
    };
    let call = runner.next_call().await;
    runner.answer(&call, 0).await;
    assert_eq!(invoker.await.expect("joined").0, StatusCode::OK);
}

#[tokio::test]
async fn runner_disconnect_mid_call_is_a_prompt_503() {
    let relay = std::sync::Arc::new(spawn_relay().await);
    let (id, token) = relay.dev_env("flaky").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("flaky", "i1", &["shell"])).await;
    let started = Instant::now();
    let invoker = {
        let relay = relay.clone();
        let id = id.clone();
        tokio::spawn(async move {
            relay
                .invoke(&id, json!({"tool_name": "shell", "timeout_s": 300}))
                .await
        })
    };
    let _call = runner.next_call().await;
    drop(runner);
    let (status, error) = invoker.await.expect("joined");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error["error"]["code"], "runner_disconnected");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn client_going_away_cancels_the_call() {
    let relay = std::sync::Arc::new(spawn_relay().await);
    let (id, token) = relay.dev_env("abandoned").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("a", "i1", &["shell"])).await;
    let invoker = {
        let relay = relay.clone();
        let id = id.clone();
        tokio::spawn(async move { relay.invoke(&id, json!({"tool_name": "shell"})).await })
    };
    let call = runner.next_call().await;
    invoker.abort();
    match runner.next_frame().await {
        RelayMessage::Cancel { call_id } => assert_eq!(call_id, call.call_id),
        other => panic!("expected cancel, got {other:?}"),
    }
}

#[tokio::test]
async fn tools_lists_the_catalogue_filtered_by_policy() {
    let relay = spawn_relay().await;
    let id = relay.create_env(json!({"name": "prod"})).await;
    let (status, body) = relay
        .get(&format!("/execution-environments/{id}/tools"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["runner_connected"], false);
    assert_eq!(body["tools"], json!([]));

    let token = relay.token(&id).await;
    let _runner = FakeRunner::connect(
        &relay,
        &token,
        hello("p", "i1", &["git", "shell", "kubectl"]),
    )
    .await;
    let (_, body) = relay
        .get(&format!("/execution-environments/{id}/tools"))
        .await;
    assert_eq!(body["runner_connected"], true);
    let names: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["git", "kubectl"]);
}
