//! MCP servers reached by URL (streamable HTTP): a real MCP server process
//! (a small Python server, `mcp_http_server.py`, on 127.0.0.1) that the
//! runner connects to from its config, its tools announced as
//! `server__tool`, calls relayed through rmcp and the runner's own HTTP
//! client, and a server that goes away dropped from the catalogue and
//! reconnected (tools announced again) when it is back.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::{dev_env, Relay, READY_DEADLINE};
use crate::tools_support::{online_with, wait_for_tools};

const TOKEN: &str = "fixture-token";

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_http_server.py")
}

/// Starts the fixture on `port` (0: any); returns it and its URL.
async fn serve(port: u16, extra_tool: Option<&str>) -> (Child, String) {
    let mut command = Command::new("python3");
    command
        .arg(fixture())
        .arg(port.to_string())
        .arg(TOKEN)
        .args(extra_tool)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("python3 runs the fixture");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = tokio::time::timeout(READY_DEADLINE, lines.next_line())
        .await
        .expect("the fixture starts in time")
        .expect("read the fixture's stdout")
        .and_then(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the fixture prints its URL");
    (child, url)
}

async fn invoke_text(relay: &Relay, env: &str, tool: &str, args: Value) -> (u16, Value) {
    relay
        .invoke(
            env,
            json!({"tool_name": tool, "args": args, "timeout_s": 20}),
        )
        .await
}

#[tokio::test]
async fn an_http_mcp_server_round_trips_and_is_reconnected_after_it_goes_away() {
    let relay = Relay::spawn().await;
    let (mut server, url) = serve(0, None).await;
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("port in the URL");
    let config = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(
        config.path(),
        format!(
            "servers:\n  web:\n    url: {url}\n    headers:\n      Authorization: Bearer {TOKEN}\n"
        ),
    )
    .expect("write config");
    let config_path = config.path().display().to_string();
    let (env, _runner) = online_with(&relay, dev_env(), &[], &["--mcp-config", &config_path]).await;
    wait_for_tools(
        &relay,
        &env,
        "the HTTP server's tools are announced",
        |names| {
            ["web__echo", "web__add", "web__pid"]
                .iter()
                .all(|tool| names.iter().any(|n| n == tool))
        },
    )
    .await;

    // A call answered as a server-sent event stream.
    let (status, body) = invoke_text(&relay, &env, "web__echo", json!({"text": "over HTTP"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(body["result"]["text"], "over HTTP", "{body}");
    assert_eq!(body["result"]["server"], "web");
    let (_, body) = invoke_text(&relay, &env, "web__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(body["result"]["text"], "42", "{body}");
    let (_, body) = invoke_text(&relay, &env, "web__pid", json!({})).await;
    let first_pid = body["result"]["text"].as_str().expect("pid").to_owned();
    assert_eq!(first_pid, server.id().expect("fixture pid").to_string());

    // The server goes away: its tools leave the catalogue...
    server.kill().await.expect("kill the fixture");
    wait_for_tools(
        &relay,
        &env,
        "the gone server's tools are withdrawn",
        |names| !names.iter().any(|n| n.starts_with("web__")),
    )
    .await;

    // ...and when it is back (a new process on the same URL, with one more
    // tool), the runner reconnects and announces its tools again.
    let (server, again) = serve(port, Some("shout")).await;
    assert_eq!(again, url);
    wait_for_tools(
        &relay,
        &env,
        "the server's tools are announced again",
        |names| names.iter().any(|n| n == "web__shout") && names.iter().any(|n| n == "web__echo"),
    )
    .await;
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        let (status, body) = invoke_text(&relay, &env, "web__pid", json!({})).await;
        if status == 200 && body["error"].is_null() {
            let pid = body["result"]["text"].as_str().unwrap_or_default();
            assert_eq!(pid, server.id().expect("fixture pid").to_string());
            assert_ne!(pid, first_pid, "the new server process answers");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server was not reconnected: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, body) = invoke_text(&relay, &env, "web__shout", json!({})).await;
    assert_eq!(body["result"]["text"], "shout", "{body}");
}

#[tokio::test]
async fn a_url_server_without_its_credentials_announces_nothing() {
    let relay = Relay::spawn().await;
    let (_server, url) = serve(0, None).await;
    let config = tempfile::NamedTempFile::new().expect("temp");
    // No Authorization header: the server answers 401 to the handshake.
    std::fs::write(config.path(), format!("servers:\n  web:\n    url: {url}\n")).expect("write");
    let config_path = config.path().display().to_string();
    let (env, _runner) = online_with(&relay, dev_env(), &[], &["--mcp-config", &config_path]).await;
    wait_for_tools(&relay, &env, "the built-in tools are announced", |names| {
        names.iter().any(|n| n == "shell")
    })
    .await;
    let names = crate::tools_support::tool_names(&relay, &env).await;
    assert!(!names.iter().any(|n| n.starts_with("web__")), "{names:?}");
    let (_, body) = invoke_text(&relay, &env, "web__echo", json!({"text": "x"})).await;
    assert!(
        body["error"].is_string() || body["error"].is_object(),
        "{body}"
    );
}
