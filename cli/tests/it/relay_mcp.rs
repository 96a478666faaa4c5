//! The relay as an MCP server (`/mcp`): a real relay, real runners, and
//! real MCP clients over streamable HTTP — the official Rust SDK (through
//! the runner's own HTTP client for it) and the Python `mcp` package.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::Method;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt as _;
use serde_json::{json, Value};

use crate::support::*;
use crate::tools_support::online_with;

type Client = RunningService<RoleClient, ()>;

/// An MCP client of `path` on `relay` with `key`, initialized.
async fn connect(relay: &Relay, key: &str, path: &str) -> Client {
    let headers = BTreeMap::from([("Authorization".to_owned(), format!("Bearer {key}"))]);
    let http = runner_cli::tools::mcp_http::HttpClient::new(&headers).expect("client");
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(format!("{}{path}", relay.url)),
    );
    tokio::time::timeout(READY_DEADLINE, ().serve(transport))
        .await
        .expect("initialize in time")
        .expect("initialize")
}

async fn names(client: &Client) -> Vec<String> {
    tools(client)
        .await
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

async fn tools(client: &Client) -> Vec<Tool> {
    client.peer().list_all_tools().await.expect("tools/list")
}

async fn call(client: &Client, name: &str, args: Value) -> Result<CallToolResult, String> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object");
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    client
        .peer()
        .call_tool(params)
        .await
        .map_err(|error| error.to_string())
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A member with `teams`, and its API key.
async fn member(relay: &Relay, name: &str, kind: &str, teams: &[&str]) -> String {
    let (status, body) = relay
        .api(
            Method::POST,
            "/members",
            Some(json!({"name": name, "kind": kind, "teams": teams})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["api_key"].as_str().expect("key").to_owned()
}

async fn team(relay: &Relay, name: &str) {
    let (status, body) = relay
        .api(Method::POST, "/teams", Some(json!({"name": name})))
        .await;
    assert!(status == 201 || status == 200, "{body}");
}

/// An environment created by `key`'s member, its runner online.
async fn team_environment(relay: &Relay, key: &str, body: Value) -> (String, Runner) {
    let (status, env) = relay
        .api_with_key(key, Method::POST, "/execution-environments", Some(body))
        .await;
    assert_eq!(status, 201, "{env}");
    let id = env["id"].as_str().expect("id").to_owned();
    let (status, token) = relay
        .api_with_key(
            key,
            Method::POST,
            &format!("/execution-environments/{id}/generate-token"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{token}");
    let mut runner = Runner::register(relay, token["token"].as_str().expect("token")).await;
    runner.start(&[]);
    relay.wait_status(&id, "online").await;
    (id, runner)
}

#[tokio::test]
async fn members_of_two_teams_see_and_call_only_their_own_environments_tools() {
    let relay = Relay::spawn().await;
    team(&relay, "red").await;
    team(&relay, "blue").await;
    let alice = member(&relay, "alice", "person", &["red"]).await;
    let bot = member(&relay, "bot", "agent", &["blue"]).await;
    let (_red, _red_runner) = team_environment(
        &relay,
        &alice,
        json!({"name": "red-box", "scope": "team:red", "tier": "development"}),
    )
    .await;
    // Production: no shell, and no file paths (so no file tools).
    let (_blue, _blue_runner) = team_environment(
        &relay,
        &bot,
        json!({"name": "blue box", "scope": "team:blue", "tier": "production",
               "policy": {"tools": {"mode": "list", "tools": ["ping", "file_read"]}}}),
    )
    .await;

    let alice_mcp = connect(&relay, &alice, "/mcp").await;
    let listed = tools(&alice_mcp).await;
    let alice_names: Vec<&str> = listed.iter().map(|tool| tool.name.as_ref()).collect();
    for expected in ["red-box__shell", "red-box__file_read", "red-box__ping"] {
        assert!(
            alice_names.contains(&expected),
            "{expected}: {alice_names:?}"
        );
    }
    assert!(
        !alice_names
            .iter()
            .any(|name| name.starts_with("blue-box__")),
        "{alice_names:?}"
    );
    for management in [
        "list_environments",
        "token_status",
        "decide_approval",
        "start_session",
    ] {
        assert!(
            alice_names.contains(&management),
            "{management}: {alice_names:?}"
        );
    }
    let shell = listed
        .iter()
        .find(|tool| tool.name == "red-box__shell")
        .expect("shell");
    let hints = shell.annotations.as_ref().expect("annotations");
    assert_eq!(hints.destructive_hint, Some(true));
    let description = shell.description.as_deref().unwrap_or_default();
    assert!(description.contains("red-box"), "{description}");
    assert!(
        shell.input_schema.contains_key("properties"),
        "{:?}",
        shell.input_schema
    );
    let read = listed
        .iter()
        .find(|tool| tool.name == "red-box__file_read")
        .expect("file_read");
    assert_eq!(
        read.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(true)
    );

    let bot_mcp = connect(&relay, &bot, "/mcp").await;
    let bot_names = names(&bot_mcp).await;
    assert!(
        bot_names.iter().any(|name| name == "blue-box__ping"),
        "{bot_names:?}"
    );
    for refused in ["blue-box__shell", "blue-box__file_read", "decide_approval"] {
        assert!(
            !bot_names.iter().any(|name| name == refused),
            "{refused}: {bot_names:?}"
        );
    }
    assert!(
        !bot_names.iter().any(|name| name.starts_with("red-box__")),
        "{bot_names:?}"
    );

    // Calls: output as text, a non-zero exit as an error result.
    let result = call(
        &alice_mcp,
        "red-box__shell",
        json!({"command": "echo out; echo err >&2; exit 3"}),
    )
    .await
    .expect("call");
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let shown = text(&result);
    assert!(shown.contains("out\n"), "{shown}");
    assert!(shown.contains("[stderr]\nerr"), "{shown}");
    assert!(shown.contains("[exit code 3]"), "{shown}");
    let written = call(
        &alice_mcp,
        "red-box__file_write",
        json!({"path": "notes/mcp.txt", "content": "written over MCP"}),
    )
    .await
    .expect("write");
    assert_eq!(written.is_error, Some(false), "{written:?}");
    let read = call(
        &alice_mcp,
        "red-box__file_read",
        json!({"path": "notes/mcp.txt"}),
    )
    .await
    .expect("read");
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert_eq!(text(&read), "written over MCP");

    // What is not listed cannot be called: refused by policy, or another
    // team's.
    for (name, args) in [
        ("blue-box__shell", json!({"command": "id"})),
        ("red-box__ping", json!({})),
        ("nobody__ping", json!({})),
    ] {
        match call(&bot_mcp, name, args).await {
            Err(_) => {}
            Ok(result) => assert_eq!(result.is_error, Some(true), "{name}: {result:?}"),
        }
    }

    // Audited as the member, through MCP.
    let (status, audit) = relay
        .api(Method::GET, "/audit?action=tool.invoke&tool=shell", None)
        .await;
    assert_eq!(status, 200, "{audit}");
    let entry = &audit["entries"][0];
    assert_eq!(entry["actor"]["name"], "alice", "{audit}");
    let client = entry["actor"]["client"].as_str().unwrap_or_default();
    assert!(client.starts_with("mcp: rmcp"), "{audit}");
}

#[tokio::test]
async fn an_approval_required_call_names_its_approval_and_get_approval_waits_for_the_result() {
    let relay = Relay::spawn().await;
    let (_env, _runner) = Runner::online(
        &relay,
        json!({"name": "gated", "tier": "development",
               "policy": {"tools": {"mode": "all"}, "approval_required": ["shell"]}}),
    )
    .await;
    let agent = member(&relay, "ci", "agent", &[]).await;
    let mcp = connect(&relay, &agent, "/mcp").await;
    let listed = tools(&mcp).await;
    let shell = listed
        .iter()
        .find(|tool| tool.name == "gated__shell")
        .expect("listed");
    let meta = shell.meta.as_ref().expect("marked");
    assert_eq!(meta.0.get("runner/approval_required"), Some(&json!(true)));

    let asked = call(
        &mcp,
        "gated__shell",
        json!({"command": "echo approved-run"}),
    )
    .await
    .expect("call");
    assert_eq!(asked.is_error, Some(true));
    assert!(text(&asked).contains("get_approval"), "{}", text(&asked));
    let approval_id = asked.structured_content.as_ref().expect("ticket")["approval_id"]
        .as_str()
        .expect("approval id")
        .to_owned();

    // A person decides through MCP too.
    let admin = connect(&relay, &relay.admin_key, "/mcp").await;
    let pending = call(&admin, "list_approvals", json!({"status": "pending"}))
        .await
        .expect("list_approvals")
        .structured_content
        .expect("list");
    assert_eq!(
        pending["approvals"][0]["id"],
        approval_id.as_str(),
        "{pending}"
    );
    let decided = call(
        &admin,
        "decide_approval",
        json!({"approval_id": approval_id, "decision": "approve", "comment": "fine"}),
    )
    .await
    .expect("decide_approval");
    assert_eq!(decided.is_error, Some(false), "{decided:?}");
    let waited = call(
        &mcp,
        "get_approval",
        json!({"approval_id": approval_id, "wait_s": 30}),
    )
    .await
    .expect("get_approval");
    let approval = waited.structured_content.expect("approval");
    assert_eq!(approval["status"], "approved", "{approval}");
    assert_eq!(approval["outcome"]["exit_code"], 0, "{approval}");
    assert!(
        approval["outcome"]["result"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("approved-run"),
        "{approval}"
    );
    // An agent never decides: the tool is not even listed.
    assert!(call(
        &mcp,
        "decide_approval",
        json!({"approval_id": approval_id, "decision": "approve"})
    )
    .await
    .is_err());
}

#[tokio::test]
async fn a_session_endpoint_pins_its_environment() {
    let relay = Relay::spawn().await;
    let (one, _one_runner) =
        Runner::online(&relay, json!({"name": "one", "tier": "development"})).await;
    let (_two, _two_runner) =
        Runner::online(&relay, json!({"name": "two", "tier": "development"})).await;
    let mcp = connect(&relay, &relay.admin_key, "/mcp").await;
    let started = call(&mcp, "start_session", json!({"environment": "one"}))
        .await
        .expect("start_session");
    assert_eq!(started.is_error, Some(false), "{started:?}");
    let session = started.structured_content.expect("session");
    let endpoint = session["mcp_endpoint"]
        .as_str()
        .expect("endpoint")
        .to_owned();
    let session_id = session["id"].as_str().expect("id").to_owned();
    assert_eq!(endpoint, format!("/mcp/sessions/{session_id}"));

    let pinned = connect(&relay, &relay.admin_key, &endpoint).await;
    let names = names(&pinned).await;
    assert!(names.iter().any(|name| name == "shell"), "{names:?}");
    assert!(!names.iter().any(|name| name.contains("__")), "{names:?}");
    let result = call(&pinned, "shell", json!({"command": "echo pinned"}))
        .await
        .expect("call");
    // Content blocks: stdout, then the exit code.
    assert_eq!(text(&result), "pinned\n\n[exit code 0]");
    let (_, view) = relay
        .api(Method::GET, &format!("/sessions/{session_id}"), None)
        .await;
    assert_eq!(view["environment"]["id"], one.as_str(), "{view}");

    // Management: status and a new registration token, as the API gives them.
    let status = call(&mcp, "environment_status", json!({"environment": "one"}))
        .await
        .expect("environment_status")
        .structured_content
        .expect("status");
    assert_eq!(status["status"], "online", "{status}");
    let token = call(&mcp, "generate_token", json!({"environment": "two"}))
        .await
        .expect("generate_token")
        .structured_content
        .expect("token");
    assert!(
        token["token"]
            .as_str()
            .is_some_and(|token| token.starts_with("rnrt_")),
        "{token}"
    );
    let ended = call(&mcp, "end_session", json!({"session_id": session_id}))
        .await
        .expect("end");
    assert_eq!(ended.is_error, Some(false), "{ended:?}");
    let after = call(&pinned, "shell", json!({"command": "echo again"}))
        .await
        .expect("call");
    assert_eq!(after.is_error, Some(true), "{after:?}");
    assert!(text(&after).contains("session_ended"), "{}", text(&after));
}

fn mcp_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py")
}

#[tokio::test]
async fn the_list_follows_the_runners_catalogue_and_relayed_tools_keep_their_server_part() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let env_name = relay
        .api(Method::GET, &format!("/execution-environments/{env}"), None)
        .await
        .1["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let mcp = connect(&relay, &relay.admin_key, "/mcp").await;
    let echo = format!("{env_name}__demo__echo");
    assert!(!names(&mcp).await.contains(&echo));

    runner.stop().await;
    let config = tempfile::NamedTempFile::new().expect("temp");
    write(
        config.path(),
        &format!(
            "servers:\n  demo:\n    command: python3\n    args: [\"{}\"]\n",
            mcp_fixture().display()
        ),
    );
    runner.start(&["--mcp-config", &config.path().display().to_string()]);
    let deadline = tokio::time::Instant::now() + READY_DEADLINE;
    while !names(&mcp).await.contains(&echo) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{echo} never listed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let result = call(&mcp, &echo, json!({"text": "through two MCP hops"}))
        .await
        .expect("call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "through two MCP hops");

    // The runner gone: its tools are gone from the list.
    runner.stop().await;
    let deadline = tokio::time::Instant::now() + READY_DEADLINE;
    while names(&mcp)
        .await
        .iter()
        .any(|name| name.starts_with(&format!("{env_name}__")))
    {
        assert!(tokio::time::Instant::now() < deadline, "tools still listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn above_the_limit_the_compact_pair_serves_every_environment() {
    let relay = Relay::spawn_with(&["--mcp-max-environments", "1"]).await;
    let (_one, _r1) = Runner::online(&relay, json!({"name": "one", "tier": "development"})).await;
    let (_two, _r2) = Runner::online(&relay, json!({"name": "two", "tier": "development"})).await;
    let mcp = connect(&relay, &relay.admin_key, "/mcp").await;
    let names = names(&mcp).await;
    assert!(names.iter().any(|name| name == "run_tool"), "{names:?}");
    assert!(names.iter().any(|name| name == "list_tools"), "{names:?}");
    assert!(!names.iter().any(|name| name.contains("__")), "{names:?}");

    let listing = call(&mcp, "list_tools", json!({"environment": "two"}))
        .await
        .expect("list_tools")
        .structured_content
        .expect("listing");
    assert_eq!(
        listing["environments"][0]["environment"], "two",
        "{listing}"
    );
    assert!(
        listing["environments"][0]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["tool"] == "shell")),
        "{listing}"
    );
    let result = call(
        &mcp,
        "run_tool",
        json!({"environment": "two", "tool": "shell", "args": {"command": "echo compact"}}),
    )
    .await
    .expect("run_tool");
    assert!(text(&result).starts_with("compact\n"), "{result:?}");
    // Not listed, so not callable.
    assert!(call(&mcp, "two__shell", json!({"command": "id"}))
        .await
        .is_err());
}

#[tokio::test]
async fn requests_without_a_key_or_from_a_browser_page_are_refused() {
    let relay = Relay::spawn().await;
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let post = |key: Option<&str>, origin: Option<&str>| {
        let mut request = http
            .post(format!("{}/mcp", relay.url))
            .header("Accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        request.send()
    };
    let anonymous = post(None, None).await.expect("answer");
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.headers().contains_key("www-authenticate"));
    let wrong = post(Some("rnrk_not-a-key"), None).await.expect("answer");
    assert_eq!(wrong.status(), 401);
    let page = post(Some(&relay.admin_key), Some("https://evil.example"))
        .await
        .expect("answer");
    assert_eq!(page.status(), 403);
    let ok = post(Some(&relay.admin_key), None).await.expect("answer");
    assert_eq!(ok.status(), 200);
    let body: Value = ok.json().await.expect("json answer");
    assert_eq!(
        body["result"]["serverInfo"]["name"], "runner-relay",
        "{body}"
    );
}

/// Another implementation: the Python SDK's streamable-HTTP client lists
/// and calls (tests/fixtures/mcp_client.py).
#[tokio::test]
async fn the_python_sdk_lists_and_calls() {
    let relay = Relay::spawn().await;
    let (_env, _runner) = online_with(
        &relay,
        json!({"name": "py", "tier": "development"}),
        &[],
        &[],
    )
    .await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_client.py");
    let output = tokio::process::Command::new("python3")
        .arg(script)
        .arg(format!("{}/mcp", relay.url))
        .arg("py__shell")
        .arg(r#"{"command": "echo from python"}"#)
        .env("MCP_TEST_KEY", &relay.admin_key)
        .output()
        .await
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(stdout.trim()).expect("the script's JSON report");
    assert!(
        report["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool == "py__shell")),
        "{report}"
    );
    assert_eq!(report["is_error"], false, "{report}");
    assert!(
        report["text"]
            .as_str()
            .unwrap_or_default()
            .contains("from python"),
        "{report}"
    );
}

/// Plain `tools/call`s are answered by the relay's fast path
/// (`http::mcp::fast_call`), everything else by the SDK: both answer the
/// same calls with the same bytes.
#[tokio::test]
async fn the_fast_path_and_the_sdk_answer_alike() {
    let logged = [("RUST_LOG", "warn,runner_relay::http::mcp=debug")];
    let fast = Relay::spawn_logged(&[], &logged).await;
    let simple = Relay::spawn_logged(&["--mcp-no-fast-path"], &logged).await;
    let mut runners = Vec::new();
    for relay in [&fast, &simple] {
        let (_, runner) =
            Runner::online(relay, json!({"name": "same", "tier": "development"})).await;
        runners.push(runner);
    }
    let http = reqwest::Client::new();
    let calls = [
        json!({"name": "same__ping", "arguments": {"n": 1, "text": "é\u{1F600}"}}),
        json!({"name": "same__shell", "arguments": {"command": "printf 'a\\tb'; exit 2"}}),
        json!({"name": "same__file_read", "arguments": {"path": "missing.txt"}}),
        json!({"name": "nobody__ping", "arguments": {}}),
        json!({"name": "list_approvals", "arguments": {"status": "pending"}}),
        json!({"name": "list_approvals", "arguments": {"status": 7}}),
    ];
    for (id, params) in calls.iter().enumerate() {
        let mut answers = Vec::new();
        for relay in [&fast, &simple] {
            let response = http
                .post(format!("{}/mcp", relay.url))
                .bearer_auth(&relay.admin_key)
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2025-06-18")
                .json(
                    &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
                )
                .send()
                .await
                .expect("answer");
            let status = response.status().as_u16();
            let kind = response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let body: Value = response.json().await.expect("JSON");
            // Each relay's runner has its own workspace, which an error
            // about a relative path names.
            let body = without_temp_dirs(&body.to_string());
            answers.push((status, kind, body));
        }
        assert_eq!(answers[0], answers[1], "{params}");
        assert_eq!(answers[0].0, 200);
    }
    let taken = |relay: &Relay| relay.log().matches("tools/call on the fast path").count();
    assert_eq!(taken(&fast), calls.len(), "{}", fast.log());
    assert_eq!(taken(&simple), 0, "{}", simple.log());
}

/// `text` with every `/tmp/.tmpXXXXXX` directory name as `[TMP]`.
fn without_temp_dirs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("/tmp/.tmp") {
        out.push_str(&rest[..at]);
        out.push_str("[TMP]");
        let after = &rest[at + "/tmp/.tmp".len()..];
        let name = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        rest = &after[name..];
    }
    out.push_str(rest);
    out
}
