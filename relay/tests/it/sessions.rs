//! Work sessions over a real relay and real runner sockets: what `auto`
//! picks and never picks, the lock of the first call, what a session says
//! when its machine is gone, agent and team defaults, expiry.

use std::collections::HashMap;

use reqwest::{Method, StatusCode};
use runner_proto::ws::{Heartbeat, RunnerMessage};
use runner_relay::store::MemberKind;
use serde_json::{json, Value};
use time::Duration;

use crate::support::{hello, spawn_relay, spawn_relay_with, FakeRunner, TestRelay, DEADLINE};

/// An environment created by `key` (scope and tags as given), with a
/// runner connected.
async fn online(
    relay: &TestRelay,
    key: &str,
    name: &str,
    scope: &str,
    tags: &[&str],
) -> (String, FakeRunner) {
    let (status, env) = relay
        .request(
            Method::POST,
            "/execution-environments",
            Some(key),
            Some(json!({ "name": name, "tier": "development", "scope": scope, "tags": tags })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let id = env["id"].as_str().expect("id").to_owned();
    let (status, token) = relay
        .request(
            Method::POST,
            &format!("/execution-environments/{id}/generate-token"),
            Some(key),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{token}");
    let token = token["token"].as_str().expect("token").to_owned();
    let runner = FakeRunner::connect(relay, &token, hello(name, name, &["ping", "shell"])).await;
    relay.wait_status(&id, |s| s["status"] == "online").await;
    (id, runner)
}

async fn create_session(relay: &TestRelay, key: &str, body: Value) -> (StatusCode, Value) {
    relay
        .request(Method::POST, "/sessions", Some(key), Some(body))
        .await
}

async fn new_session(relay: &TestRelay, key: &str, body: Value) -> String {
    let (status, session) = create_session(relay, key, body).await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    assert_eq!(session["state"], "open");
    assert!(session["environment"].is_null(), "not locked before a call");
    session["id"].as_str().expect("id").to_owned()
}

async fn session(relay: &TestRelay, key: &str, id: &str) -> (StatusCode, Value) {
    relay
        .request(Method::GET, &format!("/sessions/{id}"), Some(key), None)
        .await
}

/// A call through a session that fails before reaching a runner.
async fn refused_call(relay: &TestRelay, key: &str, id: &str) -> (StatusCode, Value) {
    relay
        .request(
            Method::POST,
            &format!("/sessions/{id}/invoke-tool"),
            Some(key),
            Some(json!({ "tool_name": "ping" })),
        )
        .await
}

/// A call through a session: waits until the session is locked, answers
/// on the runner of the locked environment, and returns that environment's
/// id with the answer.
async fn call(
    relay: &TestRelay,
    key: &str,
    id: &str,
    runners: &mut HashMap<String, FakeRunner>,
) -> (String, Value) {
    let request = relay
        .http
        .post(format!("{}/sessions/{id}/invoke-tool", relay.url))
        .bearer_auth(key)
        .json(&json!({ "tool_name": "ping", "args": { "n": 1 } }))
        .send();
    let pending = tokio::spawn(request);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let environment = loop {
        let (status, body) = session(relay, key, id).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if let Some(env) = body["environment"]["id"].as_str() {
            break env.to_owned();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never locked: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let runner = runners
        .get_mut(&environment)
        .unwrap_or_else(|| panic!("locked to {environment}, which has no runner here"));
    let relayed = runner.next_call().await;
    assert_eq!(relayed.tool, "ping");
    runner.answer(&relayed, 0).await;
    let response = pending.await.expect("task").expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get(runner_proto::sessions::ENVIRONMENT_HEADER)
            .and_then(|value| value.to_str().ok()),
        Some(environment.as_str())
    );
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["result"]["echo"]["n"], 1, "{body}");
    (environment, body)
}

#[tokio::test]
async fn auto_picks_the_team_runner_or_a_shared_one_and_never_another_teams() {
    let relay = spawn_relay().await;
    let ops = relay.member(false, &["ops"]).await;
    let web = relay.member(false, &["web"]).await;
    let qa = relay.member(false, &["qa"]).await;
    let (ops_box, ops_runner) = online(&relay, &ops, "ops-box", "team:ops", &[]).await;
    let mut runners = HashMap::from([(ops_box.clone(), ops_runner)]);

    // The ops member gets its team's runner.
    let id = new_session(&relay, &ops, json!({ "environment": "auto" })).await;
    let (env, _) = call(&relay, &ops, &id, &mut runners).await;
    assert_eq!(env, ops_box);
    let (_, body) = session(&relay, &ops, &id).await;
    assert!(
        body["selection_reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("auto: \"ops-box\" of 1 usable environment"),
        "{body}"
    );
    assert_eq!(body["environment"]["status"], "online");
    assert_eq!(body["requested_from"], "request");

    // Another team's runner is never chosen, however idle.
    let id = new_session(&relay, &web, json!({})).await;
    let (status, error) = refused_call(&relay, &web, &id).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error["error"]["code"], "no_usable_runner");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no sandbox host online"),
        "{error}"
    );
    let (_, body) = session(&relay, &web, &id).await;
    assert!(body["environment"].is_null(), "a failed pick locks nothing");

    // A shared runner serves members whose teams have none.
    let (shared, shared_runner) =
        online(&relay, &relay.admin_key, "shared-box", "shared", &[]).await;
    runners.insert(shared.clone(), shared_runner);
    let (env, _) = call(&relay, &web, &id, &mut runners).await;
    assert_eq!(env, shared, "the same session, now that one is usable");
    let id = new_session(&relay, &qa, json!({ "environment": "auto" })).await;
    let (env, _) = call(&relay, &qa, &id, &mut runners).await;
    assert_eq!(env, shared);

    // A session is its creator's: another member learns nothing of it.
    let (status, _) = session(&relay, &ops, &id).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = refused_call(&relay, &ops, &id).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Admins see every session but call through none of others'.
    let (status, _) = session(&relay, &relay.admin_key, &id).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = refused_call(&relay, &relay.admin_key, &id).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, list) = relay
        .request(Method::GET, "/sessions", Some(&qa), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1), "{list}");
}

