//! Status (SPEC §6) on the injected clock.

use runner_proto::ws::{Heartbeat, RunnerMessage};
use serde_json::json;
use time::Duration;

use crate::support::{hello, spawn_relay, FakeRunner};

#[tokio::test]
async fn pending_online_offline_and_back() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("watched").await;
    let status = relay.status(&id).await;
    assert_eq!(status["status"], "pending");
    assert_eq!(status["connected"], false);

    let mut runner = FakeRunner::connect(&relay, &token, hello("watched-host", "i1", &[])).await;
    let status = relay.wait_status(&id, |s| s["status"] == "online").await;
    assert_eq!(status["runner"]["hostname"], "watched-host");
    assert_eq!(status["runner"]["version"], "0.1.0-test");
    assert!(status["token"]["hint"]
        .as_str()
        .unwrap_or("")
        .starts_with("rnrt_"));
    assert!(status["last_seen"].is_string());

    relay.clock.advance(Duration::seconds(91));
    let status = relay.status(&id).await;
    assert_eq!(status["status"], "offline", "{status}");

    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat::default()))
        .await;
    let _ack = runner.next_frame().await;
    assert_eq!(relay.status(&id).await["status"], "online");

    drop(runner);
    relay.wait_status(&id, |s| s["status"] == "offline").await;
}

#[tokio::test]
async fn executor_health_reports_degrade() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("busy").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("busy", "i1", &[])).await;
    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat {
            in_flight: 4,
            backlog: 2,
            executor_healthy: Some(true),
            sandbox_capacity: None,
        }))
        .await;
    let _ack = runner.next_frame().await;
    let status = relay.status(&id).await;
    assert_eq!(status["status"], "degraded", "{status}");
    assert!(status["reason"].as_str().unwrap_or("").contains("waiting"));

    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat {
            in_flight: 0,
            backlog: 0,
            executor_healthy: Some(true),
            sandbox_capacity: None,
        }))
        .await;
    let _ack = runner.next_frame().await;
    assert_eq!(relay.status(&id).await["status"], "online");

    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat {
            executor_healthy: Some(false),
            ..Heartbeat::default()
        }))
        .await;
    let _ack = runner.next_frame().await;
    assert_eq!(relay.status(&id).await["status"], "degraded");
    let _ = json!(null);
}
