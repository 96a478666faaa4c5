//! The runner WebSocket protocol: handshake, bad frames, replacement,
//! revocation and deletion.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use reqwest::StatusCode;
use runner_proto::close;
use runner_proto::ws::{Heartbeat, RelayMessage, RunnerMessage};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{code, hello, open_socket, spawn_relay, Closed, FakeRunner};

#[tokio::test]
async fn connect_checks_the_token_before_upgrading() {
    let relay = spawn_relay().await;
    let Err(error) = open_socket(&relay, "rnrt_nope").await else {
        panic!("a bad token must be refused before the upgrade");
    };
    assert!(error.to_string().contains("401"), "{error}");
}

/// A request with a valid token that is not a WebSocket upgrade the relay
/// can answer gets 400 and a reason, never a socket.
#[tokio::test]
async fn connect_refuses_what_is_not_a_websocket_upgrade() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("upgrade").await;
    let upgrade = [
        ("connection", "keep-alive, Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    // (case, the header changed or dropped (empty), what the reason says)
    type Case<'a> = (&'a str, Option<(&'a str, &'a str)>, &'a str);
    let cases: [Case; 4] = [
        ("no upgrade headers", None, "Connection: upgrade"),
        (
            "another protocol",
            Some(("upgrade", "h2c")),
            "Upgrade: websocket",
        ),
        (
            "an old version",
            Some(("sec-websocket-version", "8")),
            "Version must be 13",
        ),
        ("no key", Some(("sec-websocket-key", "")), "Key is missing"),
    ];
    let http = reqwest::Client::new();
    for (case, change, reason) in cases {
        let mut request = http
            .get(format!("{}/runner/connect", relay.url))
            .bearer_auth(&token);
        if let Some((changed, value)) = change {
            for (name, original) in upgrade {
                match (name == changed, value.is_empty()) {
                    (false, _) => request = request.header(name, original),
                    (true, false) => request = request.header(name, value),
                    (true, true) => {}
                }
            }
        }
        let response = request.send().await.expect("request sent");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{case}");
        let body: serde_json::Value = response.json().await.expect("a JSON error");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{case}: {body}");
    }
}

#[tokio::test]
async fn heartbeat_is_acknowledged_and_unknown_frames_ignored() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("hb").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("hb", "i1", &[])).await;
    runner
        .send_text(r#"{"type":"telemetry_v9","payload":1}"#)
        .await;
    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat::default()))
        .await;
    match runner.next_frame().await {
        RelayMessage::HeartbeatAck(ack) => assert!(ack.server_time > 1_700_000_000),
        other => panic!("expected heartbeat_ack, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_frame_closes_only_that_connection() {
    let relay = Arc::new(spawn_relay().await);
    let (_, token_a) = relay.dev_env("a").await;
    let (id_b, token_b) = relay.dev_env("b").await;
    let mut a = FakeRunner::connect(&relay, &token_a, hello("a", "ia", &["shell"])).await;
    let mut b = FakeRunner::connect(&relay, &token_b, hello("b", "ib", &["shell"])).await;

    a.send_text("this is not json").await;
    let closed = a.closed().await;
    assert_eq!(code(&closed), Some(close::BAD_FRAME), "{closed:?}");
    match closed {
        Closed::Code(_, reason) => assert!(reason.contains("malformed"), "{reason}"),
        Closed::NoFrame => unreachable!(),
    }

    let invoker = {
        let relay = relay.clone();
        tokio::spawn(async move { relay.invoke(&id_b, json!({"tool_name": "shell"})).await })
    };
    let call = b.next_call().await;
    b.answer(&call, 0).await;
    assert_eq!(invoker.await.expect("joined").0, StatusCode::OK);
}

#[tokio::test]
async fn wrong_shape_and_binary_frames_are_bad_frames() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("shape").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("s", "i1", &[])).await;
    runner.send_text(r#"{"type":"result"}"#).await;
    assert_eq!(code(&runner.closed().await), Some(close::BAD_FRAME));

    let mut runner = FakeRunner::connect(&relay, &token, hello("s", "i2", &[])).await;
    runner
        .socket
        .send(Message::binary(vec![1, 2, 3]))
        .await
        .expect("send");
    assert_eq!(code(&runner.closed().await), Some(close::BAD_FRAME));
}

#[tokio::test]
async fn oversized_frame_is_frame_too_large() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("big").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("s", "i1", &[])).await;
    let big = "x".repeat(runner_proto::MAX_FRAME_BYTES + 1);
    // The relay may close before it has read everything.
    let _ = runner.socket.send(Message::text(big)).await;
    let closed = runner.closed().await;
    assert_eq!(code(&closed), Some(close::FRAME_TOO_LARGE), "{closed:?}");
}

