//! What differs between the databases the store runs on: the sqlx driver,
//! the few facts the shared queries need, and the batched writes that are
//! one statement over arrays on PostgreSQL and something else on SQLite.
//! Everything else is written once, in [`super::sql_store`].

use async_trait::async_trait;
use sqlx::{Database, Encode, Pool, Type};
use time::OffsetDateTime;

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