#[tokio::test]
async fn tags_decide_between_two_online_runners() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (plain, plain_runner) = online(&relay, &admin, "plain", "shared", &["x86"]).await;
    let (gpu, gpu_runner) = online(&relay, &admin, "gpu", "shared", &["x86", "gpu"]).await;
    let mut runners = HashMap::from([(plain.clone(), plain_runner), (gpu.clone(), gpu_runner)]);
    for (tags, expected) in [(json!(["gpu"]), &gpu), (json!(["gpu", "x86"]), &gpu)] {
        let id = new_session(&relay, &admin, json!({ "tags": tags })).await;
        let (env, _) = call(&relay, &admin, &id, &mut runners).await;
        assert_eq!(&env, expected, "tags {tags}");
        let (_, body) = session(&relay, &admin, &id).await;
        assert!(
            body["selection_reason"]
                .as_str()
                .unwrap_or("")
                .contains("carries every requested tag"),
            "{body}"
        );
    }
    // The gpu runner gets busy: without tags the idle one wins.
    let runner = runners.get_mut(&gpu).expect("gpu runner");
    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat {
            in_flight: 3,
            backlog: 0,
            executor_healthy: Some(true),
            sandbox_capacity: None,
        }))
        .await;
    let _ack = runner.next_frame().await;
    let id = new_session(&relay, &admin, json!({})).await;
    let (env, _) = call(&relay, &admin, &id, &mut runners).await;
    assert_eq!(env, plain, "least loaded");
    // Tags no runner carries: still served, and the reason says so.
    let id = new_session(&relay, &admin, json!({ "tags": ["arm"] })).await;
    call(&relay, &admin, &id, &mut runners).await;
    let (_, body) = session(&relay, &admin, &id).await;
    assert!(
        body["selection_reason"]
            .as_str()
            .unwrap_or("")
            .contains("no usable environment carries every requested tag (arm)"),
        "{body}"
    );
    let (status, error) = create_session(&relay, &admin, json!({ "tags": [""] })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
}