#[tokio::test]
async fn first_frame_must_be_hello() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("hs").await;
    let mut socket = open_socket(&relay, &token).await.expect("socket");
    let heartbeat =
        serde_json::to_string(&RunnerMessage::Heartbeat(Heartbeat::default())).expect("encode");
    socket.send(Message::text(heartbeat)).await.expect("send");
    let mut runner = FakeRunner::raw(socket);
    assert_eq!(code(&runner.closed().await), Some(close::HANDSHAKE));
}

#[tokio::test]
async fn newer_protocol_version_is_refused() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("future").await;
    let mut socket = open_socket(&relay, &token).await.expect("socket");
    let mut future = hello("future", "i1", &[]);
    future.protocol_version = runner_proto::PROTOCOL_VERSION + 1;
    socket
        .send(Message::text(
            serde_json::to_string(&RunnerMessage::Hello(future)).expect("encode"),
        ))
        .await
        .expect("send");
    let mut runner = FakeRunner::raw(socket);
    match runner.closed().await {
        Closed::Code(code, reason) => {
            assert_eq!(code, close::UNSUPPORTED_VERSION);
            let ours = runner_proto::PROTOCOL_VERSION.to_string();
            let theirs = (runner_proto::PROTOCOL_VERSION + 1).to_string();
            assert!(
                reason.contains(&ours) && reason.contains(&theirs),
                "{reason}"
            );
        }
        Closed::NoFrame => panic!("expected a close frame"),
    }
}

#[tokio::test]
async fn a_newer_runner_replaces_the_older_one() {
    let relay = Arc::new(spawn_relay().await);
    let (id, token) = relay.dev_env("shared-box").await;
    let mut first =
        FakeRunner::connect(&relay, &token, hello("host-a", "instance-a", &["shell"])).await;
    let mut second =
        FakeRunner::connect(&relay, &token, hello("host-b", "instance-b", &["shell"])).await;
    match first.closed().await {
        Closed::Code(code, reason) => {
            assert_eq!(code, close::REPLACED);
            assert_eq!(reason, "replaced by a newer connection from host-b");
        }
        Closed::NoFrame => panic!("expected REPLACED"),
    }
    let invoker = {
        let relay = relay.clone();
        tokio::spawn(async move { relay.invoke(&id, json!({"tool_name": "shell"})).await })
    };
    let call = second.next_call().await;
    second.answer(&call, 0).await;
    assert_eq!(invoker.await.expect("joined").0, StatusCode::OK);
}

#[tokio::test]
async fn the_same_process_reconnecting_is_not_told_it_was_replaced() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("same").await;
    let mut first = FakeRunner::connect(&relay, &token, hello("host", "instance-1", &[])).await;
    let _second = FakeRunner::connect(&relay, &token, hello("host", "instance-1", &[])).await;
    assert_eq!(first.closed().await, Closed::NoFrame);
}

#[tokio::test]
async fn revoke_disconnects_and_invalidates() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("revoked").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &[])).await;
    let (status, body) = relay
        .post(
            &format!("/execution-environments/{id}/revoke-token"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["runner_disconnected"], true);
    assert_eq!(
        runner.closed().await,
        Closed::Code(close::REVOKED, "registration token revoked".into())
    );
    let (status, error) = relay.register(&token).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error["error"]["code"], "unauthorized");
    assert!(open_socket(&relay, &token).await.is_err());
}

