//! What differs between the databases the store runs on: the sqlx driver,
//! the few facts the shared queries need, and the batched writes that are
//! one statement over arrays on PostgreSQL and something else on SQLite.
//! Everything else is written once, in [`super::sql_store`].

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::{Database, Encode, Pool, Type};
use time::OffsetDateTime;

use super::rows::AuditRowValues;
use super::{JournalWrite, LeaseRefresh, SeenRecord, StoreError};

/// A database the shared store runs on (SQLite or PostgreSQL), with any
/// state of its own (the SQLite journal's connection).
#[async_trait]
pub trait Backend: std::fmt::Debug + Send + Sync + 'static {
    /// The sqlx driver.
    type Db: Database;

    /// Whether other relay processes change the database too; see
    /// [`super::Store::shared`].
    const SHARED: bool;
    /// The column of `registration_tokens` that orders rows as inserted,
    /// for tokens made in the same second.
    const INSERTION_ORDER: &'static str;
    /// Whether a statement with thousands of parameters should number
    /// them by position (`?`, SQLite: a `$N` name is looked up for each
    /// parameter bound, quadratic in their number) rather than `$N`
    /// (PostgreSQL, which has no `?`).
    const POSITIONAL_PARAMETERS: bool;

    /// [`super::Store::listen_for_changes`].
    async fn listen_for_changes(
        pool: &Pool<Self::Db>,
    ) -> Result<Option<Box<dyn super::changes::ChangeListener>>, StoreError>;

    /// Rows a statement changed (sqlx has no trait for it).
    fn rows_affected(done: &<Self::Db as Database>::QueryResult) -> u64;

    /// [`super::Store::record_seen_batch`]: one statement for the batch.
    async fn record_seen_batch(
        &self,
        pool: &Pool<Self::Db>,
        seen: &[SeenRecord],
    ) -> Result<(), StoreError>;

    /// [`super::Store::refresh_sessions`].
    async fn refresh_sessions(
        &self,
        pool: &Pool<Self::Db>,
        holder: &str,
        sessions: &[LeaseRefresh],
        at: OffsetDateTime,
    ) -> Result<Vec<String>, StoreError>;

    /// The connection for a background writer's batch (the journal, the
    /// audit log): on SQLite the one connection those writers keep (see
    /// `sqlite.rs`), held until the [`Writer`] is dropped; elsewhere any
    /// connection of the pool.
    async fn writer<'a>(
        &'a self,
        pool: &Pool<Self::Db>,
    ) -> Result<Writer<'a, Self::Db>, StoreError>;

    /// Inserts an audit append's rows inside its open transaction on
    /// `connection`, when the backend has a way of its own (SQLite:
    /// `sqlite_audit_fast_path`); `Ok(false)` leaves them to the shared
    /// multi-row `INSERT`.
    async fn insert_audit_rows(
        &self,
        _connection: &mut <Self::Db as Database>::Connection,
        _rows: &[AuditRowValues<'_>],
    ) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// [`super::Store::write_journal`]: few statements however large the
    /// batch, each built by [`super::journal_sql`].
    async fn write_journal(
        &self,
        pool: &Pool<Self::Db>,
        writes: &[JournalWrite],
    ) -> Result<(), StoreError>;
}

/// A Rust type the shared queries both bind and read on database `DB`.
pub trait Column<DB: Database>:
    for<'q> Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB> + Type<DB> + Send
{
}

impl<DB: Database, T> Column<DB> for T where
    T: for<'q> Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB> + Type<DB> + Send
{
}

/// Where a kept writer connection waits between batches.
pub type KeptConnection<DB> = tokio::sync::Mutex<Option<PoolConnection<DB>>>;

/// A connection lent to one batch by [`Backend::writer`].
#[derive(Debug)]
pub struct Writer<'a, DB: Database> {
    /// Where the connection goes back to once [`Writer::keep`] is called
    /// (`None`: back to the pool when dropped).
    slot: Option<tokio::sync::MutexGuard<'a, Option<PoolConnection<DB>>>>,
    connection: PoolConnection<DB>,
}

impl<'a, DB: Database> Writer<'a, DB> {
    /// The kept connection (or a new one from `pool`), with its slot
    /// locked until this writer is dropped.
    pub async fn kept(kept: &'a KeptConnection<DB>, pool: &Pool<DB>) -> Result<Self, StoreError> {
        let mut slot = kept.lock().await;
        let connection = match slot.take() {
            Some(connection) => connection,
            None => pool.acquire().await?,
        };
        Ok(Self {
            slot: Some(slot),
            connection,
        })
    }

    /// Any connection of `pool`, not kept.
    pub async fn pooled(pool: &Pool<DB>) -> Result<Self, StoreError> {
        Ok(Self {
            slot: None,
            connection: pool.acquire().await?,
        })
    }

    pub fn connection(&mut self) -> &mut DB::Connection {
        &mut self.connection
    }

    /// After a successful batch: the connection waits for the next one.
    /// A writer dropped without it (a failed batch) gives its connection
    /// back to the pool, which closes it if broken, and the next batch
    /// takes another.
    pub fn keep(self) {
        if let Some(mut slot) = self.slot {
            *slot = Some(self.connection);
        }
    }
}