#[tokio::test]
async fn a_degraded_environment_is_selectable_with_a_notice_and_a_pending_one_is_not() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (busy, mut runner) = online(&relay, &admin, "busy", "shared", &[]).await;
    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat {
            in_flight: 1,
            backlog: 4,
            executor_healthy: Some(true),
            sandbox_capacity: None,
        }))
        .await;
    let _ack = runner.next_frame().await;
    relay
        .wait_status(&busy, |s| s["status"] == "degraded")
        .await;
    let mut runners = HashMap::from([(busy.clone(), runner)]);
    // By name, as the CLI passes it.
    let id = new_session(&relay, &admin, json!({ "environment": "busy" })).await;
    let (env, body) = call(&relay, &admin, &id, &mut runners).await;
    assert_eq!(env, busy);
    let notice = body["notice"].as_str().unwrap_or("");
    assert!(
        notice.contains("degraded") && notice.contains("you can continue, responses may be slower"),
        "{body}"
    );

    let pending = relay.create_env(json!({ "name": "pending" })).await;
    let id = new_session(&relay, &admin, json!({ "environment": pending })).await;
    let (status, error) = refused_call(&relay, &admin, &id).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error["error"]["code"], "environment_not_selectable");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("pending"),
        "{error}"
    );

    // Another team's environment cannot even be asked for.
    let ops = relay.member(false, &["ops"]).await;
    let (ops_box, _ops_runner) = online(&relay, &ops, "ops-only", "team:ops", &[]).await;
    let outsider = relay.member(false, &["web"]).await;
    let (status, _) = create_session(&relay, &outsider, json!({ "environment": ops_box })).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A sandbox session is taken; its first call finds no sandbox host.
    let id = new_session(&relay, &admin, json!({ "environment": "sandbox" })).await;
    let (status, error) = refused_call(&relay, &admin, &id).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error["error"]["code"], "no_sandbox_host");
}

#[tokio::test]
async fn the_lock_survives_a_reconnect_and_refuses_rather_than_moves() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let (first, runner) = online(&relay, &admin, "first", "shared", &[]).await;
    let mut runners = HashMap::from([(first.clone(), runner)]);
    let id = new_session(&relay, &admin, json!({ "environment": "auto" })).await;
    let (env, _) = call(&relay, &admin, &id, &mut runners).await;
    assert_eq!(env, first);

    // Another machine comes online and the first one goes away.
    let (second, runner) = online(&relay, &admin, "second", "shared", &[]).await;
    runners.insert(second.clone(), runner);
    drop(runners.remove(&first));
    relay
        .wait_status(&first, |s| s["status"] == "offline")
        .await;
    let (status, error) = refused_call(&relay, &admin, &id).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error["error"]["code"], "session_environment_unavailable");
    let message = error["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("\"first\"") && message.contains("offline") && message.contains(&first),
        "{error}"
    );
    let (_, body) = session(&relay, &admin, &id).await;
    assert_eq!(body["environment"]["id"], first.as_str(), "never moved");
    assert_eq!(body["environment"]["status"], "offline");

    // The runner comes back: the session goes on where it was.
    let token = relay.token(&first).await;
    let runner = FakeRunner::connect(&relay, &token, hello("first", "first-2", &["ping"])).await;
    runners.insert(first.clone(), runner);
    relay.wait_status(&first, |s| s["status"] == "online").await;
    let (env, _) = call(&relay, &admin, &id, &mut runners).await;
    assert_eq!(env, first);

    // Deleted: refused for good, and named.
    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/execution-environments/{first}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, error) = refused_call(&relay, &admin, &id).await;
    assert_eq!(status, StatusCode::GONE, "{error}");
    assert_eq!(error["error"]["code"], "session_environment_deleted");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("\"first\""),
        "{error}"
    );
    let (_, body) = session(&relay, &admin, &id).await;
    assert_eq!(body["environment"]["deleted"], true, "{body}");
    assert_eq!(body["environment"]["name"], "first");
}

