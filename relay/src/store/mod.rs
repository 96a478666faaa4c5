//! Durable state: members, teams, API keys, environments, registration
//! tokens, runner sessions and the call journal, behind one dyn-compatible
//! [`Store`] trait so the backend is picked at run time from the database
//! URL: SQLite (one relay) or PostgreSQL (several relays sharing it).
//!
//! One implementation serves both ([`SqlStore`], every query written once);
//! a [`backend::Backend`] holds only what a database does its own way.
//! docs/store.md says how to add a table.
//!
//! Secrets are stored as hashes only. The store makes no time decisions:
//! callers pass the times they got from the [`crate::clock::Clock`].

mod backend;
pub mod changes;
mod journal_sql;
mod postgres;
mod rows;
mod sql_store;
mod sqlite;
mod sqlite_audit_fast_path;
mod sqlite_journal;

use std::sync::Arc;

use async_trait::async_trait;
use runner_proto::api::{InvocationState, RunnerInfo};
use runner_proto::approvals::{ApprovalOutcome, ApprovalStatus, Notification};
use runner_proto::ws::CallResult;
use serde_json::Value;
use time::OffsetDateTime;

use crate::approvals::{ApprovalRecord, Decision};
use crate::audit::{AuditHead, AuditQuery, AuditView, StoredAudit};
use crate::environment::EnvironmentRecord;
use crate::sandboxes::SandboxRecord;
use crate::sessions::{Lock, MemberName, WorkSession};
use crate::templates::TemplateRecord;

pub use backend::Backend;
pub use postgres::{PostgresBackend, PostgresStore};
pub use sql_store::SqlStore;
pub use sqlite::{SqliteBackend, SqliteStore};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another environment already has this name.
    #[error("an environment named {0:?} already exists")]
    NameTaken(String),
    /// Another template already has this name.
    #[error("a template named {0:?} already exists")]
    TemplateNameTaken(String),
    /// The row to change does not exist.
    #[error("not found")]
    NotFound,
    /// A team named in a request does not exist.
    #[error("unknown team {0:?}")]
    UnknownTeam(String),
    /// The database URL names a backend this build does not have.
    #[error("unsupported database URL {0:?}: expected sqlite://PATH or postgres://…")]
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
    /// SQLite failed a call made without sqlx (the audit log's append).
    #[error("database error: {0}")]
    Sqlite(String),
}

/// Whether a member is a person or an agent (an API client that acts for
/// its team, e.g. a coding agent or a CI pipeline).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemberKind {
    #[default]
    Person,
    Agent,
}

impl MemberKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Agent => "agent",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "person" => Some(Self::Person),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
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
    pub kind: MemberKind,
    /// Where the member's sessions go when they name no environment (an
    /// environment id, kept when that environment is deleted).
    pub default_environment: Option<String>,
}

/// An API key as stored: never the key, only its hash (not kept here) and
/// hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub id: String,
    pub member_id: String,
    /// `rnrk_…` and the key's last characters.
    pub hint: String,
    pub created_at: OffsetDateTime,
}

/// A member to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMember {
    pub name: String,
    pub is_admin: bool,
    pub teams: Vec<String>,
    pub kind: MemberKind,
}

/// A team and its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    pub name: String,
    /// See [`Member::default_environment`].
    pub default_environment: Option<String>,
    /// By name, then id.
    pub members: Vec<MemberName>,
}

/// Whose default environment to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultFor<'a> {
    /// A member, by id.
    Member(&'a str),
    /// A team, by name.
    Team(&'a str),
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

/// A runner session as the store records it: who holds the socket, under
/// which fencing epoch, and what the runner announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    pub environment_id: String,
    /// Only grows; the newest connection has the highest.
    pub epoch: u64,
    /// Relay instance holding the socket; `None` once it closed cleanly.
    pub holder: Option<String>,
    pub session_id: String,
    /// JSON of the runner's announcement (host facts, tools).
    pub presence: String,
    /// JSON of the latest heartbeat, as of the last lease refresh.
    pub heartbeat: String,
    /// Last lease refresh by the holder.
    pub refreshed_at: OffsetDateTime,
}

/// One held session in a batched lease refresh.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseRefresh {
    pub environment_id: String,
    pub epoch: u64,
    /// JSON of the latest heartbeat.
    pub heartbeat: String,
    /// New announcement JSON, when the catalogue changed since the last
    /// refresh.
    pub presence: Option<String>,
    /// A heartbeat since the previous refresh: when, and who.
    pub seen: Option<(OffsetDateTime, RunnerInfo)>,
}

