//! The PostgreSQL backend of the store, for several relays sharing one
//! database. Every statement is a network round trip, so each batched
//! write is one statement over arrays (`UNNEST`) however large the batch.

use std::collections::HashSet;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgArguments, PgListener, PgPool, PgPoolOptions, PgQueryResult, Postgres};
use sqlx::query::Query;
use time::OffsetDateTime;

use super::backend::{Backend, Writer};
use super::changes::{self, Change, ChangeListener, Heard};
use super::journal_sql;
use super::rows::{epoch_to_db, json_text, result_text, state_text};
use super::sql_store::SqlStore;
use super::{InvocationRecord, JournalWrite, LeaseRefresh, SeenRecord, StoreError};

/// How long a query waits for a free pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to open one connection to the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections in the pool of one relay.
const MAX_CONNECTIONS: u32 = 16;

/// The store on a PostgreSQL database.
pub type PostgresStore = SqlStore<PostgresBackend>;

/// PostgreSQL's part of [`PostgresStore`].
#[derive(Debug, Clone, Default)]
pub struct PostgresBackend;

impl PostgresStore {
    /// Connects and runs migrations (under the migrator's advisory lock, so
    /// relays starting together migrate once).
    pub async fn open(database_url: &str) -> Result<Self, StoreError> {
        let pool = tokio::time::timeout(
            CONNECT_TIMEOUT,
            PgPoolOptions::new()
                .max_connections(MAX_CONNECTIONS)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect(database_url),
        )
        .await
        .map_err(|_elapsed| StoreError::Database(sqlx::Error::PoolTimedOut))??;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(SqlStore {
            pool,
            backend: PostgresBackend,
        })
    }
}

/// The change feed's listening connection.
struct PostgresChanges {
    listener: PgListener,
}

#[async_trait]
impl ChangeListener for PostgresChanges {
    async fn next(&mut self) -> Heard {
        // `try_recv` answers `None` once when the connection was lost, after
        // it has connected and listened again: what changed in the gap is
        // unknown, which the caller must assume is anything.
        match self.listener.try_recv().await {
            Ok(Some(notification)) => match Change::parse(notification.payload()) {
                Some(change) => Heard::Change(change),
                None => Heard::Unknown,
            },
            Ok(None) => Heard::Lost,
            Err(error) => {
                tracing::warn!(%error, "the change feed's connection failed");
                Heard::Failed
            }
        }
    }
}

/// Sets `last_seen` and `runner` of the environments in `seen`, one
/// statement for all.
async fn update_seen<'a>(
    pool: &PgPool,
    seen: impl Iterator<Item = (&'a str, OffsetDateTime, &'a runner_proto::api::RunnerInfo)>,
) -> Result<(), StoreError> {
    let mut ids = Vec::new();
    let mut at = Vec::new();
    let mut runners = Vec::new();
    for (id, when, runner) in seen {
        ids.push(id);
        at.push(when.unix_timestamp());
        runners.push(json_text("environments", runner)?);
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE environments AS e SET last_seen = input.at, runner = input.runner \
         FROM UNNEST($1::text[], $2::bigint[], $3::text[]) AS input(id, at, runner) \
         WHERE e.id = input.id",
    )
    .bind(&ids)
    .bind(&at)
    .bind(&runners)
    .execute(pool)
    .await?;
    Ok(())
}

#[async_trait]
impl Backend for PostgresBackend {
    type Db = Postgres;

    const SHARED: bool = true;
    const INSERTION_ORDER: &'static str = "seq";
    const POSITIONAL_PARAMETERS: bool = false;

