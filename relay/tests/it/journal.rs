//! The call journal.
//!
//! Its batch write, against each real store: a batch of one kind is one
//! statement on its own, a batch of both kinds one transaction, and either
//! way rows only move forward (a runner's answer beats the relay's
//! "failed"), update-only steps never create a row, and a step of another
//! environment changes nothing.
//!
//! And over real HTTP with a fake runner (SPEC §6, calls in flight when a
//! runner drops fail): a runner whose connection ends mid-call leaves its
//! calls `failed` with `runner_disconnected` at once, a repeated `call_id`
//! answers at once with what the first caller got, and a result the runner
//! reports after reconnecting still wins.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use runner_proto::api::InvocationState;
use runner_proto::ws::{CallResult, RunnerMessage};
use runner_relay::store::{self, InvocationRecord, JournalWrite, Store};
use serde_json::{json, Value};
use time::OffsetDateTime;

use crate::support::{hello, spawn_relay, FakeRunner, TestRelay, DEADLINE};

const ENV: &str = "env_journal";

fn step(call_id: &str, state: InvocationState, create: bool) -> JournalWrite {
    let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a valid time");
    let done = state == InvocationState::Done;
    JournalWrite {
        entry: InvocationRecord {
            call_id: call_id.to_owned(),
            environment_id: ENV.to_owned(),
            tool_name: if done {
                String::new()
            } else {
                "shell".to_owned()
            },
            state,
            epoch: Some(3),
            created_at: at,
            finished_at: done.then_some(at),
            result: if done {
                json!({"stdout": call_id})
            } else {
                json!(null)
            },
            exit_code: done.then_some(0),
            error: None,
            error_code: None,
        },
        create,
    }
}

/// The step a relay writes when the runner's session ends first.
fn failed(call_id: &str) -> JournalWrite {
    let mut write = step(call_id, InvocationState::Failed, true);
    write.entry.tool_name = String::new();
    write.entry.finished_at = Some(write.entry.created_at);
    write.entry.error = Some("the runner disconnected before the call finished".to_owned());
    write.entry.error_code = Some("runner_disconnected".to_owned());
    write
}

async fn state_of(store: &dyn Store, call_id: &str) -> Option<InvocationState> {
    store
        .invocation(call_id)
        .await
        .expect("read the journal")
        .map(|entry| entry.state)
}

async fn journal_writes_follow_the_rules(store: &dyn Store) {
    use InvocationState::{Dispatched, Done, Failed};

    // Creating steps only: one statement.
    store
        .write_journal(&[step("a", Dispatched, true), step("b", Dispatched, true)])
        .await
        .expect("create-only batch");
    assert_eq!(state_of(store, "a").await, Some(Dispatched));
    assert_eq!(state_of(store, "b").await, Some(Dispatched));

    // Update-only steps: one statement; a missing row is not created.
    store
        .write_journal(&[step("a", Done, false), step("ghost", Done, false)])
        .await
        .expect("update-only batch");
    let a = store
        .invocation("a")
        .await
        .expect("read")
        .expect("a is journalled");
    assert_eq!(a.state, Done);
    assert_eq!(
        a.tool_name, "shell",
        "the tool name of the first step stays"
    );
    assert_eq!(a.result, json!({"stdout": "a"}));
    assert_eq!(a.exit_code, Some(0));
    assert_eq!(state_of(store, "ghost").await, None);

    // Both kinds in one batch: one transaction, both applied.
    store
        .write_journal(&[step("c", Dispatched, true), step("b", Done, false)])
        .await
        .expect("mixed batch");
    assert_eq!(state_of(store, "c").await, Some(Dispatched));
    assert_eq!(state_of(store, "b").await, Some(Done));

    // Never backwards, by either statement.
    store
        .write_journal(&[step("a", Dispatched, true)])
        .await
        .expect("a late create");
    store
        .write_journal(&[step("b", Dispatched, false)])
        .await
        .expect("a late update");
    assert_eq!(state_of(store, "a").await, Some(Done));
    assert_eq!(state_of(store, "b").await, Some(Done));

    // A step naming another environment leaves the row alone.
    let mut foreign = step("c", Done, true);
    foreign.entry.environment_id = "env_other".to_owned();
    store
        .write_journal(&[foreign])
        .await
        .expect("a foreign step");
    let c = store
        .invocation("c")
        .await
        .expect("read")
        .expect("c is journalled");
    assert_eq!((c.state, c.environment_id.as_str()), (Dispatched, ENV));

    // The runner's session ended first: failed, with its code and time,
    // the tool name of the dispatch kept. An answer that is already there
    // stays.
    store
        .write_journal(&[failed("c"), failed("a")])
        .await
        .expect("failed steps");
    let c = store
        .invocation("c")
        .await
        .expect("read")
        .expect("c is journalled");
    assert_eq!(c.state, Failed);
    assert_eq!(c.tool_name, "shell");
    assert_eq!(c.error_code.as_deref(), Some("runner_disconnected"));
    assert!(c.finished_at.is_some());
    assert_eq!(c.settled(), store::Settled::Disconnected);
    assert_eq!(state_of(store, "a").await, Some(Done), "an answer stays");

    // A result the runner reports later (on a newer session, nobody
    // waiting: update only) wins, error code and all; nothing moves it
    // back.
    let mut late = step("c", Done, false);
    late.entry.error_code = Some("denied_by_runner_policy".to_owned());
    store.write_journal(&[late]).await.expect("a late result");
    store
        .write_journal(&[failed("c"), step("c", Dispatched, true)])
        .await
        .expect("late steps");
    let c = store
        .invocation("c")
        .await
        .expect("read")
        .expect("c is journalled");
    assert_eq!(c.state, Done);
    assert_eq!(c.result, json!({"stdout": "c"}));
    match c.settled() {
        store::Settled::Answered(answer) => {
            assert_eq!(
                answer.error_code.as_deref(),
                Some("denied_by_runner_policy")
            )
        }
        other => panic!("a done entry is answered: {other:?}"),
    }
}

