//! Approvals: a call to a tool that needs a person's approval waits for one
//! (`"on_approval": "wait"`), runs exactly once when approved, never when
//! denied or expired, and only someone else allowed may decide.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use runner_relay::secret::Secret;
use runner_relay::store::MemberKind;
use runner_relay::webhook::Webhook;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::support::*;

const SECRET_VALUE: &str = "s3cret-value-never-shown";

/// A shared environment whose `shell` needs approval, a runner offering
/// it, and an agent (the requester) that may use it.
async fn setup(relay: &TestRelay) -> (String, FakeRunner, String, String) {
    let id = relay
        .create_env(json!({
            "name": "deploy-box",
            "tier": "development",
            "policy": {"tools": {"mode": "all"}, "approval_required": ["shell"]}
        }))
        .await;
    let token = relay.token(&id).await;
    let runner = FakeRunner::connect(relay, &token, hello("deploy-host", "i-1", &["shell"])).await;
    let (agent_id, agent_key) = relay
        .new_member("ci-bot", false, &[], MemberKind::Agent)
        .await;
    (id, runner, agent_id, agent_key)
}

async fn ask(relay: &TestRelay, key: &str, env_id: &str, extra: Value) -> (StatusCode, Value) {
    let mut body = json!({
        "tool_name": "shell",
        "args": {"command": "deploy --prod", "env": {"DEPLOY_TOKEN": SECRET_VALUE}},
        "on_approval": "wait",
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    relay
        .request(
            Method::POST,
            &format!("/execution-environments/{env_id}/invoke-tool"),
            Some(key),
            Some(body),
        )
        .await
}

async fn decide(
    relay: &TestRelay,
    key: &str,
    id: &str,
    verb: &str,
    comment: &str,
) -> (StatusCode, Value) {
    relay
        .request(
            Method::POST,
            &format!("/approvals/{id}/{verb}"),
            Some(key),
            Some(json!({"comment": comment})),
        )
        .await
}

/// No call reaches the runner for a while.
async fn no_call(runner: &mut FakeRunner) {
    let call = tokio::time::timeout(Duration::from_millis(300), runner.next_call()).await;
    assert!(call.is_err(), "a call reached the runner: {call:?}");
}

#[tokio::test]
async fn approved_calls_run_once_with_the_stored_arguments() {
    let relay = spawn_relay().await;
    let (env_id, mut runner, agent_id, agent_key) = setup(&relay).await;

    // Without asking for an approval, today's refusal stays.
    let (status, body) = relay
        .request(
            Method::POST,
            &format!("/execution-environments/{env_id}/invoke-tool"),
            Some(&agent_key),
            Some(json!({"tool_name": "shell", "args": {"command": "ls"}})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "approval_required");

    let (status, ticket) = ask(&relay, &agent_key, &env_id, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ticket}");
    assert_eq!(ticket["status"], "pending");
    let approval_id = ticket["approval_id"].as_str().expect("id").to_owned();
    let call_id = ticket["call_id"].as_str().expect("call id").to_owned();
    no_call(&mut runner).await;

    // Approvers see it in full, except the env values.
    let (status, list) = relay.get("/approvals?status=pending").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let listed = &list["approvals"][0];
    assert_eq!(listed["id"], approval_id.as_str());
    assert_eq!(listed["args"]["command"], "deploy --prod");
    assert_eq!(listed["args"]["env"]["DEPLOY_TOKEN"], "***");
    assert_eq!(listed["requested_by"]["id"], agent_id.as_str());
    assert_eq!(listed["tool"], "shell");
    assert!(listed["rule"].as_str().expect("rule").contains("shell"));
    assert_eq!(listed["call_sha256"].as_str().map(str::len), Some(64));
    assert!(!list.to_string().contains(SECRET_VALUE));

    // Nobody approves their own request; a member outside the scope may not.
    let (status, body) = decide(&relay, &agent_key, &approval_id, "approve", "me").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "not_an_approver");
    let outsider = relay.member(false, &["other"]).await;
    let (status, body) = decide(&relay, &outsider, &approval_id, "approve", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    no_call(&mut runner).await;

    let (status, approved) =
        decide(&relay, &relay.admin_key, &approval_id, "approve", "ship it").await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["comment"], "ship it");

    // The runner gets the stored call, secrets included, under its call id.
    let call = runner.next_call().await;
    assert_eq!(call.call_id, call_id);
    assert_eq!(call.tool, "shell");
    assert_eq!(call.args["env"]["DEPLOY_TOKEN"], SECRET_VALUE);
    assert_eq!(call.args["command"], "deploy --prod");

    // A second approval is a no-op; a denial now is refused.
    let (status, again) = decide(&relay, &relay.admin_key, &approval_id, "approve", "").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["status"], "approved");
    let (status, body) = decide(&relay, &relay.admin_key, &approval_id, "deny", "").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "approval_decided");
    no_call(&mut runner).await;

    runner.answer(&call, 0).await;
    // The requester fetches the result by approval id...
    let (status, settled) = relay
        .request(
            Method::GET,
            &format!("/approvals/{approval_id}?wait=5"),
            Some(&agent_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{settled}");
    assert_eq!(settled["outcome"]["exit_code"], 0, "{settled}");
    assert_eq!(
        settled["outcome"]["result"]["echo"]["command"],
        "deploy --prod"
    );
    // ... and by call id in the journal.
    let (status, invocation) = relay
        .request(
            Method::GET,
            &format!("/invocations/{call_id}"),
            Some(&agent_key),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{invocation}");
    assert_eq!(invocation["state"], "done");

    // Once decided, the store keeps the arguments masked.
    let stored = relay
        .store
        .approval(&approval_id)
        .await
        .expect("store")
        .expect("approval");
    assert!(!stored.args.to_string().contains(SECRET_VALUE));
    assert!(stored.call_sha256.len() == 64);

    // The audit log says who asked and who decided, once each (the no-op
    // second approval leaves no entry), and holds no secret.
    let audit = audit_entries(&relay, 4).await;
    let actions: Vec<(&str, &str, &str)> = audit
        .iter()
        .map(|entry| {
            (
                entry["action"].as_str().unwrap_or_default(),
                entry["actor"]["member_id"].as_str().unwrap_or_default(),
                entry["decision"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let (admin, _) = relay
        .store
        .member_by_key_hash(&runner_relay::secret::hash_secret(&relay.admin_key))
        .await
        .expect("store")
        .expect("the admin");
    let admin_id = admin.id;
    assert_eq!(
        actions,
        vec![
            ("approval.request", agent_id.as_str(), "allowed"),
            ("approval.decide", agent_id.as_str(), "denied"),
            ("approval.decide", actions[2].1, "denied"),
            ("approval.decide", admin_id.as_str(), "allowed"),
        ],
        "{audit:?}"
    );
    assert!(audit
        .iter()
        .all(|entry| entry["target"] == approval_id.as_str()));
    assert!(!Value::Array(audit).to_string().contains(SECRET_VALUE));
    // The approved call itself, as the requester's, naming its approval.
    let (_, page) = relay.get("/audit?limit=1000&action=tool.invoke").await;
    let runs: Vec<&Value> = page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["target"] == approval_id.as_str())
        .collect();
    assert_eq!(runs.len(), 1, "{page}");
    assert_eq!(runs[0]["actor"]["member_id"], agent_id.as_str());
    assert_eq!(runs[0]["decision"], "allowed");
    assert_eq!(runs[0]["exit_code"], 0);
    assert_eq!(runs[0]["call_id"], call_id.as_str());
}

/// The audit log's approval entries, once there are `count` of them
/// (written in batches).
async fn audit_entries(relay: &TestRelay, count: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let (status, page) = relay.get("/audit?limit=1000&order=asc").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let found: Vec<Value> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|entry| {
                entry["action"]
                    .as_str()
                    .is_some_and(|action| action.starts_with("approval."))
            })
            .cloned()
            .collect();
        if found.len() >= count || tokio::time::Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn denied_and_expired_calls_never_run() {
    let relay = spawn_relay().await;
    let (env_id, mut runner, _agent, agent_key) = setup(&relay).await;

    let (status, ticket) = ask(&relay, &agent_key, &env_id, json!({"call_id": "deploy-42"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ticket}");
    assert_eq!(ticket["call_id"], "deploy-42");
    let denied_id = ticket["approval_id"].as_str().expect("id").to_owned();
    // The same request again (a retry) finds the same approval.
    let (status, again) = ask(&relay, &agent_key, &env_id, json!({"call_id": "deploy-42"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again["approval_id"], denied_id.as_str());
    // Another call under that id is a conflict.
    let (status, body) = ask(
        &relay,
        &agent_key,
        &env_id,
        json!({"call_id": "deploy-42", "args": {"command": "rm -rf /"}}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    let (status, denied) = decide(&relay, &relay.admin_key, &denied_id, "deny", "not today").await;
    assert_eq!(status, StatusCode::OK, "{denied}");
    assert_eq!(denied["status"], "denied");
    let (status, body) = decide(&relay, &relay.admin_key, &denied_id, "approve", "").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // Repeating the request now answers the refusal at once.
    let (status, body) = ask(&relay, &agent_key, &env_id, json!({"call_id": "deploy-42"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "approval_denied");
    assert!(body["error"]["message"]
        .as_str()
        .expect("message")
        .contains("not today"));

    let (status, ticket) = ask(&relay, &agent_key, &env_id, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ticket}");
    let expiring = ticket["approval_id"].as_str().expect("id").to_owned();
    relay.clock.advance(time::Duration::seconds(601));
    let (status, expired) = relay.get(&format!("/approvals/{expiring}")).await;
    assert_eq!(status, StatusCode::OK, "{expired}");
    assert_eq!(expired["status"], "expired");
    let (status, body) = decide(&relay, &relay.admin_key, &expiring, "approve", "").await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "approval_expired");
    let (status, list) = relay.get("/approvals?status=expired").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        list["approvals"].as_array().map(Vec::len),
        Some(1),
        "{list}"
    );
    let (status, list) = relay.get("/approvals?status=pending").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        list["approvals"].as_array().map(Vec::len),
        Some(0),
        "{list}"
    );

    no_call(&mut runner).await;
}

#[tokio::test]
async fn a_caller_that_waits_gets_the_answer_of_the_approved_call() {
    let relay = Arc::new(spawn_relay().await);
    let (env_id, mut runner, _agent, agent_key) = setup(&relay).await;
    let waiting = {
        let relay = relay.clone();
        let env_id = env_id.clone();
        tokio::spawn(async move {
            ask(&relay, &agent_key, &env_id, json!({"approval_wait_s": 20})).await
        })
    };
    let approval_id = loop {
        let (_, list) = relay.get("/approvals?status=pending").await;
        if let Some(id) = list["approvals"][0]["id"].as_str() {
            break id.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (status, body) = decide(&relay, &relay.admin_key, &approval_id, "approve", "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let call = runner.next_call().await;
    runner.answer(&call, 3).await;
    let (status, answer) = tokio::time::timeout(DEADLINE, waiting)
        .await
        .expect("answered")
        .expect("task");
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["exit_code"], 3);
    assert_eq!(answer["call_id"], call.call_id.as_str());
}

#[tokio::test]
async fn session_calls_ask_for_approval_too() {
    let relay = spawn_relay().await;
    let (env_id, mut runner, _agent, agent_key) = setup(&relay).await;
    let (status, session) = relay
        .request(
            Method::POST,
            "/sessions",
            Some(&agent_key),
            Some(json!({"environment": env_id})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let session_id = session["id"].as_str().expect("id");
    let (status, ticket) = relay
        .request(
            Method::POST,
            &format!("/sessions/{session_id}/invoke-tool"),
            Some(&agent_key),
            Some(json!({"tool_name": "shell", "args": {"command": "ls"}, "on_approval": "wait"})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ticket}");
    let (_, approval) = relay
        .get(&format!(
            "/approvals/{}",
            ticket["approval_id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(approval["session_id"], session_id);
    assert_eq!(approval["environment_id"], env_id.as_str());
    no_call(&mut runner).await;
}

#[tokio::test]
async fn members_see_only_approvals_of_environments_they_may_see() {
    let relay = spawn_relay().await;
    let (env_id, _runner, _agent, agent_key) = setup(&relay).await;
    let (status, ticket) = ask(&relay, &agent_key, &env_id, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ticket}");
    let approval_id = ticket["approval_id"].as_str().expect("id");
    // A team environment's approvals are hidden from other teams.
    let (_ops_id, ops_key) = relay
        .new_member("op", false, &["ops"], MemberKind::Person)
        .await;
    let (status, created) = relay
        .request(
            Method::POST,
            "/execution-environments",
            Some(&ops_key),
            Some(json!({"name": "team-box", "scope": "team:ops",
                        "policy": {"tools": {"mode": "all"}, "approval_required": ["shell"]}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let team_env = created["id"].as_str().expect("id").to_owned();
    let (status, team_ticket) = relay
        .request(
            Method::POST,
            &format!("/execution-environments/{team_env}/invoke-tool"),
            Some(&ops_key),
            Some(json!({"tool_name": "shell", "args": {"command": "ls"}, "on_approval": "wait"})),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{team_ticket}");
    let team_approval = team_ticket["approval_id"].as_str().expect("id");
    let stranger = relay.member(false, &["dev"]).await;
    let (status, _) = relay
        .request(
            Method::GET,
            &format!("/approvals/{team_approval}"),
            Some(&stranger),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, list) = relay
        .request(Method::GET, "/approvals", Some(&stranger), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = list["approvals"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|approval| approval["id"].as_str())
        .collect();
    assert_eq!(ids, vec![approval_id], "shared only: {list}");
    // The ops member cannot decide their own; an admin outside the team
    // sees it but may not decide it.
    let (status, _) = decide(&relay, &ops_key, team_approval, "approve", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = decide(&relay, &relay.admin_key, team_approval, "approve", "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = relay
        .request(
            Method::GET,
            "/approvals?status=bogus",
            Some(&stranger),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// What the webhook receiver got.
#[derive(Default)]
struct Received {
    attempts: u32,
    deliveries: Vec<(HeaderMap, Vec<u8>)>,
}

#[tokio::test]
async fn the_webhook_gets_a_signed_payload_and_failures_are_retried_and_visible() {
    let received = Arc::new(Mutex::new(Received::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let hook_url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post({
            let received = received.clone();
            move |headers: HeaderMap, body: axum::body::Bytes| async move {
                let mut received = received.lock().expect("lock");
                received.attempts += 1;
                if received.attempts == 1 {
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                received.deliveries.push((headers, body.to_vec()));
                StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let secret = "webhook-secret-0123456789";
    let webhook = Webhook::new(&hook_url, Secret::new(secret))
        .expect("webhook")
        .with_first_retry(Duration::from_millis(50));
    let relay = spawn_relay_with(|state| {
        state
            .with_approval_webhook(Arc::new(webhook))
            .with_public_url("https://relay.example.test")
    })
    .await;
    let (env_id, _runner, _agent, agent_key) = setup(&relay).await;
    let (status, ticket) = ask(&relay, &agent_key, &env_id, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{ticket}");
    let approval_id = ticket["approval_id"].as_str().expect("id").to_owned();

    let approval = {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let (_, approval) = relay.get(&format!("/approvals/{approval_id}")).await;
            if approval["notification"]["state"] == "delivered" {
                break approval;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never delivered: {approval}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    assert_eq!(approval["notification"]["attempts"], 2, "{approval}");

    let received = received.lock().expect("lock");
    let (headers, body) = received.deliveries.first().expect("a delivery");
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(header("x-runner-event"), "approval.requested");
    let timestamp = header("x-runner-timestamp");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(header("x-runner-signature-256"), expected);

    let payload: Value = serde_json::from_slice(body).expect("json");
    assert_eq!(payload["approval_id"], approval_id.as_str());
    assert_eq!(payload["tool"], "shell");
    assert_eq!(payload["command"], "deploy --prod");
    assert_eq!(payload["environment_name"], "deploy-box");
    assert!(payload["rule"].as_str().expect("rule").contains("shell"));
    assert_eq!(
        payload["link"],
        format!("https://relay.example.test/console/approvals/{approval_id}")
    );
    let text = payload["text"].as_str().expect("text");
    assert!(
        text.contains("ci-bot") && text.contains("deploy --prod"),
        "{text}"
    );
    let raw = String::from_utf8_lossy(body);
    assert!(!raw.contains(SECRET_VALUE), "{raw}");
}

#[tokio::test]
async fn a_webhook_that_never_answers_is_reported_failed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    // Nothing listens here once the socket is closed.
    let hook_url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    drop(listener);
    let webhook = Webhook::new(&hook_url, Secret::new("webhook-secret-0123456789"))
        .expect("webhook")
        .with_first_retry(Duration::from_millis(10));
    let relay = spawn_relay_with(|state| state.with_approval_webhook(Arc::new(webhook))).await;
    let (env_id, _runner, _agent, agent_key) = setup(&relay).await;
    let (_, ticket) = ask(&relay, &agent_key, &env_id, json!({})).await;
    let approval_id = ticket["approval_id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let (_, approval) = relay.get(&format!("/approvals/{approval_id}")).await;
        if approval["notification"]["state"] == "failed" {
            assert_eq!(approval["notification"]["attempts"], 6, "{approval}");
            let error = approval["notification"]["last_error"]
                .as_str()
                .expect("error");
            assert!(error.contains("could not reach"), "{error}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never failed: {approval}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
