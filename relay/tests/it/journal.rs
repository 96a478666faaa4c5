//! The call journal's batch write, against each real store: a batch of
//! one kind is one statement on its own, a batch of both kinds one
//! transaction, and either way rows only move forward, update-only steps
//! never create a row, and a step of another environment changes nothing.

use runner_proto::api::InvocationState;
use runner_relay::store::{self, InvocationRecord, JournalWrite, Store};
use serde_json::json;
use time::OffsetDateTime;

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
        },
        create,
    }
}

async fn state_of(store: &dyn Store, call_id: &str) -> Option<InvocationState> {
    store
        .invocation(call_id)
        .await
        .expect("read the journal")
        .map(|entry| entry.state)
}

async fn journal_writes_follow_the_rules(store: &dyn Store) {
    use InvocationState::{Dispatched, Done};

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