#[tokio::test]
async fn journal_batches_on_sqlite_follow_the_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("relay.db").display());
    let store = store::open(&url).await.expect("open SQLite");
    journal_writes_follow_the_rules(store.as_ref()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (run by .ci/run with --include-ignored)"]
async fn journal_batches_on_postgres_follow_the_rules() {
    let database = crate::cluster::Database::create().await;
    let store = store::open(&database.url()).await.expect("open PostgreSQL");
    journal_writes_follow_the_rules(store.as_ref()).await;
}

/// `GET /invocations/{call_id}` once it is in `state`, with how long that
/// took.
async fn entry_once(relay: &TestRelay, call_id: &str, state: &str) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let (status, entry) = relay.get(&format!("/invocations/{call_id}")).await;
        if status == StatusCode::OK && entry["state"] == state {
            return (entry, started.elapsed());
        }
        assert!(
            started.elapsed() < DEADLINE,
            "call {call_id} never became {state}: {status} {entry}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends a call in a task of its own; its answer comes through the handle.
fn call_in_background(
    relay: &Arc<TestRelay>,
    env: &str,
    body: Value,
) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let (relay, env) = (relay.clone(), env.to_owned());
    tokio::spawn(async move { relay.invoke(&env, body).await })
}

#[tokio::test]
async fn a_runner_dropping_mid_call_fails_its_calls_and_a_repeated_call_id_answers_at_once() {
    let relay = Arc::new(spawn_relay().await);
    let (env, token) = relay.dev_env("dropping").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let epoch = runner.welcome.epoch;

    // One call with the caller's id, one with the relay's.
    let keyed =
        json!({"tool_name": "shell", "args": {"n": 1}, "call_id": "drop-1", "timeout_s": 300});
    let first = call_in_background(&relay, &env, keyed.clone());
    runner.next_call().await;
    let plain = call_in_background(
        &relay,
        &env,
        json!({"tool_name": "shell", "timeout_s": 300}),
    );
    runner.next_call().await;

    drop(runner);
    let dropped_at = Instant::now();
    let (status, answer) = first.await.expect("first caller");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"]["code"], "runner_disconnected", "{answer}");
    let (status, plain_answer) = plain.await.expect("second caller");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{plain_answer}");
    let plain_id = plain_answer["error"]["call_id"]
        .as_str()
        .expect("the relay's call id is in the answer")
        .to_owned();

    // Failed in the journal, with the reason and when, promptly (not after
    // a timeout: the calls asked for 300 s).
    for call_id in ["drop-1", plain_id.as_str()] {
        let (entry, _) = entry_once(&relay, call_id, "failed").await;
        assert_eq!(entry["error_code"], "runner_disconnected", "{entry}");
        assert_eq!(
            entry["error"], "the runner disconnected before the call finished",
            "{entry}"
        );
        assert!(entry["finished_at"].is_string(), "{entry}");
        assert_eq!(entry["tool_name"], "shell", "{entry}");
        assert_eq!(entry["epoch"], epoch, "{entry}");
    }
    let waited = dropped_at.elapsed();
    assert!(
        waited < Duration::from_secs(2),
        "journalled after {waited:?}"
    );

    // The same call id again: the same answer, at once; nothing is sent.
    let asked = Instant::now();
    let (status, again) = relay.invoke(&env, keyed).await;
    let took = asked.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{again}");
    assert_eq!(again, answer);
    assert!(took < Duration::from_secs(1), "the repeat took {took:?}");
    eprintln!("journal: failed {waited:?} after the drop; the repeat answered in {took:?}");
}

#[tokio::test]
async fn a_result_the_runner_reports_after_reconnecting_beats_the_failure() {
    let relay = Arc::new(spawn_relay().await);
    let (env, token) = relay.dev_env("comeback").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let body =
        json!({"tool_name": "shell", "args": {"n": 2}, "call_id": "late-1", "timeout_s": 300});
    let first = call_in_background(&relay, &env, body.clone());
    let call = runner.next_call().await;
    drop(runner);
    let (status, _) = first.await.expect("first caller");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    entry_once(&relay, "late-1", "failed").await;

    // The same runner process comes back and reports the call it kept
    // running (as the real runner does after a dropped connection).
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    runner.answer(&call, 0).await;
    let (entry, _) = entry_once(&relay, "late-1", "done").await;
    assert_eq!(entry["exit_code"], 0, "{entry}");
    assert_eq!(entry["result"], json!({"echo": {"n": 2}}), "{entry}");
    assert!(entry.get("error_code").is_none(), "{entry}");

    let (status, again) = relay.invoke(&env, body).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["result"], json!({"echo": {"n": 2}}), "{again}");
    assert_eq!(again["call_id"], "late-1");
}