/// A call's journal entry.
#[derive(Debug, Clone, PartialEq)]
pub struct InvocationRecord {
    pub call_id: String,
    pub environment_id: String,
    pub tool_name: String,
    pub state: InvocationState,
    pub epoch: Option<u64>,
    pub created_at: OffsetDateTime,
    pub finished_at: Option<OffsetDateTime>,
    pub result: Value,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// The kind of `error` ([`CallResult::error_code`], or
    /// [`RUNNER_DISCONNECTED`](runner_proto::api::RUNNER_DISCONNECTED) for
    /// a `failed` entry).
    pub error_code: Option<String>,
}

/// Where a journalled call stands, for a caller waiting on it.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// No answer yet.
    Running,
    /// The runner answered.
    Answered(CallResult),
    /// The runner's session ended first (`failed`): the caller gets what a
    /// caller waiting at that moment got, "runner disconnected".
    Disconnected,
}

impl InvocationRecord {
    /// Where the call stands: its stored answer, if any.
    pub fn settled(&self) -> Settled {
        match self.state {
            InvocationState::Pending | InvocationState::Dispatched => Settled::Running,
            InvocationState::Failed => Settled::Disconnected,
            InvocationState::Done => Settled::Answered(CallResult {
                call_id: self.call_id.clone(),
                result: self.result.clone(),
                exit_code: self.exit_code,
                error: self.error.clone(),
                error_code: self.error_code.clone(),
            }),
        }
    }
}

/// A journal entry moving forward, as the batched journal writer hands it
/// to the store. Writes are idempotent and order-free: an entry only ever
/// moves forward (pending → dispatched → failed → done; the first answer
/// wins, and a runner's answer beats a failure the relay recorded when the
/// runner's session ended), so relays may write the same call's steps in
/// any order.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalWrite {
    /// The entry as far as the writer knows it (`tool_name` may be empty
    /// when the writer only saw the result).
    pub entry: InvocationRecord,
    /// Whether the entry may be created when it is missing: the writer sent
    /// this call or took its result on a session it holds. Otherwise (a
    /// late result nobody waits for) only an existing entry moves on, so a
    /// runner cannot fill the journal with results of calls never sent.
    pub create: bool,
}

/// How far along an entry is, for "only forward" comparisons.
pub fn state_rank(state: InvocationState) -> u8 {
    match state {
        InvocationState::Pending => 0,
        InvocationState::Dispatched => 1,
        InvocationState::Failed => 2,
        InvocationState::Done => 3,
    }
}

/// A runner seen at some time, for the batched `last_seen` flush.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenRecord {
    pub environment_id: String,
    pub at: OffsetDateTime,
    pub runner: RunnerInfo,
}

