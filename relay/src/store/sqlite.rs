//! The SQLite backend of the store: one file, WAL mode so that
//! `runner-relay admin` can write while the server runs. One relay owns
//! the file, so the batched writes need no arrays: the lease refresh is a
//! transaction of small updates, and the journal and the audit log write
//! through one connection they keep (see
//! [`sqlite_journal`](super::sqlite_journal)).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteQueryResult, SqliteSynchronous,
};
use sqlx::Sqlite;
use time::OffsetDateTime;

use super::backend::{Backend, KeptConnection, Writer};
use super::rows::{epoch_to_db, json_text, AuditRowValues};
use super::sql_store::SqlStore;
use super::sqlite_audit_fast_path as audit_fast_path;
use super::sqlite_journal as journal;
use super::{JournalWrite, LeaseRefresh, SeenRecord, StoreError};

/// How long a writer waits for another one (the server, an admin command)
/// to finish before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections in the pool; SQLite serialises writers anyway.
const MAX_CONNECTIONS: u32 = 8;

/// The store on a SQLite file.
pub type SqliteStore = SqlStore<SqliteBackend>;

/// SQLite's part of [`SqliteStore`].
#[derive(Debug, Clone, Default)]
pub struct SqliteBackend {
    /// The background writers' own connection (the journal's and the
    /// audit log's batches), kept between batches. A pool hands out its
    /// idle connections in turn, and a SQLite connection that finds the
    /// file changed by another one since its last use drops its whole
    /// page cache and reads the pages again: the journal writes on every
    /// call and the audit log on every batch, so both write through one
    /// connection, which keeps its cache.
    writer: Arc<KeptConnection<Sqlite>>,
    /// The audit log's rows go through the multi-row `INSERT` that
    /// PostgreSQL uses, not `sqlite_audit_fast_path`: a build without the
    /// `sqlite-audit-fast-path` feature, and the test that holds the two
    /// to the same rows.
    without_audit_fast_path: bool,
}