#[tokio::test]
async fn a_runner_that_takes_a_new_session_keeps_its_calls_running_in_the_journal() {
    let relay = Arc::new(spawn_relay().await);
    let (env, token) = relay.dev_env("moving").await;
    let mut old = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let body = json!({"tool_name": "shell", "call_id": "moved-1", "timeout_s": 300});
    let first = call_in_background(&relay, &env, body.clone());
    let call = old.next_call().await;

    // The same process on a new socket (its old one half-open): the old
    // session is closed quietly, and the runner still runs the call.
    let mut new = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    old.closed().await;
    let (status, _) = first.await.expect("first caller");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (entry, _) = entry_once(&relay, "moved-1", "dispatched").await;
    assert!(entry.get("error_code").is_none(), "{entry}");

    // A repeat waits for the result the runner reports on its new session.
    let again = call_in_background(&relay, &env, body);
    tokio::time::sleep(Duration::from_millis(300)).await;
    new.answer(&call, 0).await;
    let (status, answer) = again.await.expect("repeat");
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["exit_code"], 0, "{answer}");
}

#[tokio::test]
async fn a_repeated_call_id_gets_the_runner_policy_refusal_again() {
    let relay = Arc::new(spawn_relay().await);
    let (env, token) = relay.dev_env("strict").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let body = json!({"tool_name": "shell", "call_id": "refused-1"});
    let first = call_in_background(&relay, &env, body.clone());
    let call = runner.next_call().await;
    runner
        .send(&RunnerMessage::Result(CallResult {
            call_id: call.call_id.clone(),
            error: Some("denied by the permission file: rule 3".to_owned()),
            error_code: Some("denied_by_runner_policy".to_owned()),
            ..CallResult::default()
        }))
        .await;
    let (status, answer) = first.await.expect("first caller");
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(
        answer["error"]["code"], "denied_by_runner_policy",
        "{answer}"
    );

    let (entry, _) = entry_once(&relay, "refused-1", "done").await;
    assert_eq!(entry["error_code"], "denied_by_runner_policy", "{entry}");
    let (status, again) = relay.invoke(&env, body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{again}");
    assert_eq!(again, answer);
}

/// A result longer than `--journal-result-max-kb`: the caller that waited
/// gets all of it; the journal keeps its end, marked, within the bound,
/// and counts the cut. Then the journal's total size: past the bound, the
/// oldest finished calls go; at 80 % of it and more, a warning and the two
/// gauges an alert divides.
#[tokio::test]
async fn the_journal_keeps_the_end_of_long_results_and_stays_under_its_size() {
    const MAX: usize = 8 * 1024;
    let relay = Arc::new(
        crate::support::spawn_relay_with(|state| state.with_journal_result_max_bytes(MAX)).await,
    );
    let (env, token) = relay.dev_env("loud").await;
    let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i1", &["shell"])).await;
    let stdout: String = (0..20_000).map(|n| format!("line {n}\n")).collect();
    let waiting = call_in_background(
        &relay,
        &env,
        json!({"tool_name": "shell", "call_id": "loud-1"}),
    );
    let call = runner.next_call().await;
    runner
        .send(&RunnerMessage::Result(CallResult {
            call_id: call.call_id.clone(),
            result: json!({ "stdout": stdout, "stderr": "" }),
            exit_code: Some(0),
            error: None,
            error_code: None,
        }))
        .await;
    let (status, answer) = waiting.await.expect("the caller");
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["result"]["stdout"],
        json!(stdout),
        "the caller got it all"
    );

    let (entry, _) = entry_once(&relay, "loud-1", "done").await;
    let kept = entry["result"]["stdout"].as_str().expect("stdout kept");
    assert!(kept.ends_with("line 19999\n"), "the end is kept");
    assert!(
        kept.contains("not kept by the relay's call journal"),
        "marked"
    );
    assert!(
        entry["result"]["journal_truncated"]["original_bytes"]
            .as_u64()
            .is_some_and(|bytes| bytes as usize > stdout.len()),
        "{}",
        entry["result"]["journal_truncated"]
    );
    let stored = serde_json::to_vec(&entry["result"]).expect("encodes").len();
    assert!(stored <= MAX, "{stored} bytes kept");

    // The total: two finished calls of ~8 KiB; a bound of 10 KiB keeps the
    // newer one only.
    runner
        .send(&RunnerMessage::Heartbeat(Default::default()))
        .await;
    let second = call_in_background(
        &relay,
        &env,
        json!({"tool_name": "shell", "call_id": "loud-2"}),
    );
    let call = runner.next_call().await;
    runner
        .send(&RunnerMessage::Result(CallResult {
            call_id: call.call_id.clone(),
            result: json!({ "stdout": stdout }),
            exit_code: Some(0),
            error: None,
            error_code: None,
        }))
        .await;
    assert_eq!(second.await.expect("second").0, StatusCode::OK);
    entry_once(&relay, "loud-2", "done").await;
    let metrics = runner_relay::metrics::Metrics::new();
    let log = CapturedLog::default();
    let _logging = log.install();
    let shrink = |max_bytes: u64| {
        let (relay, metrics) = (relay.clone(), metrics.clone());
        async move {
            runner_relay::routing::shrink_journal(relay.store.as_ref(), &metrics, max_bytes)
                .await
                .expect("shrunk")
        }
    };
    let shrunk = shrink(10 * 1024).await;
    assert_eq!(shrunk.pruned, 1, "the older call went");
    let (status, _) = relay.get("/invocations/loud-1").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    entry_once(&relay, "loud-2", "done").await;
    let kept = shrunk.bytes;
    assert!(kept > 0 && kept <= 10 * 1024, "{shrunk:?}");
    let scraped = metrics.encode().expect("metrics on");
    assert!(
        scraped.contains(&format!("runner_relay_journal_bytes {kept}\n")),
        "{scraped}"
    );
    assert!(
        scraped.contains("runner_relay_journal_max_bytes 10240\n"),
        "{scraped}"
    );

    // Near the cap (80 % and more): one warning per check, nothing pruned;
    // well under it, no warning.
    let near = shrink(kept * 100 / 80).await;
    assert_eq!((near.pruned, near.near_cap()), (0, true), "{near:?}");
    assert_eq!(log.count(NEAR_CAP_WARNING), 1, "{}", log.text());
    let warning = log.line(NEAR_CAP_WARNING).expect("the warning");
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains(&format!("bytes={kept}")), "{warning}");
    let under = shrink(kept * 2).await;
    assert_eq!((under.pruned, under.near_cap()), (0, false), "{under:?}");
    assert_eq!(log.count(NEAR_CAP_WARNING), 1, "{}", log.text());
    let scraped = metrics.encode().expect("metrics on");
    assert!(
        scraped.contains(&format!("runner_relay_journal_max_bytes {}\n", kept * 2)),
        "{scraped}"
    );
    entry_once(&relay, "loud-2", "done").await;
}

/// What the relay logs when the journal nears its cap.
const NEAR_CAP_WARNING: &str = "the call journal is near its size cap";

/// The relay's log lines on this test's thread (a `#[tokio::test]` runs
/// everything it awaits there), as the relay writes them.
#[derive(Clone, Default)]
struct CapturedLog(Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLog {
    fn install(&self) -> tracing::dispatcher::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn count(&self, needle: &str) -> usize {
        self.text()
            .lines()
            .filter(|line| line.contains(needle))
            .count()
    }

    fn line(&self, needle: &str) -> Option<String> {
        self.text()
            .lines()
            .find(|line| line.contains(needle))
            .map(str::to_owned)
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
