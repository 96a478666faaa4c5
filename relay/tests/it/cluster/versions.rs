//! Rolling upgrades: relays of two relay-to-relay versions on one database
//! and one NATS (relay A stands in for the previous build with
//! `--relay-protocol 1`), and what happens to a call whose holder cannot
//! take it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{random_suffix, Balancer, Cluster, RealRunner};

/// The header that carries a relay-to-relay message's version.
const VERSION_HEADER: &str = "Runner-Relay-Protocol";

/// Relay A speaks version 1 (as builds before versions did), B and C
/// this build's.
async fn mixed_cluster() -> Cluster {
    Cluster::start_each([&["--relay-protocol", "1"], &[], &[]]).await
}

/// A development environment whose real runner connects to relay `index`.
async fn runner_on(cluster: &Cluster, index: usize, name: &str) -> (String, Balancer, RealRunner) {
    let (env, token) = cluster.dev_env(name).await;
    let balancer = Balancer::start(vec![cluster.relays[index].address]).await;
    let runner = RealRunner::start(&balancer.url, &token);
    for relay in 0..3 {
        cluster
            .wait_status(cluster.url(relay), &env, super::connected)
            .await;
    }
    (env, balancer, runner)
}

/// The version headers seen on each environment's call subject.
type Seen = Arc<Mutex<HashMap<String, Vec<Option<String>>>>>;
/// The `type` of each answer, by the request's reply subject.
type Answers = Arc<Mutex<HashMap<String, Vec<String>>>>;
/// Each request's reply subject and version header.
type Asked = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Records the version header of every request on the call subjects, and
/// what the holders answered (the requests' replies, on `_INBOX.>`).
async fn watch_calls(prefix: &str) -> (Seen, Asked, Answers, tokio::task::JoinHandle<()>) {
    let client = async_nats::connect(super::NATS_URL).await.expect("NATS");
    let mut calls = client
        .subscribe(format!("{prefix}.call.>"))
        .await
        .expect("subscribe");
    let mut replies = client.subscribe("_INBOX.>").await.expect("subscribe");
    client.flush().await.expect("flush");
    let seen: Seen = Arc::default();
    let asked: Asked = Arc::default();
    let answers: Answers = Arc::default();
    let (record, record_asked, record_answers) = (seen.clone(), asked.clone(), answers.clone());
    let task = tokio::spawn(async move {
        let _client = client;
        loop {
            tokio::select! {
                Some(message) = calls.next() => {
                    // <prefix>.call.<env>.<epoch>
                    let env = message.subject.split('.').nth(2).unwrap_or("").to_owned();
                    let version = message
                        .headers
                        .as_ref()
                        .and_then(|headers| headers.get(VERSION_HEADER))
                        .map(|value| value.as_str().to_owned());
                    if let Some(reply) = &message.reply {
                        record_asked.lock().expect("lock").push((reply.to_string(), version.clone()));
                    }
                    record.lock().expect("lock").entry(env).or_default().push(version);
                }
                Some(message) = replies.next() => {
                    let kind = serde_json::from_slice::<Value>(&message.payload)
                        .ok()
                        .and_then(|answer| answer["type"].as_str().map(str::to_owned))
                        .unwrap_or_default();
                    record_answers.lock().expect("lock").entry(message.subject.to_string()).or_default().push(kind);
                }
                else => break,
            }
        }
    });
    (seen, asked, answers, task)
}

async fn stored_announcement(cluster: &Cluster, env: &str) -> Value {
    use sqlx::Connection;
    let mut db = sqlx::PgConnection::connect(&cluster.database.url())
        .await
        .expect("database");
    let presence: String =
        sqlx::query_scalar("SELECT presence FROM runner_sessions WHERE environment_id = $1")
            .bind(env)
            .fetch_one(&mut db)
            .await
            .expect("session row");
    serde_json::from_str(&presence).expect("announcement JSON")
}