/// Creates a missing database file readable by its owner only: it holds
/// call results (command output, file contents) and member names. SQLite
/// gives the `-wal` and `-shm` files the database file's mode. An existing
/// file keeps the mode its operator gave it; `:memory:` has no file.
fn create_private(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.as_os_str().is_empty() || path == std::path::Path::new(":memory:") {
        return Ok(());
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database and runs migrations.
    pub async fn open(database_url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(database_url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL: a commit does not wait for an fsync (every
            // call writes the journal); the database stays consistent on a
            // crash, and an OS crash can lose only the last moments of
            // heartbeats and journal entries.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        create_private(options.get_filename()).map_err(|error| {
            StoreError::Database(sqlx::Error::Configuration(
                format!("creating {}: {error}", options.get_filename().display()).into(),
            ))
        })?;
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            // A local file cannot drop a connection the way a server can;
            // the default check costs a round trip to the connection's
            // thread on every query.
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(SqlStore {
            pool,
            backend: SqliteBackend {
                without_audit_fast_path: !cfg!(feature = "sqlite-audit-fast-path"),
                ..SqliteBackend::default()
            },
        })
    }

    /// This store with the audit log's rows written through sqlx's
    /// multi-row `INSERT` instead of `sqlite_audit_fast_path`.
    #[cfg(test)]
    pub fn without_audit_fast_path(mut self) -> Self {
        self.backend.without_audit_fast_path = true;
        self
    }
}

#[async_trait]
impl Backend for SqliteBackend {
    type Db = Sqlite;

    // One relay per file; `runner-relay admin` only adds members.
    const SHARED: bool = false;
    const INSERTION_ORDER: &'static str = "rowid";
    const POSITIONAL_PARAMETERS: bool = true;

    async fn listen_for_changes(
        _pool: &sqlx::SqlitePool,
    ) -> Result<Option<Box<dyn super::changes::ChangeListener>>, StoreError> {
        // One relay owns the file: nobody else changes it.
        Ok(None)
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    async fn record_seen_batch(
        &self,
        pool: &SqlitePool,
        seen: &[SeenRecord],
    ) -> Result<(), StoreError> {
        // One statement for the whole batch (rows as a JSON array).
        let rows = seen
            .iter()
            .map(|record| {
                Ok(serde_json::json!([
                    record.environment_id,
                    record.at.unix_timestamp(),
                    json_text("environments", &record.runner)?
                ]))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        sqlx::query(
            "UPDATE environments SET last_seen = input.at, runner = input.runner \
             FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS at, \
             json_extract(value, '$[2]') AS runner FROM json_each($1)) AS input \
             WHERE environments.id = input.id",
        )
        .bind(serde_json::Value::Array(rows).to_string())
        .execute(pool)
        .await?;
        Ok(())
    }

    async fn refresh_sessions(
        &self,
        pool: &SqlitePool,
        holder: &str,
        sessions: &[LeaseRefresh],
        at: OffsetDateTime,
    ) -> Result<Vec<String>, StoreError> {
        // Statements on a local file cost no network round trip: one small
        // update a session, in one transaction.
        let mut lost = Vec::new();
        let mut tx = pool.begin().await?;
        for session in sessions {
            let done = sqlx::query(
                "UPDATE runner_sessions SET refreshed_at = $1, heartbeat = $2, \
                 presence = COALESCE($3, presence) \
                 WHERE environment_id = $4 AND epoch = $5 AND holder = $6",
            )
            .bind(at.unix_timestamp())
            .bind(session.heartbeat.as_str())
            .bind(session.presence.as_deref())
            .bind(session.environment_id.as_str())
            .bind(epoch_to_db(session.epoch))
            .bind(holder)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                lost.push(session.environment_id.clone());
            }
            if let Some((seen, runner)) = &session.seen {
                sqlx::query("UPDATE environments SET last_seen = $1, runner = $2 WHERE id = $3")
                    .bind(seen.unix_timestamp())
                    .bind(json_text("environments", runner)?)
                    .bind(session.environment_id.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(lost)
    }

    async fn writer<'a>(&'a self, pool: &SqlitePool) -> Result<Writer<'a, Sqlite>, StoreError> {
        Writer::kept(&self.writer, pool).await
    }

    async fn insert_audit_rows(
        &self,
        connection: &mut SqliteConnection,
        rows: &[AuditRowValues<'_>],
    ) -> Result<bool, StoreError> {
        if self.without_audit_fast_path {
            return Ok(false);
        }
        // sqlx's connection thread waits while the handle is locked.
        let mut handle = connection.lock_handle().await?;
        let db = handle.as_raw_handle();
        let insert = || audit_fast_path::insert(db, rows);
        // SQLite's work runs on this task's thread: on a multi-threaded
        // runtime the thread's other tasks move elsewhere meanwhile.
        match tokio::runtime::Handle::current().runtime_flavor() {
            tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(insert)?,
            _ => insert()?,
        }
        Ok(true)
    }

    async fn write_journal(
        &self,
        pool: &SqlitePool,
        writes: &[JournalWrite],
    ) -> Result<(), StoreError> {
        // One statement per kind of write up to a large batch: every
        // statement is a round trip to the connection's thread.
        let mut create = Vec::new();
        let mut update = Vec::new();
        for write in writes {
            let row = journal::Row::new(&write.entry)?;
            if write.create {
                create.push(row);
            } else {
                update.push(row);
            }
        }
        let statements: Vec<_> = journal::queries(journal::Kind::Create, &create)
            .chain(journal::queries(journal::Kind::Update, &update))
            .collect();
        let mut writer = self.writer(pool).await?;
        let connection = writer.connection();
        let written: Result<(), sqlx::Error> = async {
            if statements.len() == 1 {
                // One statement is atomic on its own: no BEGIN and COMMIT,
                // two round trips fewer (a batch is usually of one kind).
                for statement in statements {
                    statement.execute(&mut *connection).await?;
                }
            } else {
                let mut tx = sqlx::Connection::begin(&mut *connection).await?;
                for statement in statements {
                    statement.execute(&mut *tx).await?;
                }
                tx.commit().await?;
            }
            Ok(())
        }
        .await;
        if written.is_ok() {
            writer.keep();
        }
        Ok(written?)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::store::{sqlite_journal, InvocationRecord, Store};

    /// A new store in `dir`, as `relay.db`.
    async fn store_in(dir: &tempfile::TempDir) -> (SqliteStore, std::path::PathBuf) {
        let path = dir.path().join("relay.db");
        let store = SqliteStore::open(&format!("sqlite://{}", path.display()))
            .await
            .expect("open");
        (store, path)
    }

    /// The database holds call results: a new one, and the WAL that
    /// SQLite makes beside it, are the owner's alone.
    #[tokio::test]
    async fn a_new_database_is_readable_by_its_owner_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, path) = store_in(&dir).await;
        store
            .create_team("ops", OffsetDateTime::now_utc())
            .await
            .expect("a write, so that the WAL exists");
        for file in [path.clone(), dir.path().join("relay.db-wal")] {
            let mode = std::fs::metadata(&file)
                .expect("database file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{}", file.display());
        }
    }

    fn dispatched(call_id: &str) -> JournalWrite {
        JournalWrite {
            entry: InvocationRecord {
                call_id: call_id.to_owned(),
                environment_id: "env_journal".to_owned(),
                tool_name: "ping".to_owned(),
                state: runner_proto::api::InvocationState::Dispatched,
                epoch: Some(1),
                created_at: OffsetDateTime::now_utc(),
                finished_at: None,
                result: serde_json::Value::Null,
                exit_code: None,
                error: None,
                error_code: None,
            },
            create: true,
        }
    }

    /// The journal keeps one connection (and so its page cache) from batch
    /// to batch, and lets go of it when a write fails.
    #[tokio::test]
    async fn the_journal_keeps_its_connection_until_a_write_fails() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = store_in(&dir).await;
        store
            .write_journal(&[dispatched("a")])
            .await
            .expect("first batch");
        assert!(
            store.backend.writer.lock().await.is_some(),
            "kept after a success"
        );

        sqlx::query(
            "CREATE TRIGGER refuse BEFORE INSERT ON invocations \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        )
        .execute(&store.pool)
        .await
        .expect("trigger");
        let failed = store.write_journal(&[dispatched("b")]).await;
        assert!(failed.is_err(), "the trigger refuses the insert");
        assert!(
            store.backend.writer.lock().await.is_none(),
            "given back after a failure"
        );

        sqlx::query("DROP TRIGGER refuse")
            .execute(&store.pool)
            .await
            .expect("drop trigger");
        store
            .write_journal(&[dispatched("c")])
            .await
            .expect("a batch after the failure");
        assert!(store.backend.writer.lock().await.is_some());
        for (call_id, kept) in [("a", true), ("b", false), ("c", true)] {
            let found = store.invocation(call_id).await.expect("read").is_some();
            assert_eq!(found, kept, "{call_id}");
        }
    }

    /// The audit log appends through the journal's kept connection.
    #[tokio::test]
    async fn audit_appends_keep_the_writers_connection() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = store_in(&dir).await;
        assert!(store.backend.writer.lock().await.is_none(), "none yet");
        let record = crate::audit::AuditRecord::new(
            OffsetDateTime::now_utc(),
            runner_proto::audit::AuditActor::default(),
            runner_proto::audit::AuditAction::ToolInvoke,
        );
        store.append_audit(&[record.view()]).await.expect("append");
        assert!(
            store.backend.writer.lock().await.is_some(),
            "kept after an append"
        );
        assert_eq!(store.audit_head().await.expect("head").seq, 1);
    }

    /// Audit records of every shape: fields absent and present, text
    /// that JSON and SQL quote, and more than one statement's rows.
    /// What the store appends: the records' borrowed views.
    fn views(records: &[crate::audit::AuditRecord]) -> Vec<crate::audit::AuditView<'_>> {
        records
            .iter()
            .map(crate::audit::AuditRecord::view)
            .collect()
    }

    fn audit_batch(count: usize) -> Vec<crate::audit::AuditRecord> {
        use runner_proto::audit::{AuditAction, AuditActor, AuditDecision};
        (0..count)
            .map(|i| {
                let actor = AuditActor {
                    member_id: (i % 3 != 0).then(|| format!("mem-{}", i % 5)),
                    name: Some(format!("a name with 'quotes' \"and\" é {i}")),
                    kind: Some("agent".to_owned()),
                    key_id: (i % 2 == 0).then(|| "0123456789ab".to_owned()),
                    client: Some("curl/8.0".to_owned()),
                    source: Some("127.0.0.1".to_owned()),
                };
                let mut record = crate::audit::AuditRecord::new(
                    OffsetDateTime::from_unix_timestamp(1_700_000_000 + i as i64).expect("time"),
                    actor,
                    if i % 7 == 0 {
                        AuditAction::MemberUpdate
                    } else {
                        AuditAction::ToolInvoke
                    },
                )
                .environment(&format!("env-{}", i % 4));
                if i % 2 == 1 {
                    record = record.session("ses-1");
                }
                if i % 5 == 0 {
                    record = record.decided(AuditDecision::Denied, "tool_not_allowed");
                }
                record.tool = (i % 7 != 0).then(|| "shell".to_owned());
                record.call_id = Some(format!("call-{i}"));
                record.args_digest = Some("ab".repeat(32));
                record.args =
                    (i % 3 == 0).then(|| "{\"command\":\"echo 'hi'; \\\"x\\\"\"}".to_owned());
                record.exit_code = (i % 4 == 0).then_some(i32::try_from(i).unwrap_or(0) - 2);
                record.duration_ms = Some(i as u64 * 3);
                record.bytes_out = (i % 2 == 0).then_some(i as u64 * 1000);
                record
            })
            .collect()
    }

    /// Every column of every audit row, as text, in order.
    async fn audit_rows(store: &SqliteStore) -> Vec<Vec<Option<String>>> {
        use sqlx::Row;
        let rows = sqlx::query(
            "SELECT seq, at_ms, action, actor_id, actor_name, actor_kind, key_id, client, \
             source, environment_id, session_id, tool, call_id, target, args_digest, args, \
             decision, code, exit_code, duration_ms, bytes_out, prev_hash, hash, entry \
             FROM audit_log ORDER BY seq",
        )
        .fetch_all(&store.pool)
        .await
        .expect("read the audit log");
        rows.iter()
            .map(|row| {
                (0..row.len())
                    .map(|column| {
                        row.try_get::<Option<String>, _>(column)
                            .or_else(|_| {
                                row.try_get::<Option<i64>, _>(column)
                                    .map(|number| number.map(|n| format!("#{n}")))
                            })
                            .expect("text or integer")
                    })
                    .collect()
            })
            .collect()
    }

    /// The audit log's append through SQLite's own calls writes the rows
    /// the multi-row `INSERT` through sqlx writes, column for column, and
    /// they verify as one chain.
    #[tokio::test]
    async fn the_audit_fast_path_writes_the_rows_the_simple_path_writes() {
        let (fast_dir, simple_dir) = (
            tempfile::tempdir().expect("tempdir"),
            tempfile::tempdir().expect("tempdir"),
        );
        let (fast, _) = store_in(&fast_dir).await;
        let (simple, _) = store_in(&simple_dir).await;
        let simple = simple.without_audit_fast_path();
        let records = audit_batch(200);
        let views = views(&records);
        // Batches of one, of less than a statement, of several statements
        // and a remainder.
        for batch in [&views[..1], &views[1..40], &views[40..]] {
            fast.append_audit(batch).await.expect("fast append");
            simple.append_audit(batch).await.expect("simple append");
        }
        let (fast_rows, simple_rows) = (audit_rows(&fast).await, audit_rows(&simple).await);
        assert_eq!(fast_rows.len(), 200);
        assert_eq!(fast_rows, simple_rows);
        let query = crate::audit::AuditQuery {
            limit: 1000,
            ..Default::default()
        };
        let entries = fast.audit_entries(&query).await.expect("entries");
        let read: Vec<_> = entries.iter().map(|entry| entry.record.clone()).collect();
        assert_eq!(read, records, "every field read back");
        assert!(entries.iter().all(crate::audit::chain::intact));
    }

    /// A row SQLite refuses fails the whole append with SQLite's reason,
    /// and leaves nothing of it: the chain's head and rows stay as they
    /// were, so the writer keeps the entries queued for the next try.
    #[tokio::test]
    async fn a_refused_audit_row_fails_the_append_and_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = store_in(&dir).await;
        let records = audit_batch(100);
        let views = views(&records);
        store.append_audit(&views[..10]).await.expect("append");
        // A row where the next append's 80th row goes (an edit the chain
        // would not know of).
        sqlx::query(
            "INSERT INTO audit_log (seq, at_ms, action, decision, prev_hash, hash) \
             VALUES (90, 0, 'tool.invoke', 'allowed', 'x', 'y')",
        )
        .execute(&store.pool)
        .await
        .expect("insert");
        let error = store
            .append_audit(&views[10..])
            .await
            .expect_err("a taken sequence number");
        assert!(
            error.to_string().contains("UNIQUE constraint failed"),
            "{error}"
        );
        assert_eq!(store.audit_head().await.expect("head").seq, 10);
        let rows = audit_rows(&store).await;
        assert_eq!(rows.len(), 11, "the ten rows and the inserted one");
    }

    /// While the store is behind, recording a journal step waits for room
    /// in the queue instead of piling steps up in memory, and every step
    /// still lands once the store catches up.
    #[tokio::test]
    async fn a_full_journal_queue_makes_the_recorder_wait_and_loses_nothing() {
        use crate::routing::JournalWriter;
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = store_in(&dir).await;
        let store = Arc::new(store);
        let writer = JournalWriter::with_queue(store.clone(), 2);
        // The writer's batch waits on the journal's connection.
        let held = store.backend.writer.lock().await;
        writer.record(dispatched("a")).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        writer.record(dispatched("b")).await;
        writer.record(dispatched("c")).await;
        let waited =
            tokio::time::timeout(Duration::from_millis(300), writer.record(dispatched("d"))).await;
        assert!(waited.is_err(), "a full queue makes the recorder wait");

        drop(held);
        tokio::time::timeout(Duration::from_secs(10), writer.record(dispatched("d")))
            .await
            .expect("room again once the store catches up");
        writer.flush().await;
        for call_id in ["a", "b", "c", "d"] {
            let found = store.invocation(call_id).await.expect("read");
            assert!(found.is_some(), "{call_id} landed");
        }
    }

    /// A flush does not wait out the writer's linger: `GET
    /// /invocations/{id}` flushes first, and answers at once.
    #[tokio::test]
    async fn a_journal_flush_cuts_the_linger_short() {
        use crate::routing::JournalWriter;
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = store_in(&dir).await;
        let store = Arc::new(store);
        // Longer than the flush's own bound (10 s), after which it gives
        // up without the row: only a linger cut short passes.
        let writer =
            JournalWriter::with_queue(store.clone(), 16).with_linger(Duration::from_secs(60));
        writer.record(dispatched("lingering")).await;
        // The writer takes the step and lingers (a flush queued with the
        // step would skip the linger anyway).
        tokio::time::sleep(Duration::from_millis(50)).await;
        tokio::time::timeout(Duration::from_secs(5), writer.flush())
            .await
            .expect("the flush ends the linger");
        let found = store.invocation("lingering").await.expect("read");
        assert!(found.is_some(), "the lingering step was written");
    }

    async fn count(store: &SqliteStore, filter: &str) -> i64 {
        sqlx::query_scalar(&format!("SELECT count(*) FROM invocations WHERE {filter}"))
            .fetch_one(&store.pool)
            .await
            .expect("count")
    }

    /// A batch is written through the statement for the next power of two
    /// rows, padded with NULL rows: every real row lands, no padding row
    /// does, and a batch larger than one statement is one transaction.
    #[tokio::test]
    async fn journal_batches_of_any_size_write_their_rows_and_no_padding() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = store_in(&dir).await;
        // 3 rows: the 4-row statement with one padding row.
        let three: Vec<_> = (0..3).map(|i| dispatched(&format!("s{i}"))).collect();
        store.write_journal(&three).await.expect("three rows");
        assert_eq!(count(&store, "true").await, 3);

        // More than one statement holds, both kinds: several statements
        // in one transaction.
        let rows = sqlite_journal::MAX_ROWS + 1;
        let mut batch: Vec<_> = (0..rows).map(|i| dispatched(&format!("l{i}"))).collect();
        for i in 0..3 {
            let mut done = dispatched(&format!("s{i}"));
            done.entry.state = runner_proto::api::InvocationState::Done;
            done.entry.result = serde_json::json!({ "n": i });
            done.entry.exit_code = Some(i);
            done.create = false;
            batch.push(done);
        }
        store.write_journal(&batch).await.expect("a large batch");
        assert_eq!(count(&store, "true").await, 3 + rows as i64);
        assert_eq!(count(&store, "call_id IS NULL").await, 0, "no padding row");
        assert_eq!(count(&store, "state = 'done'").await, 3);
        let done = store.invocation("s2").await.expect("read").expect("row");
        assert_eq!(done.result, serde_json::json!({ "n": 2 }));
        assert_eq!(done.exit_code, Some(2));
        let last = format!("l{}", rows - 1);
        let last = store.invocation(&last).await.expect("read").expect("row");
        assert_eq!(last.tool_name, "ping");
        assert_eq!(last.epoch, Some(1));
    }
}
