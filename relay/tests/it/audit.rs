//! The audit log over real HTTP on a real store: one entry per action with
//! its actor, the hash chain `runner-relay admin audit verify` walks (and
//! fails on an edited or deleted row), and no secret in any row.

use std::process::Command;

use reqwest::{Method, StatusCode};
use runner_relay::audit_writer::AuditSettings;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use sqlx::{Column, Connection, Row};

use crate::support::{hello, spawn_relay, spawn_relay_with, FakeRunner, TestRelay};

/// Every entry `GET /audit` gives the admin, oldest first.
async fn entries(relay: &TestRelay, query: &str) -> Vec<Value> {
    let (status, page) = relay.get(&format!("/audit?limit=1000&{query}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["entries"].as_array().expect("entries").clone()
}

fn with_action<'a>(entries: &'a [Value], action: &str) -> Vec<&'a Value> {
    entries.iter().filter(|e| e["action"] == action).collect()
}

fn key_id(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))[..12].to_owned()
}

/// Calls `tool` on `env` while `runner` answers it with `exit_code`.
async fn call(relay: &TestRelay, runner: &mut FakeRunner, env: &str, args: Value) -> Value {
    let invoke = relay.invoke(env, json!({"tool_name": "shell", "args": args}));
    let answer = async {
        let call = runner.next_call().await;
        runner.answer(&call, 0).await;
    };
    let ((status, body), ()) = tokio::join!(invoke, answer);
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn every_action_leaves_exactly_one_entry_with_its_actor() {
    let relay = spawn_relay().await;
    let admin_key_id = key_id(&relay.admin_key);
    let env = relay
        .create_env(json!({"name": "audited", "tier": "development"}))
        .await;
    let (status, body) = relay
        .request(
            Method::PATCH,
            &format!("/execution-environments/{env}"),
            Some(&relay.admin_key),
            Some(json!({"description": "changed"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let _first = relay.token(&env).await;
    let token = relay.token(&env).await;
    let (status, _) = relay.post("/teams", json!({"name": "ops"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, bob) = relay.post("/members", json!({"name": "bob"})).await;
    assert_eq!(status, StatusCode::CREATED, "{bob}");
    let bob_id = bob["id"].as_str().expect("id").to_owned();
    let (status, _) = relay
        .post("/teams/ops/members", json!({"member": bob_id}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/teams/ops/members/{bob_id}"),
            Some(&relay.admin_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let answer = call(&relay, &mut runner, &env, json!({"command": "ls"})).await;
    let call_id = answer["call_id"].as_str().expect("call id").to_owned();

    let strict = relay
        .create_env(
            json!({"name": "strict", "policy": {"tools": {"mode": "list", "tools": ["git"]}}}),
        )
        .await;
    let (status, _) = relay
        .invoke(
            &strict,
            json!({"tool_name": "shell", "args": {"command": "rm"}}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (status, _) = relay
        .request(
            Method::GET,
            "/execution-environments",
            Some("rnrk_not-a-key"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = relay
        .request(Method::GET, "/execution-environments", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = relay.register("rnrt_not-a-token").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, _) = relay
        .post(
            &format!("/execution-environments/{env}/revoke-token"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/execution-environments/{env}"),
            Some(&relay.admin_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let all = entries(&relay, "").await;
    let one = |action: &str| -> Value {
        let found = with_action(&all, action);
        assert_eq!(found.len(), 1, "{action}: {found:?}");
        found[0].clone()
    };
    for action in [
        "environment.update",
        "environment.delete",
        "token.generate",
        "token.rotate",
        "token.revoke",
        "team.create",
        "member.create",
        "team.member_add",
        "team.member_remove",
        "runner.auth_failed",
    ] {
        let entry = one(action);
        if action != "runner.auth_failed" {
            assert_eq!(entry["actor"]["key_id"], admin_key_id, "{entry}");
            assert_eq!(entry["actor"]["kind"], "person", "{entry}");
            assert_eq!(entry["actor"]["source"], "127.0.0.1", "{entry}");
            assert_eq!(entry["decision"], "allowed", "{entry}");
        }
    }
    assert_eq!(with_action(&all, "environment.create").len(), 2);
    assert_eq!(one("team.member_add")["target"], format!("ops/{bob_id}"));
    assert_eq!(one("token.revoke")["environment_id"], env.as_str());
    let runner_failure = one("runner.auth_failed");
    assert_eq!(runner_failure["decision"], "denied");
    assert_eq!(runner_failure["code"], "invalid_token");
    assert_eq!(runner_failure["actor"]["source"], "127.0.0.1");

    let calls = with_action(&all, "tool.invoke");
    assert_eq!(calls.len(), 2, "{calls:?}");
    let allowed = calls[0];
    assert_eq!(allowed["decision"], "allowed", "{allowed}");
    assert_eq!(allowed["environment_id"], env.as_str());
    assert_eq!(allowed["tool"], "shell");
    assert_eq!(allowed["call_id"], call_id.as_str());
    assert_eq!(allowed["exit_code"], 0);
    assert!(allowed["duration_ms"].is_u64(), "{allowed}");
    assert!(allowed["bytes_out"].as_u64().unwrap_or(0) > 0, "{allowed}");
    assert_eq!(
        allowed["args_digest"],
        hex::encode(Sha256::digest(br#"{"command":"ls"}"#))
    );
    assert!(
        allowed.get("args").is_none(),
        "arguments only with --audit-arguments"
    );
    assert_eq!(allowed["actor"]["key_id"], admin_key_id);
    let refused = calls[1];
    assert_eq!(refused["decision"], "denied", "{refused}");
    assert_eq!(refused["code"], "tool_not_allowed");
    assert_eq!(refused["environment_id"], strict.as_str());

    let failures = with_action(&all, "auth.failed");
    assert_eq!(failures.len(), 2, "{failures:?}");
    for failure in &failures {
        assert_eq!(failure["decision"], "denied");
        assert_eq!(failure["actor"]["source"], "127.0.0.1", "{failure}");
        assert!(failure["actor"].get("key_id").is_none(), "{failure}");
        assert!(failure["actor"].get("member_id").is_none(), "{failure}");
    }
    let codes: Vec<&Value> = failures.iter().map(|f| &f["code"]).collect();
    assert_eq!(
        codes,
        [&json!("invalid_api_key"), &json!("missing_api_key")]
    );

    // Filters and the cursor.
    let only = entries(&relay, &format!("environment={strict}")).await;
    assert_eq!(only.len(), 2, "{only:?}");
    let (status, page) = relay.get("/audit?limit=2").await;
    assert_eq!(status, StatusCode::OK);
    let cursor = page["next_cursor"].as_str().expect("cursor");
    let (_, next) = relay.get(&format!("/audit?limit=2&cursor={cursor}")).await;
    assert_eq!(next["entries"][0]["seq"], 3, "{next}");
    let (status, _) = relay.get("/audit?action=nonsense").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = relay.get("/audit?limit=1001").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Members who are not admins read nothing.
    let (status, _) = relay
        .request(
            Method::GET,
            "/audit",
            Some(bob["api_key"].as_str().expect("key")),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

/// `runner-relay admin audit verify --json` on the relay's database.
fn verify(relay: &TestRelay) -> (bool, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_runner-relay"))
        .args([
            "admin",
            "--database-url",
            &relay.database_url,
            "audit",
            "verify",
            "--json",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let report = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        output.status.success(),
        report,
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

async fn database(relay: &TestRelay) -> sqlx::SqliteConnection {
    sqlx::SqliteConnection::connect(&relay.database_url)
        .await
        .expect("open the database")
}

#[tokio::test]
async fn verify_names_an_edited_row_and_a_deleted_one() {
    let relay = spawn_relay().await;
    for name in ["a", "b", "c", "d"] {
        relay.create_env(json!({"name": name})).await;
    }
    assert_eq!(entries(&relay, "").await.len(), 4);
    let (ok, report, stderr) = verify(&relay);
    assert!(ok, "{report} {stderr}");
    assert_eq!(report["checked"], 4);
    assert_eq!(report["head_seq"], 4);

    let mut db = database(&relay).await;
    // Each edit of row 2 fails verify and names the row; undone, it passes.
    for (edit, undo) in [
        // A field kept in `entry`.
        (
            "UPDATE audit_log SET entry = replace(entry, '[\"', '[\"x') WHERE seq = 2",
            "UPDATE audit_log SET entry = replace(entry, '[\"x', '[\"') WHERE seq = 2",
        ),
        // A column a query filters on.
        (
            "UPDATE audit_log SET environment_id = environment_id || 'x' WHERE seq = 2",
            "UPDATE audit_log SET environment_id = substr(environment_id, 1, length(environment_id) - 1) WHERE seq = 2",
        ),
        // A column the row's format leaves empty.
        (
            "UPDATE audit_log SET actor_name = 'mallory' WHERE seq = 2",
            "UPDATE audit_log SET actor_name = NULL WHERE seq = 2",
        ),
    ] {
        let changed = sqlx::query(edit).execute(&mut db).await.expect("edit");
        assert_eq!(changed.rows_affected(), 1, "{edit}");
        let (ok, report, stderr) = verify(&relay);
        assert!(!ok, "an edited row must fail: {edit}: {report}");
        assert_eq!(
            report["problem"],
            json!({"problem": "changed_row", "seq": 2}),
            "{edit}"
        );
        assert!(stderr.contains("entry 2"), "{stderr}");
        sqlx::query(undo).execute(&mut db).await.expect("undo");
        let (ok, report, _) = verify(&relay);
        assert!(ok, "undone: {undo}: {report}");
    }
    sqlx::query("DELETE FROM audit_log WHERE seq = 3")
        .execute(&mut db)
        .await
        .expect("delete");
    let (ok, report, stderr) = verify(&relay);
    assert!(!ok, "a deleted row must fail: {report}");
    assert_eq!(
        report["problem"],
        json!({"problem": "missing_rows", "from": 3, "to": 3})
    );
    assert!(stderr.contains("entry 3"), "{stderr}");
}

/// Rows appended before chain format 2 (every field in its own column,
/// `entry` NULL) verify beside the rows written now, and an edit of one
/// is still named.
#[tokio::test]
async fn rows_of_the_first_format_still_verify() {
    use runner_proto::audit::{AuditAction, AuditActor};
    use runner_relay::audit::{chain, AuditRecord};

    let relay = spawn_relay().await;
    let at = time::OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a time");
    let mut record = AuditRecord::new(
        at,
        AuditActor {
            member_id: Some("mem_old".into()),
            name: Some("old admin".into()),
            kind: Some("person".into()),
            ..AuditActor::default()
        },
        AuditAction::EnvironmentCreate,
    )
    .environment("env_old");
    record.exit_code = Some(3);
    let hash = chain::columns_hash(chain::GENESIS, 1, &record);
    let mut db = database(&relay).await;
    sqlx::query(
        "INSERT INTO audit_log (seq, at_ms, action, actor_id, actor_name, actor_kind, \
         environment_id, decision, exit_code, prev_hash, hash) \
         VALUES (1, ?, 'environment.create', 'mem_old', 'old admin', 'person', 'env_old', \
         'allowed', 3, ?, ?)",
    )
    .bind(record.at_ms())
    .bind(chain::GENESIS)
    .bind(&hash)
    .execute(&mut db)
    .await
    .expect("a row of the first format");
    sqlx::query("UPDATE audit_head SET seq = 1, hash = ? WHERE id = 1")
        .bind(&hash)
        .execute(&mut db)
        .await
        .expect("its head");

    for name in ["a", "b"] {
        relay.create_env(json!({"name": name})).await;
    }
    let all = entries(&relay, "").await;
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all[0]["actor"]["name"], "old admin");
    assert_eq!(all[0]["exit_code"], 3);
    assert_eq!(all[1]["prev_hash"], json!(hash));
    let formats: Vec<Option<String>> =
        sqlx::query_scalar("SELECT entry FROM audit_log ORDER BY seq")
            .fetch_all(&mut db)
            .await
            .expect("entries");
    assert!(
        formats[0].is_none() && formats[1..].iter().all(Option::is_some),
        "{formats:?}"
    );
    let (ok, report, stderr) = verify(&relay);
    assert!(ok, "{report} {stderr}");
    assert_eq!(report["checked"], 3);

    sqlx::query("UPDATE audit_log SET exit_code = 0 WHERE seq = 1")
        .execute(&mut db)
        .await
        .expect("edit");
    let (ok, report, _) = verify(&relay);
    assert!(!ok, "an edited row of the first format must fail: {report}");
    assert_eq!(
        report["problem"],
        json!({"problem": "changed_row", "seq": 1})
    );
}

#[tokio::test]
async fn secrets_never_appear_in_audit_rows() {
    let relay = spawn_relay_with(|state| {
        state.with_audit(AuditSettings {
            enabled: true,
            arguments: true,
        })
    })
    .await;
    let (env, token) = relay.dev_env("secretive").await;
    let (status, member) = relay.post("/members", json!({"name": "carol"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let member_key = member["api_key"].as_str().expect("key").to_owned();
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let secret_value = "hunter2-env-secret";
    call(
        &relay,
        &mut runner,
        &env,
        json!({"command": "deploy", "env": {"API_TOKEN": secret_value}}),
    )
    .await;
    let guessed_key = "rnrk_guessed-but-secret-looking";
    let (status, _) = relay
        .request(
            Method::GET,
            "/execution-environments",
            Some(guessed_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let guessed_token = "rnrt_guessed-registration-token";
    let (status, _) = relay.register(guessed_token).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let all = entries(&relay, "").await;
    let invoke = with_action(&all, "tool.invoke");
    assert_eq!(invoke.len(), 1);
    assert_eq!(
        invoke[0]["args"]["env"]["API_TOKEN"], "***",
        "{}",
        invoke[0]
    );
    assert_eq!(invoke[0]["args"]["command"], "deploy");

    // Every column of every row, as stored.
    let mut db = database(&relay).await;
    let rows = sqlx::query("SELECT * FROM audit_log")
        .fetch_all(&mut db)
        .await
        .expect("rows");
    assert!(rows.len() >= 5, "{} rows", rows.len());
    let mut stored = String::new();
    for row in &rows {
        for (i, column) in row.columns().iter().enumerate() {
            let text: Option<String> = row.try_get(i).ok().flatten();
            let number: Option<i64> = row.try_get(i).ok().flatten();
            stored.push_str(&format!("{}={:?}/{:?}\n", column.name(), text, number));
        }
    }
    let answer = serde_json::to_string(&all).expect("json");
    for secret in [
        relay.admin_key.as_str(),
        member_key.as_str(),
        token.as_str(),
        secret_value,
        guessed_key,
        guessed_token,
    ] {
        assert!(!stored.contains(secret), "{secret} is in the audit table");
        assert!(!answer.contains(secret), "{secret} is in GET /audit");
    }
    assert!(stored.contains("API_TOKEN"), "names are kept: {stored}");
}

#[tokio::test]
async fn a_flood_of_bad_keys_is_recorded_only_up_to_the_address_limit() {
    let relay = spawn_relay().await;
    for _ in 0..25 {
        let (status, _) = relay
            .request(
                Method::GET,
                "/execution-environments",
                Some("rnrk_flood"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let failures = entries(&relay, "action=auth.failed").await;
    assert_eq!(failures.len(), 10, "{failures:?}");
}

#[tokio::test]
async fn a_timed_out_call_and_a_lost_runner_are_recorded_as_such() {
    let relay = spawn_relay().await;
    let (env, token) = relay.dev_env("slow").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let invoke = relay.invoke(&env, json!({"tool_name": "shell", "timeout_s": 1}));
    let ignore = async {
        runner.next_call().await;
    };
    let ((status, _), ()) = tokio::join!(invoke, ignore);
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    // The relay tells the runner to cancel it.
    while !matches!(
        runner.next_frame().await,
        runner_proto::ws::RelayMessage::Cancel { .. }
    ) {}

    let invoke = relay.invoke(&env, json!({"tool_name": "shell"}));
    let vanish = async {
        runner.next_call().await;
        drop(runner);
    };
    let ((status, _), ()) = tokio::join!(invoke, vanish);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);

    let calls = entries(&relay, "action=tool.invoke").await;
    let outcomes: Vec<(&Value, &Value)> =
        calls.iter().map(|e| (&e["decision"], &e["code"])).collect();
    assert_eq!(
        outcomes,
        [
            (&json!("timeout"), &json!("timeout")),
            (&json!("error"), &json!("runner_disconnected"))
        ]
    );
}

#[tokio::test]
async fn no_audit_records_nothing() {
    let relay = spawn_relay_with(|state| {
        state.with_audit(AuditSettings {
            enabled: false,
            arguments: false,
        })
    })
    .await;
    relay.dev_env("quiet").await;
    let (status, _) = relay
        .request(Method::GET, "/execution-environments", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(entries(&relay, "").await.is_empty());
}

/// A runner's connect, degraded period and disconnect are the
/// environment's history, with the runner as the actor.
#[tokio::test]
async fn a_runners_connects_and_degraded_periods_are_history() {
    use runner_proto::ws::{Heartbeat, RunnerMessage};
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("historic").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("host-a", "i1", &[])).await;
    for heartbeat in [
        Heartbeat::default(),
        Heartbeat {
            backlog: 3,
            ..Heartbeat::default()
        },
        Heartbeat {
            backlog: 1,
            ..Heartbeat::default()
        },
        Heartbeat::default(),
        Heartbeat::default(),
    ] {
        runner.send(&RunnerMessage::Heartbeat(heartbeat)).await;
        let _ack = runner.next_frame().await;
    }
    drop(runner);
    relay.wait_status(&id, |s| s["status"] == "offline").await;
    let history: Vec<(String, String)> = entries(&relay, &format!("environment={id}"))
        .await
        .iter()
        .filter(|entry| {
            entry["action"]
                .as_str()
                .is_some_and(|a| a.starts_with("runner."))
        })
        .map(|entry| {
            assert_eq!(entry["actor"]["kind"], "runner", "{entry}");
            assert_eq!(entry["target"], "host-a", "{entry}");
            (
                entry["action"].as_str().unwrap_or_default().to_owned(),
                entry["code"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("runner.connect", ""),
        ("runner.degraded", "backlog"),
        ("runner.recovered", ""),
        ("runner.disconnect", "connection_lost"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, c)| ((*a).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(history, expected);
}