/// A `shell` call whose output is `lines` numbered lines, and a
/// `file_read` of a file larger than one NATS message.
async fn exchange(cluster: &Cluster, through: usize, env: &str, big: &[u8], label: &str) {
    let base = cluster.url(through).to_owned();
    let (status, body) = cluster
        .invoke(&base, env, json!({"tool_name": "ping", "args": {"n": 7}}))
        .await;
    assert_eq!(status, StatusCode::OK, "{label}: {body}");
    assert_eq!(body["result"]["n"], 7, "{label}: {body}");

    let (status, body) = cluster
        .invoke(
            &base,
            env,
            json!({"tool_name": "shell", "args": {"command": "seq 1 2000"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{label}: {body}");
    let stdout = body["result"]["stdout"].as_str().expect("stdout");
    assert_eq!(stdout.lines().count(), 2000, "{label}");
    assert!(stdout.ends_with("2000\n"), "{label}");

    let (status, body) = cluster
        .invoke(
            &base,
            env,
            json!({"tool_name": "file_read", "timeout_s": 60, "args": {"path": "big.txt"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{label}: {}", super::short(&body));
    assert_eq!(
        body["result"]["content"].as_str().map(str::as_bytes),
        Some(big),
        "{label}: the file read back across relays differs"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn relays_of_two_versions_exchange_calls_both_ways() {
    let cluster = mixed_cluster().await;
    let (seen, asked, answers, watching) = watch_calls(&cluster.prefix).await;
    let (old_env, _old_balancer, old_runner) = runner_on(&cluster, 0, "on-old").await;
    let (new_env, _new_balancer, new_runner) = runner_on(&cluster, 1, "on-new").await;

    // Each holder says which version it speaks, as its build would.
    let old = stored_announcement(&cluster, &old_env).await;
    assert!(
        old.get("relay_protocol").is_none(),
        "a version 1 holder names no version: {old}"
    );
    let new = stored_announcement(&cluster, &new_env).await;
    assert_eq!(new["relay_protocol"], 2, "{new}");

    // Larger than NATS's default 1 MiB message: results travel in parts.
    let big: Vec<u8> = (0..1_500_000)
        .map(|n: usize| b'a' + (n % 26) as u8)
        .collect();
    for runner in [&old_runner, &new_runner] {
        std::fs::write(runner.dir.path().join("workspace").join("big.txt"), &big).expect("write");
    }

    // New caller (B) → old holder (A), and old caller (A) → new holder (B).
    exchange(&cluster, 1, &old_env, &big, "through B to the runner on A").await;
    exchange(&cluster, 0, &new_env, &big, "through A to the runner on B").await;
    // New caller (C) → new holder (B).
    exchange(&cluster, 2, &new_env, &big, "through C to the runner on B").await;

    // A policy change made through the old relay reaches the runner held
    // by the new one, and the other way round.
    for (through, env) in [(0, &new_env), (1, &old_env)] {
        let (status, body) = cluster
            .request(
                reqwest::Method::PATCH,
                &format!("{}/execution-environments/{env}", cluster.url(through)),
                Some(json!({"policy": {"tools": {"mode": "list", "tools": ["ping"]}}})),
            )
            .await
            .expect("patch");
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, body) = cluster
            .invoke(
                cluster.url(2),
                env,
                json!({"tool_name": "shell", "args": {"command": "true"}}),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }

    tokio::time::sleep(Duration::from_millis(200)).await;
    watching.abort();
    let seen = seen.lock().expect("lock").clone();
    let to_old = seen
        .get(&old_env)
        .expect("requests to the old holder were seen");
    assert!(
        to_old.iter().all(Option::is_none),
        "the old holder got versioned requests it would not expect: {to_old:?}"
    );
    let to_new = seen
        .get(&new_env)
        .expect("requests to the new holder were seen");
    assert!(
        to_new.iter().any(Option::is_none),
        "the old caller's requests should carry no version: {to_new:?}"
    );
    assert!(
        to_new.iter().any(|version| version.as_deref() == Some("2")),
        "the new caller's requests should carry version 2: {to_new:?}"
    );

    // A call that ends at once is answered with its result (`done`) only
    // in version 2: an old caller (or a request to an old holder) gets the
    // acknowledgement it knows.
    let asked = asked.lock().expect("lock").clone();
    let answers = answers.lock().expect("lock").clone();
    let answered = |version: Option<&str>| -> Vec<String> {
        asked
            .iter()
            .filter(|(_, asked_in)| asked_in.as_deref() == version)
            .flat_map(|(reply, _)| answers.get(reply).cloned().unwrap_or_default())
            .collect()
    };
    let old = answered(None);
    assert!(old.iter().any(|kind| kind == "accepted"), "{old:?}");
    assert!(
        !old.iter().any(|kind| kind == "done"),
        "a version 1 request was answered `done`: {old:?}"
    );
    let new = answered(Some("2"));
    assert!(
        new.iter().any(|kind| kind == "done"),
        "no version 2 call was answered with its result: {new:?}"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_request_in_a_version_the_holder_does_not_speak_is_refused_at_once() {
    let cluster = mixed_cluster().await;
    let (env, _balancer, _runner) = runner_on(&cluster, 1, "refuses").await;
    let (status, body) = cluster
        .invoke(
            cluster.url(2),
            &env,
            json!({"tool_name": "ping", "args": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let call_id = body["call_id"].as_str().expect("call id");
    let entry = cluster
        .wait_invocation(cluster.url(1), call_id, "done")
        .await;
    let epoch = entry["epoch"].as_u64().expect("epoch");

    let client = async_nats::connect(super::NATS_URL).await.expect("NATS");
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(VERSION_HEADER, "3");
    let request = async_nats::Request::new()
        .headers(headers)
        .payload(r#"{"type":"probe","call_id":"x"}"#.into());
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        client.send_request(format!("{}.call.{env}.{epoch}", cluster.prefix), request),
    )
    .await
    .expect("answered before the caller's own timeout")
    .expect("answered");
    let answer: Value = serde_json::from_slice(&answer.payload).expect("JSON answer");
    assert_eq!(answer["type"], "refused", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains('3')),
        "the reason names the version: {answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_call_its_holder_never_took_ends_failed_in_the_journal_not_pending() {
    let cluster = Cluster::start().await;
    let (env, _balancer, runner) = cluster.runner_on_b("stopped-holder").await;
    let pid = cluster.relays[1].child.id().expect("relay B runs");
    let signal = |name: &str| {
        let status = std::process::Command::new("kill")
            .args([name, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {name}");
    };

    // The holder stops answering (SIGSTOP: its lease and NATS subscription
    // stay) while a call in parts, with the caller's own id, goes to it.
    signal("-STOP");
    let content = "x".repeat(3 * 1024 * 1024);
    let call_id = format!("stopped-{}", random_suffix());
    let started = Instant::now();
    let (status, body) = cluster
        .invoke(
            cluster.url(0),
            &env,
            json!({"tool_name": "file_write", "call_id": call_id, "timeout_s": 60,
                   "args": {"path": "never.txt", "content": content}}),
        )
        .await;
    let answered_after = started.elapsed();
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        super::short(&body)
    );
    assert_eq!(
        body["error"]["code"],
        "runner_disconnected",
        "{}",
        super::short(&body)
    );
    assert!(
        answered_after < Duration::from_secs(30),
        "{answered_after:?}"
    );

    // Its journal entry is final at once, on every relay, and a repeat of
    // the id gets that answer without waiting.
    let (status, entry) = cluster
        .get(cluster.url(2), &format!("/invocations/{call_id}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{entry}");
    assert_eq!(entry["state"], "failed", "{entry}");
    assert_eq!(entry["error_code"], "runner_disconnected", "{entry}");
    let repeated = Instant::now();
    let (status, body) = cluster
        .invoke(
            cluster.url(2),
            &env,
            json!({"tool_name": "file_write", "call_id": call_id,
                   "args": {"path": "never.txt", "content": "again"}}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        super::short(&body)
    );
    assert!(repeated.elapsed() < Duration::from_secs(2));
    signal("-CONT");

    // The holder, back, finds only the first part of a transfer nobody
    // finishes: the file is never written and the entry stays final.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!runner
        .dir
        .path()
        .join("workspace")
        .join("never.txt")
        .exists());
    let (_, entry) = cluster
        .get(cluster.url(1), &format!("/invocations/{call_id}"))
        .await;
    assert_eq!(entry["state"], "failed", "{entry}");
}
