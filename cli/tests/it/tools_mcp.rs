//! Relayed MCP servers: a real MCP server process (a small Python server
//! speaking MCP over stdio) started by the runner from its config, its
//! tools announced as `server__tool`, calls relayed through rmcp, and a
//! crashed server restarted with its tools announced again.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{dev_env, Relay, READY_DEADLINE};
use crate::tools_support::{online_with, wait_for_tools};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py")
}

#[tokio::test]
async fn mcp_tools_round_trip_and_a_crashed_server_comes_back() {
    let relay = Relay::spawn().await;
    let config = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(
        config.path(),
        format!(
            "servers:\n  demo:\n    command: python3\n    args: [\"{}\"]\n    env:\n      PYTHONUNBUFFERED: \"1\"\n",
            fixture().display()
        ),
    )
    .expect("write config");
    let config_path = config.path().display().to_string();
    let (env, _runner) = online_with(&relay, dev_env(), &[], &["--mcp-config", &config_path]).await;
    wait_for_tools(&relay, &env, "the MCP tools are announced", |names| {
        names.iter().any(|n| n == "demo__echo") && names.iter().any(|n| n == "demo__add")
    })
    .await;

    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "demo__echo", "args": {"text": "hello over MCP"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["text"], "hello over MCP", "{body}");
    assert_eq!(body["result"]["content"][0]["type"], "text");

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "demo__add", "args": {"a": 2, "b": 40}}),
        )
        .await;
    assert_eq!(body["result"]["text"], "42", "{body}");
    // The server's own schema is enforced by the relay.
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "demo__add", "args": {"a": "two", "b": 1}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("args.a"),
        "{body}"
    );

    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "demo__pid", "args": {}}))
        .await;
    let first_pid = body["result"]["text"].as_str().expect("pid").to_owned();

    // Crash it: the call fails, the runner restarts the server, and its
    // tools are there again.
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "demo__crash", "args": {}, "timeout_s": 20}),
        )
        .await;
    assert!(body["error"].is_string(), "{body}");
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        let (status, body) = relay
            .invoke(&env, json!({"tool_name": "demo__pid", "args": {}}))
            .await;
        if status == 200 && body["error"].is_null() {
            let pid = body["result"]["text"].as_str().unwrap_or_default();
            assert_ne!(pid, first_pid, "a new server process answers");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not come back: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for_tools(&relay, &env, "the MCP tools are announced again", |names| {
        names.iter().any(|n| n == "demo__echo")
    })
    .await;
}

#[tokio::test]
async fn a_broken_mcp_config_stops_the_runner_at_start() {
    let relay = Relay::spawn().await;
    let environment = relay.create_env(dev_env()).await;
    let token = relay.token(&environment).await;
    let runner = crate::support::Runner::register(&relay, &token).await;
    let config = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(config.path(), "servers:\n  bad__name:\n    command: x\n").expect("write");
    let output = runner
        .command()
        .arg("run")
        .arg("--mcp-config")
        .arg(config.path())
        .output()
        .await
        .expect("runner runs");
    assert_eq!(output.status.code(), Some(78), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad__name"), "{stderr}");
}
