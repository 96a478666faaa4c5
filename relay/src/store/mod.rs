//! Durable state: members, teams, API keys, environments and registration
//! tokens, behind one dyn-compatible [`Store`] trait so the backend is picked
//! at run time from the database URL (SQLite now, PostgreSQL later).
//!
//! Secrets are stored as hashes only. The store makes no time decisions:
//! callers pass the times they got from the [`crate::clock::Clock`].

mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use runner_proto::api::RunnerInfo;
use time::OffsetDateTime;

use crate::environment::EnvironmentRecord;

pub use sqlite::SqliteStore;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another environment already has this name.
    #[error("an environment named {0:?} already exists")]
    NameTaken(String),
    /// The row to change does not exist.
    #[error("not found")]
    NotFound,
    /// A team named in a request does not exist.
    #[error("unknown team {0:?}")]
    UnknownTeam(String),
    /// The database URL names a backend this build does not have.
    #[error("unsupported database URL {0:?}: expected sqlite://PATH")]
    UnsupportedUrl(String),
    /// A stored value could not be decoded.
    #[error("corrupt row in {table}: {message}")]
    Corrupt {
        table: &'static str,
        message: String,
    },
    /// Schema migration failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

/// An organisation member, as authenticated by an API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub name: String,
    /// Organisation admin: manages shared-scope environments.
    pub is_admin: bool,
    /// Names of the teams the member belongs to.
    pub teams: Vec<String>,
}

/// A member to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMember {
    pub name: String,
    pub is_admin: bool,
    pub teams: Vec<String>,
}

/// A registration token, minus its plaintext.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: String,
    pub environment_id: String,
    /// Hex SHA-256 of the plaintext.
    pub token_hash: String,
    /// `rnrt_…` + last 4 characters.
    pub hint: String,
    pub created_at: OffsetDateTime,
    pub last_used_at: Option<OffsetDateTime>,
    /// Set once a newer token replaced this one.
    pub valid_until: Option<OffsetDateTime>,
}

/// The relay's durable state. Object-safe: handlers hold an `Arc<dyn Store>`.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Whether the database answers (readiness probe).
    async fn ping(&self) -> Result<(), StoreError>;

    /// Number of members, to detect a fresh store at first start.
    async fn count_members(&self) -> Result<u64, StoreError>;
    /// Creates a team; creating an existing one is a no-op.
    async fn create_team(&self, name: &str, at: OffsetDateTime) -> Result<(), StoreError>;
    /// Creates a member with one API key (given as hash and hint).
    /// Fails with [`StoreError::UnknownTeam`] if a team does not exist.
    async fn create_member(
        &self,
        member: &NewMember,
        key_hash: &str,
        key_hint: &str,
        at: OffsetDateTime,
    ) -> Result<Member, StoreError>;
    /// The member owning the API key with this hash, and the stored hash
    /// (for the caller's constant-time comparison).
    async fn member_by_key_hash(
        &self,
        key_hash: &str,
    ) -> Result<Option<(Member, String)>, StoreError>;

    /// Inserts an environment; [`StoreError::NameTaken`] on a name clash.
    async fn insert_environment(&self, environment: &EnvironmentRecord) -> Result<(), StoreError>;
    /// One environment by id.
    async fn environment(&self, id: &str) -> Result<Option<EnvironmentRecord>, StoreError>;
    /// One environment by (non-blank) name.
    async fn environment_by_name(
        &self,
        name: &str,
    ) -> Result<Option<EnvironmentRecord>, StoreError>;
    /// Every environment, oldest first.
    async fn list_environments(&self) -> Result<Vec<EnvironmentRecord>, StoreError>;
    /// Replaces the user-editable fields (name, description, type, tags,
    /// tier, browser tools, policy) of an existing environment.
    async fn update_environment(&self, environment: &EnvironmentRecord) -> Result<(), StoreError>;
    /// Deletes an environment and its tokens; false if it did not exist.
    async fn delete_environment(&self, id: &str) -> Result<bool, StoreError>;
    /// If the environment's name is blank, sets it to `name`, or to
    /// `fallback` when `name` is taken. Returns the name it has afterwards.
    async fn fill_blank_name(
        &self,
        id: &str,
        name: &str,
        fallback: &str,
    ) -> Result<String, StoreError>;
    /// Records a hello or heartbeat: last seen time and runner facts.
    async fn record_seen(
        &self,
        id: &str,
        at: OffsetDateTime,
        runner: &RunnerInfo,
    ) -> Result<(), StoreError>;

    /// Adds a new token to an environment; every older token still valid
    /// after `previous_valid_until` now stops then. Returns whether there was
    /// an older token.
    async fn rotate_token(
        &self,
        token: &TokenRecord,
        previous_valid_until: OffsetDateTime,
    ) -> Result<bool, StoreError>;
    /// The token with this hash, whatever its state.
    async fn token_by_hash(&self, token_hash: &str) -> Result<Option<TokenRecord>, StoreError>;
    /// Records a successful use of a token.
    async fn touch_token(&self, id: &str, at: OffsetDateTime) -> Result<(), StoreError>;
    /// Deletes every token of an environment; returns how many.
    async fn revoke_tokens(&self, environment_id: &str) -> Result<u64, StoreError>;
    /// The newest token of an environment that was not replaced.
    async fn current_token(&self, environment_id: &str) -> Result<Option<TokenRecord>, StoreError>;
}

/// Opens the store a database URL names and brings its schema up to date.
pub async fn open(database_url: &str) -> Result<Arc<dyn Store>, StoreError> {
    if database_url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::open(database_url).await?))
    } else {
        Err(StoreError::UnsupportedUrl(database_url.to_owned()))
    }
}