    async fn listen_for_changes(
        pool: &PgPool,
    ) -> Result<Option<Box<dyn ChangeListener>>, StoreError> {
        // Connecting and `LISTEN` together, bounded like any connect.
        let listening = async {
            let mut listener = PgListener::connect_with(pool).await?;
            listener.listen(changes::CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let listener = tokio::time::timeout(CONNECT_TIMEOUT, listening)
            .await
            .map_err(|_elapsed| StoreError::Database(sqlx::Error::PoolTimedOut))??;
        Ok(Some(Box::new(PostgresChanges { listener })))
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    async fn record_seen_batch(
        &self,
        pool: &PgPool,
        seen: &[SeenRecord],
    ) -> Result<(), StoreError> {
        let seen = seen
            .iter()
            .map(|r| (r.environment_id.as_str(), r.at, &r.runner));
        update_seen(pool, seen).await
    }

    async fn refresh_sessions(
        &self,
        pool: &PgPool,
        holder: &str,
        sessions: &[LeaseRefresh],
        at: OffsetDateTime,
    ) -> Result<Vec<String>, StoreError> {
        let ids: Vec<&str> = sessions.iter().map(|s| s.environment_id.as_str()).collect();
        let epochs: Vec<i64> = sessions.iter().map(|s| epoch_to_db(s.epoch)).collect();
        let heartbeats: Vec<&str> = sessions.iter().map(|s| s.heartbeat.as_str()).collect();
        let presences: Vec<Option<&str>> = sessions.iter().map(|s| s.presence.as_deref()).collect();
        let kept: Vec<String> = sqlx::query_scalar(
            "UPDATE runner_sessions AS s SET refreshed_at = $1, heartbeat = input.heartbeat, \
             presence = COALESCE(input.presence, s.presence) \
             FROM UNNEST($2::text[], $3::bigint[], $4::text[], $5::text[]) \
             AS input(environment_id, epoch, heartbeat, presence) \
             WHERE s.environment_id = input.environment_id AND s.epoch = input.epoch \
             AND s.holder = $6 \
             RETURNING s.environment_id",
        )
        .bind(at.unix_timestamp())
        .bind(&ids)
        .bind(&epochs)
        .bind(&heartbeats)
        .bind(&presences)
        .bind(holder)
        .fetch_all(pool)
        .await?;
        let seen = sessions.iter().filter_map(|session| {
            let (when, runner) = session.seen.as_ref()?;
            Some((session.environment_id.as_str(), *when, runner))
        });
        update_seen(pool, seen).await?;
        let kept: HashSet<String> = kept.into_iter().collect();
        Ok(ids
            .into_iter()
            .filter(|id| !kept.contains(*id))
            .map(str::to_owned)
            .collect())
    }

    async fn writer<'a>(&'a self, pool: &PgPool) -> Result<Writer<'a, Postgres>, StoreError> {
        // Shared by several relays: no cache of this process's to keep.
        Writer::pooled(pool).await
    }

    async fn write_journal(
        &self,
        pool: &PgPool,
        writes: &[JournalWrite],
    ) -> Result<(), StoreError> {
        // Two statements over arrays (creating and update-only entries), so
        // a batch costs two round trips however large it is. The batch
        // writer folds each call into one write: no call_id twice.
        let mut columns: [Columns; 2] = Default::default();
        for write in writes {
            columns[usize::from(write.create)].push(&write.entry)?;
        }
        let [update, create] = columns;
        let input = "UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], \
             $6::bigint[], $7::bigint[], $8::text[], $9::int4[], $10::text[], $11::text[]) \
             AS input(call_id, environment_id, tool_name, state, epoch, created_at, finished_at, \
             result, exit_code, error, error_code)";
        let create = (!create.is_empty()).then(|| {
            let statement = journal_sql::insert(&format!("SELECT * FROM {input}"));
            (statement, create)
        });
        let update = (!update.is_empty()).then(|| (journal_sql::update(input), update));
        match (create, update) {
            // One statement is atomic on its own: no BEGIN and COMMIT, two
            // round trips fewer (a batch is usually of one kind).
            (Some((statement, columns)), None) | (None, Some((statement, columns))) => {
                columns.bind(sqlx::query(&statement)).execute(pool).await?;
            }
            (Some((create_sql, create)), Some((update_sql, update))) => {
                let mut tx = pool.begin().await?;
                create
                    .bind(sqlx::query(&create_sql))
                    .execute(&mut *tx)
                    .await?;
                update
                    .bind(sqlx::query(&update_sql))
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            }
            (None, None) => {}
        }
        Ok(())
    }
}

/// Journal writes as column arrays, for one `UNNEST` statement, in the
/// order of [`InvocationRow::COLUMNS`](super::rows::InvocationRow::COLUMNS).
#[derive(Default)]
struct Columns<'a> {
    call_id: Vec<&'a str>,
    environment_id: Vec<&'a str>,
    tool_name: Vec<&'a str>,
    state: Vec<&'static str>,
    epoch: Vec<Option<i64>>,
    created_at: Vec<i64>,
    finished_at: Vec<Option<i64>>,
    result: Vec<Option<String>>,
    exit_code: Vec<Option<i32>>,
    error: Vec<Option<&'a str>>,
    error_code: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    fn is_empty(&self) -> bool {
        self.call_id.is_empty()
    }

    fn push(&mut self, entry: &'a InvocationRecord) -> Result<(), StoreError> {
        self.call_id.push(&entry.call_id);
        self.environment_id.push(&entry.environment_id);
        self.tool_name.push(&entry.tool_name);
        self.state.push(state_text(entry.state));
        self.epoch.push(entry.epoch.map(epoch_to_db));
        self.created_at.push(entry.created_at.unix_timestamp());
        self.finished_at
            .push(entry.finished_at.map(OffsetDateTime::unix_timestamp));
        self.result.push(result_text(entry)?);
        self.exit_code.push(entry.exit_code);
        self.error.push(entry.error.as_deref());
        self.error_code.push(entry.error_code.as_deref());
        Ok(())
    }

    fn bind<'q>(self, query: Query<'q, Postgres, PgArguments>) -> Query<'q, Postgres, PgArguments>
    where
        'a: 'q,
    {
        query
            .bind(self.call_id)
            .bind(self.environment_id)
            .bind(self.tool_name)
            .bind(self.state)
            .bind(self.epoch)
            .bind(self.created_at)
            .bind(self.finished_at)
            .bind(self.result)
            .bind(self.exit_code)
            .bind(self.error)
            .bind(self.error_code)
    }
}