#[tokio::test]
async fn deleting_the_environment_disconnects_its_runner() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("doomed").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &[])).await;
    let (status, _) = relay
        .request(
            reqwest::Method::DELETE,
            &format!("/execution-environments/{id}"),
            Some(&relay.admin_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(code(&runner.closed().await), Some(close::DELETED));
}

#[tokio::test]
async fn blank_name_is_filled_from_the_hostname() {
    let relay = spawn_relay().await;
    let first = relay.create_env(json!({})).await;
    let second = relay.create_env(json!({})).await;
    let token = relay.token(&first).await;
    let runner = FakeRunner::connect(&relay, &token, hello("box1", "i1", &[])).await;
    assert_eq!(runner.welcome.environment.name, "box1");
    let token = relay.token(&second).await;
    let runner = FakeRunner::connect(&relay, &token, hello("box1", "i2", &[])).await;
    let suffix = &second[second.len() - 6..];
    assert_eq!(runner.welcome.environment.name, format!("box1-{suffix}"));
    let (_, env) = relay
        .get(&format!("/execution-environments/{second}"))
        .await;
    assert_eq!(env["name"], format!("box1-{suffix}"));
}

#[tokio::test]
async fn policy_changes_are_pushed_to_the_runner() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("pushed").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &[])).await;
    let (status, _) = relay
        .request(
            reqwest::Method::PATCH,
            &format!("/execution-environments/{id}"),
            Some(&relay.admin_key),
            Some(json!({"policy": {"tools": {"mode": "list", "tools": ["git"]}}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    match runner.next_frame().await {
        RelayMessage::Policy { policy, .. } => assert_eq!(
            policy.tools,
            runner_proto::ws::ToolAccess::List {
                tools: vec!["git".into()]
            }
        ),
        other => panic!("expected policy, got {other:?}"),
    }
}

#[tokio::test]
async fn the_browser_tools_setting_is_in_welcome_and_pushed_when_it_changes() {
    let relay = spawn_relay().await;
    let id = relay
        .create_env(
            json!({"name": "browsing", "tier": "development", "install_browser_tools": true}),
        )
        .await;
    let token = relay.token(&id).await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &[])).await;
    assert!(runner.welcome.install_browser_tools, "{:?}", runner.welcome);
    let path = format!("/execution-environments/{id}");
    let patch = |body: serde_json::Value| {
        relay.request(
            reqwest::Method::PATCH,
            &path,
            Some(&relay.admin_key),
            Some(body),
        )
    };
    // Unchanged: nothing to push. The change after it is the next frame.
    let (status, _) = patch(json!({"install_browser_tools": true})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = patch(json!({"install_browser_tools": false})).await;
    assert_eq!(status, StatusCode::OK);
    loop {
        match runner.next_frame().await {
            RelayMessage::HeartbeatAck(_) => continue,
            RelayMessage::Policy {
                install_browser_tools,
                ..
            } => {
                assert_eq!(install_browser_tools, Some(false));
                break;
            }
            other => panic!("expected policy, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn shutdown_tells_runners_to_go_elsewhere() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("leaving").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &[])).await;
    relay.shut_down();
    assert_eq!(code(&runner.closed().await), Some(close::GOING_AWAY));
}

/// With one handshake slot, a connect waits for it: it gets the slot once
/// its holder is welcomed, or once the holder's time for `hello` runs out
/// (shorter than the wait). One that finds it held for longer than it may
/// wait is answered 503.
#[tokio::test]
async fn handshakes_beyond_the_limit_wait_for_a_slot_then_get_503() {
    let relay = crate::support::spawn_relay_with(|state| state.with_max_handshakes(1)).await;
    let (_, token_a) = relay.dev_env("first").await;
    let (_, token_b) = relay.dev_env("second").await;
    let (_, token_c) = relay.dev_env("third").await;
    let (_, token_d) = relay.dev_env("fourth").await;

    // A holds the only slot: upgraded, no hello yet.
    let mut a = FakeRunner::raw(open_socket(&relay, &token_a).await.expect("a opens"));
    // B waits for it, and gets it as soon as A is welcomed.
    let waiting_b = {
        let relay_url = relay.ws_url();
        let token_b = token_b.clone();
        tokio::spawn(async move { connect_raw(&relay_url, &token_b).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting_b.is_finished(),
        "B must wait while A holds the slot"
    );
    a.send(&RunnerMessage::Hello(hello("a", "ia", &[]))).await;
    assert!(matches!(a.next_frame().await, RelayMessage::Welcome(_)));
    let b = waiting_b
        .await
        .expect("joined")
        .expect("B admitted once A is welcomed");

    // B holds the slot and stays silent; C and D wait for it. B's time for
    // hello runs out first, and one of them gets the slot; the other then
    // finds it held until its own wait is over, and is refused.
    let url = relay.ws_url();
    let started = Instant::now();
    let (c, d) = tokio::join!(connect_raw(&url, &token_c), connect_raw(&url, &token_d));
    let waited = started.elapsed();
    let mut b = FakeRunner::raw(b);
    assert_eq!(
        code(&b.closed().await),
        Some(close::HANDSHAKE),
        "B was silent"
    );
    let (admitted, refused) = match (c, d) {
        (Ok(admitted), Err(refused)) | (Err(refused), Ok(admitted)) => (admitted, refused),
        (c, d) => panic!(
            "one of C and D must be admitted and one refused: {:?}, {:?}",
            c.map(|_| "a socket"),
            d.map(|_| "a socket")
        ),
    };
    match refused {
        tokio_tungstenite::tungstenite::Error::Http(response) => {
            assert_eq!(response.status(), 503);
            assert_eq!(
                response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()),
                Some("1")
            );
        }
        other => panic!("expected 503, got {other:?}"),
    }
    assert!(
        waited >= runner_relay::admission::ADMISSION_WAIT,
        "refused after {waited:?}"
    );

    // The admitted one finishes its handshake in time.
    FakeRunner::greet(admitted, hello("c", "ic", &[])).await;
}

async fn connect_raw(
    url: &str,
    token: &str,
) -> Result<crate::support::Socket, tokio_tungstenite::tungstenite::Error> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = url.into_client_request()?;
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header text"),
    );
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}