/// The relay's durable state. Object-safe: handlers hold an `Arc<dyn Store>`.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Whether the database answers (readiness probe).
    async fn ping(&self) -> Result<(), StoreError>;
    /// Whether other relay processes may change this store (PostgreSQL):
    /// then what is read from it is kept in memory only while its change
    /// feed is heard (see [`crate::read_cache`]).
    fn shared(&self) -> bool;
    /// Subscribes to the changes other processes make to the rows the
    /// read cache copies ([`changes`]); `None` from a store nobody else
    /// changes.
    async fn listen_for_changes(
        &self,
    ) -> Result<Option<Box<dyn changes::ChangeListener>>, StoreError>;

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
    /// One member by id.
    async fn member(&self, id: &str) -> Result<Option<Member>, StoreError>;
    /// The members with this name (names need not be unique).
    async fn members_named(&self, name: &str) -> Result<Vec<Member>, StoreError>;
    /// Every member with its teams, by creation time (to the second).
    async fn list_members(&self) -> Result<Vec<Member>, StoreError>;
    /// Every API key (never the key: its hint), by creation time (to the
    /// second).
    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError>;
    /// Deletes every API key of a member (the member, its teams and its
    /// audit trail stay); how many there were.
    async fn revoke_api_keys(&self, member_id: &str) -> Result<u64, StoreError>;
    /// One team with its members.
    async fn team(&self, name: &str) -> Result<Option<Team>, StoreError>;
    /// Every team name, sorted.
    async fn list_teams(&self) -> Result<Vec<String>, StoreError>;
    /// Adds a member to a team; false if it was in it already. Fails with
    /// [`StoreError::UnknownTeam`] or [`StoreError::NotFound`] (member).
    async fn add_team_member(&self, team: &str, member_id: &str) -> Result<bool, StoreError>;
    /// Removes a member from a team; false if it was not in it.
    async fn remove_team_member(&self, team: &str, member_id: &str) -> Result<bool, StoreError>;
    /// Sets or clears a member's or team's default environment; false if
    /// the member or team does not exist.
    async fn set_default_environment(
        &self,
        target: DefaultFor<'_>,
        environment_id: Option<&str>,
    ) -> Result<bool, StoreError>;

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
    /// [`Store::record_seen`] for many environments in one transaction.
    async fn record_seen_batch(&self, seen: &[SeenRecord]) -> Result<(), StoreError>;

    /// Inserts a template; [`StoreError::TemplateNameTaken`] on a name
    /// clash.
    async fn insert_template(&self, template: &TemplateRecord) -> Result<(), StoreError>;
    /// One template by id.
    async fn template(&self, id: &str) -> Result<Option<TemplateRecord>, StoreError>;
    /// One template by name.
    async fn template_by_name(&self, name: &str) -> Result<Option<TemplateRecord>, StoreError>;
    /// Every template, by name.
    async fn list_templates(&self) -> Result<Vec<TemplateRecord>, StoreError>;
    /// Replaces every field of an existing template but its id, scope and
    /// creation; [`StoreError::NotFound`] if it is gone.
    async fn update_template(&self, template: &TemplateRecord) -> Result<(), StoreError>;
    /// Deletes a template; false if it did not exist.
    async fn delete_template(&self, id: &str) -> Result<bool, StoreError>;

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
    /// Records the first use of a single-use token: true if this call was
    /// the first (of any relay sharing the database).
    async fn claim_token(&self, id: &str, at: OffsetDateTime) -> Result<bool, StoreError>;
    /// Deletes every token of an environment; returns how many.
    async fn revoke_tokens(&self, environment_id: &str) -> Result<u64, StoreError>;
    /// The newest token of an environment that was not replaced.
    async fn current_token(&self, environment_id: &str) -> Result<Option<TokenRecord>, StoreError>;

    /// Takes ownership of an environment's runner for relay `holder`: the
    /// session epoch goes up by one in a single statement (so two relays
    /// can never get the same one). Returns the new epoch.
    async fn claim_session(
        &self,
        environment_id: &str,
        holder: &str,
        session_id: &str,
        presence: &str,
        at: OffsetDateTime,
    ) -> Result<u64, StoreError>;
    /// The environment's latest session, if it ever had one.
    async fn session(&self, environment_id: &str) -> Result<Option<SessionRecord>, StoreError>;
    /// Marks a session closed, unless a newer epoch replaced it already.
    async fn release_session(&self, environment_id: &str, epoch: u64) -> Result<(), StoreError>;
    /// Refreshes the leases of every session `holder` holds in one batch,
    /// with their presence and heartbeat times. Returns the environments
    /// whose session was taken over (higher epoch or another holder): the
    /// holder must close those sockets.
    async fn refresh_sessions(
        &self,
        holder: &str,
        sessions: &[LeaseRefresh],
        at: OffsetDateTime,
    ) -> Result<Vec<String>, StoreError>;

    /// Journals a new call as pending. If the `call_id` is already
    /// journalled, nothing changes and the existing entry is returned.
    async fn begin_invocation(
        &self,
        call_id: &str,
        environment_id: &str,
        tool_name: &str,
        at: OffsetDateTime,
    ) -> Result<Option<InvocationRecord>, StoreError>;
    /// Moves journal entries forward in one transaction (see
    /// [`JournalWrite`]); an entry never moves back, and the update of an
    /// existing entry needs the same environment.
    async fn write_journal(&self, writes: &[JournalWrite]) -> Result<(), StoreError>;
    /// Forgets a call still pending: it never reached a runner, so the same
    /// `call_id` may be sent again.
    async fn forget_pending_invocation(&self, call_id: &str) -> Result<(), StoreError>;
    /// One journal entry.
    async fn invocation(&self, call_id: &str) -> Result<Option<InvocationRecord>, StoreError>;
    /// Deletes entries done before `before`; returns how many.
    async fn prune_invocations(&self, before: OffsetDateTime) -> Result<u64, StoreError>;
    /// Bytes of results the journal holds (characters of their JSON), and
    /// how many finished entries it holds.
    async fn journal_size(&self) -> Result<(u64, u64), StoreError>;
    /// Deletes the `count` finished calls that finished first; how many.
    async fn prune_oldest_invocations(&self, count: u32) -> Result<u64, StoreError>;

    /// Records a new work session.
    async fn insert_work_session(&self, session: &WorkSession) -> Result<(), StoreError>;
    /// One work session.
    async fn work_session(&self, id: &str) -> Result<Option<WorkSession>, StoreError>;
    /// Work sessions created by `member_id` or working for it (every
    /// session with `None`), newest first, at most `limit`.
    async fn list_work_sessions(
        &self,
        member_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<WorkSession>, StoreError>;
    /// Locks a session to an environment unless it is locked already, and
    /// returns the session as it is afterwards (so of two first calls
    /// racing, both see the one lock that won); `None` if it does not exist.
    async fn lock_work_session(
        &self,
        id: &str,
        lock: &Lock,
    ) -> Result<Option<WorkSession>, StoreError>;
    /// Ends a session; false if it does not exist or had ended.
    async fn end_work_session(&self, id: &str, at: OffsetDateTime) -> Result<bool, StoreError>;
    /// Moves sessions' last-use times forward (never back), in one
    /// transaction.
    async fn touch_work_sessions(
        &self,
        uses: &[(String, OffsetDateTime)],
    ) -> Result<(), StoreError>;
    /// Deletes sessions ended, or idle past their timeout, before `before`;
    /// returns how many.
    async fn prune_work_sessions(&self, before: OffsetDateTime) -> Result<u64, StoreError>;

    /// Inserts a sandbox's record.
    async fn insert_sandbox(&self, sandbox: &SandboxRecord) -> Result<(), StoreError>;
    /// Writes a sandbox's state, reason, setup report and times.
    async fn update_sandbox(&self, sandbox: &SandboxRecord) -> Result<(), StoreError>;
    /// One sandbox by id.
    async fn sandbox(&self, id: &str) -> Result<Option<SandboxRecord>, StoreError>;
    /// A session's sandboxes, newest first.
    async fn session_sandboxes(&self, session_id: &str) -> Result<Vec<SandboxRecord>, StoreError>;
    /// An environment's deployments, newest first.
    async fn deployments(&self, environment_id: &str) -> Result<Vec<SandboxRecord>, StoreError>;
    /// The newest sandboxes first; those not ended only when `live`.
    async fn list_sandboxes(
        &self,
        live: bool,
        limit: u32,
    ) -> Result<Vec<SandboxRecord>, StoreError>;

    /// Inserts an approval. With a call id that has one already, inserts
    /// nothing and answers that one (a repeated request of the same call).
    async fn insert_approval(
        &self,
        approval: &ApprovalRecord,
    ) -> Result<ApprovalRecord, StoreError>;
    /// One approval by id.
    async fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, StoreError>;
    /// The newest approvals first, those with `status` at `now` only when
    /// given, at most `limit`.
    async fn list_approvals(
        &self,
        status: Option<ApprovalStatus>,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError>;
    /// Decides a pending, unexpired approval: true if this call decided it
    /// (exactly one caller ever does), false if it was decided or expired
    /// before. `args` replaces the stored arguments (their masked form).
    async fn decide_approval(&self, decided: &DecidedApproval<'_>) -> Result<bool, StoreError>;
    /// Records how an approved call ended.
    async fn finish_approval(&self, id: &str, outcome: &ApprovalOutcome) -> Result<(), StoreError>;
    /// Records the webhook's delivery state.
    async fn set_approval_notification(
        &self,
        id: &str,
        notification: &Notification,
    ) -> Result<(), StoreError>;
    /// Deletes approvals requested before `before`.
    async fn prune_approvals(&self, before: OffsetDateTime) -> Result<u64, StoreError>;
    /// Appends entries to the audit log's chain, in order, in one
    /// transaction that holds the chain's head row locked: appends from
    /// several relays (or `runner-relay admin`) never interleave.
    async fn append_audit(&self, records: &[AuditView<'_>]) -> Result<(), StoreError>;
    /// Audit entries matching `query`, in sequence order (ascending or
    /// descending), at most `query.limit`.
    async fn audit_entries(&self, query: &AuditQuery) -> Result<Vec<StoredAudit>, StoreError>;
    /// The chain's head and how far it was pruned.
    async fn audit_head(&self) -> Result<AuditHead, StoreError>;
    /// Deletes the oldest entries up to the newest one made before
    /// `before` (a prefix of the chain, so the rest still verifies from
    /// its first entry); returns how many.
    async fn prune_audit(&self, before: OffsetDateTime) -> Result<u64, StoreError>;
}

/// A decision for [`Store::decide_approval`].
#[derive(Debug, Clone)]
pub struct DecidedApproval<'a> {
    pub id: &'a str,
    pub decision: Decision,
    pub by: &'a MemberName,
    pub at: OffsetDateTime,
    pub comment: Option<&'a str>,
    /// The arguments as kept after the decision (masked).
    pub args: &'a Value,
}

/// Opens the store a database URL names and brings its schema up to date.
///
/// `sqlite://PATH` (the default; one relay) or `postgres://…` (shared by
/// several relays; `serve` then needs `--nats-url` too).
pub async fn open(database_url: &str) -> Result<Arc<dyn Store>, StoreError> {
    if database_url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::open(database_url).await?))
    } else if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
        Ok(Arc::new(PostgresStore::open(database_url).await?))
    } else {
        Err(StoreError::UnsupportedUrl(database_url.to_owned()))
    }
}