#[tokio::test]
async fn sessions_expire_when_idle_and_end_when_asked() {
    let relay = spawn_relay_with(|state| state.with_session_idle_timeout(60)).await;
    let admin = relay.admin_key.clone();
    let (env, runner) = online(&relay, &admin, "box", "shared", &[]).await;
    let mut runners = HashMap::from([(env.clone(), runner)]);
    let id = new_session(&relay, &admin, json!({})).await;
    call(&relay, &admin, &id, &mut runners).await;
    // Used 50 s later: the idle time counts from there.
    relay.clock.advance(Duration::seconds(50));
    keep_online(&relay, &env, &mut runners).await;
    call(&relay, &admin, &id, &mut runners).await;
    relay.clock.advance(Duration::seconds(50));
    keep_online(&relay, &env, &mut runners).await;
    call(&relay, &admin, &id, &mut runners).await;
    relay.clock.advance(Duration::seconds(71));
    keep_online(&relay, &env, &mut runners).await;
    let (status, error) = refused_call(&relay, &admin, &id).await;
    assert_eq!(status, StatusCode::GONE, "{error}");
    assert_eq!(error["error"]["code"], "session_expired");
    let (_, body) = session(&relay, &admin, &id).await;
    assert_eq!(body["state"], "expired");
    assert_eq!(body["idle_timeout_s"], 60);

    let id = new_session(&relay, &admin, json!({})).await;
    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/sessions/{id}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, error) = refused_call(&relay, &admin, &id).await;
    assert_eq!(status, StatusCode::GONE, "{error}");
    assert_eq!(error["error"]["code"], "session_ended");
    let (_, list) = relay
        .request(Method::GET, "/sessions?state=ended", Some(&admin), None)
        .await;
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .map(|sessions| sessions.iter().filter_map(|s| s["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(ids, [id.as_str()], "{list}");
    let (status, _) = session(&relay, &admin, "ses_unknown").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A heartbeat after the clock moved, so the runner stays online.
async fn keep_online(relay: &TestRelay, env: &str, runners: &mut HashMap<String, FakeRunner>) {
    let runner = runners.get_mut(env).expect("runner");
    runner
        .send(&RunnerMessage::Heartbeat(Heartbeat::default()))
        .await;
    let _ack = runner.next_frame().await;
    relay.wait_status(env, |s| s["status"] == "online").await;
}

#[tokio::test]
async fn sessions_without_an_environment_go_agent_then_team_then_auto() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let ops = relay.member(false, &["ops"]).await;
    let (agent_id, agent) = relay
        .new_member("reviewer-bot", false, &["ops"], MemberKind::Agent)
        .await;
    let (shared, shared_runner) = online(&relay, &admin, "shared", "shared", &[]).await;
    let (team_box, team_runner) = online(&relay, &ops, "team-box", "team:ops", &[]).await;
    let (agent_box, agent_runner) = online(&relay, &ops, "agent-box", "team:ops", &[]).await;
    let mut runners = HashMap::from([
        (shared.clone(), shared_runner),
        (team_box.clone(), team_runner),
        (agent_box.clone(), agent_runner),
    ]);
    let set_default = |path: String, environment: Value| {
        let relay = &relay;
        let ops = ops.clone();
        async move {
            relay
                .request(
                    Method::PATCH,
                    &path,
                    Some(&ops),
                    Some(json!({ "default_environment": environment })),
                )
                .await
        }
    };
    let (status, body) = set_default(format!("/members/{agent_id}"), json!("agent-box")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "agent");
    let (status, body) = set_default("/teams/ops".to_owned(), json!(team_box)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let id = agent_session(&relay, &agent, &agent_id, "agent").await;
    assert_eq!(call(&relay, &agent, &id, &mut runners).await.0, agent_box);
    set_default(format!("/members/{agent_id}"), Value::Null).await;
    let id = agent_session(&relay, &agent, &agent_id, "team").await;
    assert_eq!(call(&relay, &agent, &id, &mut runners).await.0, team_box);
    set_default("/teams/ops".to_owned(), Value::Null).await;
    let (status, created) = create_session(&relay, &agent, json!({})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(created["requested_from"], "auto");

    // A person may start a session for an agent of its team.
    let (status, created) = create_session(&relay, &ops, json!({ "agent": "reviewer-bot" })).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["agent"]["name"], "reviewer-bot");
    let outsider = relay.member(false, &["web"]).await;
    let (status, _) = create_session(&relay, &outsider, json!({ "agent": agent_id })).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The team's default is deleted: no runner tools, and GET says so.
    set_default("/teams/ops".to_owned(), json!(team_box)).await;
    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/execution-environments/{team_box}"),
            Some(&ops),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, error) = create_session(&relay, &agent, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{error}");
    assert_eq!(error["error"]["code"], "default_environment_deleted");
    let (_, team) = relay
        .request(Method::GET, "/teams/ops", Some(&ops), None)
        .await;
    assert_eq!(team["has_runner_tools"], false, "{team}");
    assert_eq!(team["default_environment"]["deleted"], true, "{team}");
    let (_, member) = relay
        .request(
            Method::GET,
            &format!("/members/{agent_id}"),
            Some(&agent),
            None,
        )
        .await;
    assert_eq!(member["has_runner_tools"], false, "{member}");
    assert!(
        member["notice"].as_str().unwrap_or("").contains("deleted"),
        "{member}"
    );
    // Naming an environment still works.
    let (status, _) = create_session(&relay, &agent, json!({ "environment": "auto" })).await;
    assert_eq!(status, StatusCode::CREATED);
}

/// A session the agent starts naming no environment; checks where its
/// request came from.
async fn agent_session(relay: &TestRelay, key: &str, agent_id: &str, from: &str) -> String {
    let (status, created) = create_session(relay, key, json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["requested_from"], from, "{created}");
    assert_eq!(created["agent"]["id"], agent_id);
    created["id"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn tools_stay_listed_while_the_runner_is_offline() {
    let relay = spawn_relay().await;
    let (id, token) = relay.dev_env("listed").await;
    let runner =
        FakeRunner::connect(&relay, &token, hello("listed", "i1", &["ping", "shell"])).await;
    relay.wait_status(&id, |s| s["status"] == "online").await;
    drop(runner);
    relay.wait_status(&id, |s| s["connected"] == false).await;
    let (status, tools) = relay
        .get(&format!("/execution-environments/{id}/tools"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tools["runner_connected"], false);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["ping", "shell"], "{tools}");
    let (status, error) = relay.invoke(&id, json!({ "tool_name": "ping" })).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    // Never connected: nothing to list.
    let (never, _) = relay.dev_env("never").await;
    let (_, tools) = relay
        .get(&format!("/execution-environments/{never}/tools"))
        .await;
    assert_eq!(tools["tools"], json!([]));
}

#[tokio::test]
async fn team_membership_changes_apply_at_once() {
    let relay = spawn_relay().await;
    let admin = relay.admin_key.clone();
    let ops = relay.member(false, &["ops"]).await;
    let (newcomer_id, newcomer) = relay
        .new_member("newcomer", false, &[], MemberKind::Person)
        .await;
    let (env, _runner) = online(&relay, &ops, "ops-box", "team:ops", &[]).await;
    let path = format!("/execution-environments/{env}");
    let (status, _) = relay
        .request(Method::GET, &path, Some(&newcomer), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, team) = relay
        .request(
            Method::POST,
            "/teams/ops/members",
            Some(&admin),
            Some(json!({ "member": "newcomer" })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{team}");
    let (status, _) = relay
        .request(Method::GET, &path, Some(&newcomer), None)
        .await;
    assert_eq!(status, StatusCode::OK, "the cached member was dropped");
    let session = new_session(&relay, &newcomer, json!({ "environment": env })).await;
    let (status, _) = relay
        .request(
            Method::POST,
            "/teams/ops/members",
            Some(&ops),
            Some(json!({ "member": newcomer_id })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "admins only");

    let (status, _) = relay
        .request(
            Method::DELETE,
            &format!("/teams/ops/members/{newcomer_id}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = relay
        .request(Method::GET, &path, Some(&newcomer), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Its session's environment exists: not "deleted", just not its to use.
    let (status, error) = refused_call(&relay, &newcomer, &session).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    assert_eq!(error["error"]["code"], "not_found", "{error}");
    let (status, error) = relay
        .request(
            Method::DELETE,
            &format!("/teams/ops/members/{newcomer_id}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    assert_eq!(error["error"]["code"], "not_a_member");
    let (status, _) = relay
        .request(
            Method::POST,
            "/teams/nope/members",
            Some(&admin),
            Some(json!({ "member": newcomer_id })),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
