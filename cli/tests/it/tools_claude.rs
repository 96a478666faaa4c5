//! `claude_code`, `claude_sessions`, `claude_status` against a stand-in
//! `claude` on PATH that answers like the CLI's documented `-p
//! --output-format json` mode and records how it was called.

use serde_json::json;

use crate::support::{self, dev_env, Relay};
use crate::tools_support::{online_with, tool_names, BinDir};

const STAND_IN: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "1.0.99 (Claude Code)"; exit 0; fi
printf '%s\n' "$@" > "$CLAUDE_STANDIN_LOG"
pwd >> "$CLAUDE_STANDIN_LOG"
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":12,"num_turns":2,"result":"done: %s","session_id":"sess-42","total_cost_usd":0.01}\n' "$2"
"#;

#[tokio::test]
async fn the_claude_stand_in_is_driven_like_the_cli() {
    let relay = Relay::spawn().await;
    let bin = BinDir::new();
    bin.script("claude", STAND_IN);
    let home = tempfile::tempdir().expect("tempdir");
    let config_dir = home.path().join(".claude");
    support::write(
        &config_dir.join("projects/-work-proj/sess-1.jsonl"),
        "{\"type\":\"user\",\"cwd\":\"/work/proj\",\"message\":{\"role\":\"user\",\"content\":\"fix the flaky test\"}}\n",
    );
    let log = home.path().join("calls.log");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (env, runner) = online_with(
        &relay,
        dev_env(),
        &[
            ("PATH", &path),
            ("CLAUDE_CONFIG_DIR", &config_dir.display().to_string()),
            ("CLAUDE_STANDIN_LOG", &log.display().to_string()),
            ("ANTHROPIC_API_KEY", "sk-test-not-shown"),
        ],
        &[],
    )
    .await;
    let names = tool_names(&relay, &env).await;
    for tool in ["claude_code", "claude_sessions", "claude_status"] {
        assert!(names.contains(&tool.to_owned()), "{tool}: {names:?}");
    }

    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "claude_status", "args": {}}))
        .await;
    assert_eq!(body["result"]["version"], "1.0.99 (Claude Code)", "{body}");
    assert_eq!(body["result"]["auth"]["api_key_env"], true);
    assert!(
        !body.to_string().contains("sk-test"),
        "never the key itself: {body}"
    );

    std::fs::create_dir_all(runner.workspace().join("proj")).expect("mkdir");
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "claude_code", "args": {
                "prompt": "fix it", "workdir": "proj", "session_id": "sess-1", "model": "sonnet"
            }}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(body["result"]["result"], "done: fix it");
    assert_eq!(body["result"]["session_id"], "sess-42");
    assert_eq!(body["exit_code"], 0);
    let calls = std::fs::read_to_string(&log).expect("the stand-in ran");
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(
        &lines[..lines.len() - 1],
        [
            "-p",
            "fix it",
            "--output-format",
            "json",
            "--resume",
            "sess-1",
            "--model",
            "sonnet"
        ]
    );
    let cwd = std::path::Path::new(lines[lines.len() - 1]);
    assert_eq!(
        cwd.canonicalize().ok(),
        runner.workspace().join("proj").canonicalize().ok()
    );

    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "claude_sessions", "args": {}}))
        .await;
    let sessions = body["result"]["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{body}");
    assert_eq!(sessions[0]["session_id"], "sess-1");
    assert_eq!(sessions[0]["summary"], "fix the flaky test");
    assert_eq!(sessions[0]["cwd"], "/work/proj");
}
