//! The one implementation of [`Store`], over either database: every query
//! is written here once, with `$1`-style parameters (sqlx's SQLite driver
//! reads them as PostgreSQL does). What a database spells its own way is
//! asked of its [`Backend`].
//!
//! A query binds and reads only the types the `where` clause of the
//! [`Store`] impl lists; a new column type is one more line there.

use std::borrow::Cow;
use std::sync::OnceLock;

use async_trait::async_trait;
use runner_proto::api::RunnerInfo;
use runner_proto::approvals::{ApprovalOutcome, ApprovalStatus, Notification};
use sqlx::{ColumnIndex, Database, Encode, Executor, IntoArguments, Pool, Type};
use time::OffsetDateTime;

use super::backend::{Backend, Column};
use super::rows::{
    corrupt, count_to_db, epoch_from_db, epoch_to_db, json_text, network_text, tier_text,
    ApprovalRow, AuditRow, AuditRowValues, EnvironmentRow, InvocationRow, KeyedMemberRow,
    MemberRow, SandboxRow, SessionRow, TemplateRow, TokenRow, WorkSessionRow,
};
use super::{
    ApiKeyRecord, DecidedApproval, DefaultFor, InvocationRecord, JournalWrite, LeaseRefresh,
    Member, NewMember, SeenRecord, SessionRecord, Store, StoreError, Team, TokenRecord,
};
use crate::approvals::ApprovalRecord;
use crate::audit::{chain, AuditHead, AuditQuery, AuditView, StoredAudit};
use crate::environment::EnvironmentRecord;
use crate::sandboxes::SandboxRecord;
use crate::sessions::{Lock, MemberName, WorkSession};
use crate::templates::TemplateRecord;

/// Most audit rows one `INSERT` carries: a power of two within SQLite's
/// 32 766 and PostgreSQL's 65 535 bound parameters. Small, because each
/// shape is parsed once per connection and parsing grows with its length.
pub(super) const AUDIT_ROWS_PER_INSERT: usize = 64;
const _: () = assert!(AUDIT_ROWS_PER_INSERT * AuditRow::WRITTEN_WIDTH <= 32_766);

/// The sizes of the statements an append of `rows` rows is cut into: a
/// power of two rows each (largest first), so that every statement text is
/// prepared once and kept in the connection's cache, and a batch of any
/// size reuses at most seven shapes instead of preparing a new one for
/// each size.
fn audit_chunk_sizes(mut rows: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if rows == 0 {
            return None;
        }
        let fits = rows.min(AUDIT_ROWS_PER_INSERT);
        // The largest power of two not above `fits` (at least 1).
        let size = 1usize << (usize::BITS - 1 - fits.leading_zeros());
        rows -= size;
        Some(size)
    })
}
/// Locks the audit chain's head row for the rest of the transaction and
/// reads it. An `UPDATE` first: PostgreSQL keeps the row lock until
/// commit (other relays' appends wait), and SQLite takes its write lock
/// before reading anything (no read-then-write upgrade to fail).
const LOCK_AUDIT_HEAD: &str =
    "UPDATE audit_head SET seq = seq WHERE id = 1 RETURNING seq, hash, pruned_through";

/// [`audit_insert`]'s text, built once for each shape
/// [`audit_chunk_sizes`] gives (and for a full statement of the SQLite
/// fast path): the text is as long as its placeholders, and every batch
/// would otherwise build it again.
pub(super) fn audit_insert_text(rows: usize, positional: bool) -> Cow<'static, str> {
    const SHAPES: usize = AUDIT_ROWS_PER_INSERT.trailing_zeros() as usize + 1;
    static TEXTS: [[OnceLock<String>; SHAPES]; 2] =
        [const { [const { OnceLock::new() }; SHAPES] }; 2];
    if !rows.is_power_of_two() || rows > AUDIT_ROWS_PER_INSERT {
        return Cow::Owned(audit_insert(rows, positional));
    }
    let shape = rows.trailing_zeros() as usize;
    Cow::Borrowed(
        TEXTS[usize::from(positional)][shape].get_or_init(|| audit_insert(rows, positional)),
    )
}

/// `INSERT INTO audit_log` of `rows` rows, placeholders in
/// [`AuditRow::WRITTEN`] order: `?` when `positional` (see
/// [`Backend::POSITIONAL_PARAMETERS`]), else `$1`, `$2`…
fn audit_insert(rows: usize, positional: bool) -> String {
    let mut sql = format!("INSERT INTO audit_log ({}) VALUES ", AuditRow::WRITTEN);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..AuditRow::WRITTEN_WIDTH {
            if column > 0 {
                sql.push_str(", ");
            }
            if positional {
                sql.push('?');
            } else {
                sql.push_str(&format!("${}", row * AuditRow::WRITTEN_WIDTH + column + 1));
            }
        }
        sql.push(')');
    }
    sql
}

/// The store on database backend `B`.
#[derive(Debug, Clone)]
pub struct SqlStore<B: Backend> {
    pub(super) pool: Pool<B::Db>,
    pub(super) backend: B,
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// An insert or update that may clash with a unique template name.
fn template_name_taken<T>(result: Result<T, sqlx::Error>, name: &str) -> Result<T, StoreError> {
    result.map_err(|error| {
        if is_unique_violation(&error) {
            StoreError::TemplateNameTaken(name.to_owned())
        } else {
            error.into()
        }
    })
}

/// Seconds as stored (the checks bound them far below the limit).
fn seconds_to_db(seconds: u64) -> i64 {
    i64::try_from(seconds).unwrap_or(i64::MAX)
}

/// An insert or update that may clash with a unique environment name.
fn name_taken<T>(result: Result<T, sqlx::Error>, name: &str) -> Result<T, StoreError> {
    result.map_err(|error| {
        if is_unique_violation(&error) {
            StoreError::NameTaken(name.to_owned())
        } else {
            error.into()
        }
    })
}

impl<B, DB> SqlStore<B>
where
    B: Backend<Db = DB>,
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    usize: ColumnIndex<DB::Row>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    String: Column<DB>,
{
    /// A member row with its team names.
    async fn with_teams(&self, row: MemberRow) -> Result<Member, StoreError> {
        let teams: Vec<String> = sqlx::query_scalar(
            "SELECT team_name FROM team_members WHERE member_id = $1 ORDER BY team_name",
        )
        .bind(row.id.as_str())
        .fetch_all(&self.pool)
        .await?;
        row.into_member(teams)
    }
}

#[async_trait]
impl<B, DB> Store for SqlStore<B>
where
    B: Backend<Db = DB>,
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> &'r str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    String: Column<DB>,
    Option<String>: Column<DB>,
    i64: Column<DB>,
    Option<i64>: Column<DB>,
    i32: Column<DB>,
    Option<i32>: Column<DB>,
    bool: Column<DB>,
{
    fn shared(&self) -> bool {
        B::SHARED
    }

    async fn listen_for_changes(
        &self,
    ) -> Result<Option<Box<dyn super::changes::ChangeListener>>, StoreError> {
        B::listen_for_changes(&self.pool).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn count_members(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM members")
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn create_team(&self, name: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO teams (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(at.unix_timestamp())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn create_member(
        &self,
        member: &NewMember,
        key_hash: &str,
        key_hint: &str,
        at: OffsetDateTime,
    ) -> Result<Member, StoreError> {
        let id = format!("mem_{}", uuid::Uuid::new_v4().simple());
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO members (id, name, is_admin, created_at, kind) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id.as_str())
        .bind(member.name.as_str())
        .bind(member.is_admin)
        .bind(at.unix_timestamp())
        .bind(member.kind.as_str())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO api_keys (id, member_id, key_hash, hint, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(format!("key_{}", uuid::Uuid::new_v4().simple()))
        .bind(id.as_str())
        .bind(key_hash)
        .bind(key_hint)
        .bind(at.unix_timestamp())
        .execute(&mut *tx)
        .await?;
        for team in &member.teams {
            let exists: Option<String> =
                sqlx::query_scalar("SELECT name FROM teams WHERE name = $1")
                    .bind(team.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
            if exists.is_none() {
                return Err(StoreError::UnknownTeam(team.clone()));
            }
            sqlx::query(
                "INSERT INTO team_members (team_name, member_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(team.as_str())
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        let mut teams = member.teams.clone();
        teams.sort();
        teams.dedup();
        Ok(Member {
            id,
            name: member.name.clone(),
            is_admin: member.is_admin,
            teams,
            kind: member.kind,
            default_environment: None,
        })
    }

    async fn member_by_key_hash(
        &self,
        key_hash: &str,
    ) -> Result<Option<(Member, String)>, StoreError> {
        let row: Option<KeyedMemberRow> = sqlx::query_as(&format!(
            "SELECT {}, k.key_hash FROM api_keys k \
             JOIN members m ON m.id = k.member_id WHERE k.key_hash = $1",
            MemberRow::COLUMNS
        ))
        .bind(key_hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let member = self.with_teams(row.member).await?;
        Ok(Some((member, row.key_hash)))
    }

    async fn member(&self, id: &str) -> Result<Option<Member>, StoreError> {
        let row: Option<MemberRow> = sqlx::query_as(&format!(
            "SELECT {} FROM members m WHERE m.id = $1",
            MemberRow::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => Ok(Some(self.with_teams(row).await?)),
            None => Ok(None),
        }
    }

    async fn list_members(&self) -> Result<Vec<Member>, StoreError> {
        let rows: Vec<MemberRow> = sqlx::query_as(&format!(
            "SELECT {} FROM members m ORDER BY m.created_at, m.id",
            MemberRow::COLUMNS
        ))
        .fetch_all(&self.pool)
        .await?;
        let mut members = Vec::with_capacity(rows.len());
        for row in rows {
            members.push(self.with_teams(row).await?);
        }
        Ok(members)
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
            "SELECT id, member_id, hint, created_at FROM api_keys ORDER BY created_at, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(id, member_id, hint, created_at)| {
                Ok(ApiKeyRecord {
                    created_at: OffsetDateTime::from_unix_timestamp(created_at)
                        .map_err(|error| corrupt("api_keys.created_at", error))?,
                    id,
                    member_id,
                    hint,
                })
            })
            .collect()
    }

    async fn revoke_api_keys(&self, member_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM api_keys WHERE member_id = $1")
            .bind(member_id)
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done))
    }

    async fn members_named(&self, name: &str) -> Result<Vec<Member>, StoreError> {
        let rows: Vec<MemberRow> = sqlx::query_as(&format!(
            "SELECT {} FROM members m WHERE m.name = $1 ORDER BY m.id",
            MemberRow::COLUMNS
        ))
        .bind(name)
        .fetch_all(&self.pool)
        .await?;
        let mut members = Vec::with_capacity(rows.len());
        for row in rows {
            members.push(self.with_teams(row).await?);
        }
        Ok(members)
    }

    async fn team(&self, name: &str) -> Result<Option<Team>, StoreError> {
        let row: Option<(String, Option<String>)> =
            sqlx::query_as("SELECT name, default_environment FROM teams WHERE name = $1")
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
        let Some((name, default_environment)) = row else {
            return Ok(None);
        };
        let members: Vec<(String, String)> = sqlx::query_as(
            "SELECT m.id, m.name FROM team_members t JOIN members m ON m.id = t.member_id \
             WHERE t.team_name = $1 ORDER BY m.name, m.id",
        )
        .bind(name.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(Some(Team {
            name,
            default_environment,
            members: members
                .into_iter()
                .map(|(id, name)| MemberName { id, name })
                .collect(),
        }))
    }

    async fn list_teams(&self) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar("SELECT name FROM teams ORDER BY name")
            .fetch_all(&self.pool)
            .await?)
    }

    async fn add_team_member(&self, team: &str, member_id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let team_exists: Option<String> =
            sqlx::query_scalar("SELECT name FROM teams WHERE name = $1")
                .bind(team)
                .fetch_optional(&mut *tx)
                .await?;
        if team_exists.is_none() {
            return Err(StoreError::UnknownTeam(team.to_owned()));
        }
        let member_exists: Option<String> =
            sqlx::query_scalar("SELECT id FROM members WHERE id = $1")
                .bind(member_id)
                .fetch_optional(&mut *tx)
                .await?;
        if member_exists.is_none() {
            return Err(StoreError::NotFound);
        }
        let done = sqlx::query(
            "INSERT INTO team_members (team_name, member_id) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(team)
        .bind(member_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn remove_team_member(&self, team: &str, member_id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM team_members WHERE team_name = $1 AND member_id = $2")
            .bind(team)
            .bind(member_id)
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn set_default_environment(
        &self,
        target: DefaultFor<'_>,
        environment_id: Option<&str>,
    ) -> Result<bool, StoreError> {
        let (statement, key) = match target {
            DefaultFor::Member(id) => (
                "UPDATE members SET default_environment = $1 WHERE id = $2",
                id,
            ),
            DefaultFor::Team(name) => (
                "UPDATE teams SET default_environment = $1 WHERE name = $2",
                name,
            ),
        };
        let done = sqlx::query(statement)
            .bind(environment_id)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn insert_work_session(&self, session: &WorkSession) -> Result<(), StoreError> {
        let lock = session.lock.as_ref();
        sqlx::query(&format!(
            "INSERT INTO work_sessions ({}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
            WorkSessionRow::COLUMNS
        ))
        .bind(session.id.as_str())
        .bind(session.created_by.id.as_str())
        .bind(session.created_by.name.as_str())
        .bind(session.agent.as_ref().map(|agent| agent.id.as_str()))
        .bind(session.agent.as_ref().map(|agent| agent.name.as_str()))
        .bind(session.requested.as_str())
        .bind(session.requested_from.as_str())
        .bind(json_text("work_sessions", &session.tags)?)
        .bind(lock.map(|lock| lock.environment_id.as_str()))
        .bind(lock.map(|lock| lock.environment_name.as_str()))
        .bind(lock.map(|lock| lock.reason.as_str()))
        .bind(lock.map(|lock| lock.at.unix_timestamp()))
        .bind(session.created_at.unix_timestamp())
        .bind(session.last_used_at.unix_timestamp())
        .bind(i64::try_from(session.idle_timeout_s).unwrap_or(i64::MAX))
        .bind(session.ended_at.map(OffsetDateTime::unix_timestamp))
        .bind(session.template_id.as_deref())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn work_session(&self, id: &str) -> Result<Option<WorkSession>, StoreError> {
        let row: Option<WorkSessionRow> = sqlx::query_as(&format!(
            "SELECT {} FROM work_sessions WHERE id = $1",
            WorkSessionRow::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(WorkSession::try_from).transpose()
    }

    async fn list_work_sessions(
        &self,
        member_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<WorkSession>, StoreError> {
        let rows: Vec<WorkSessionRow> = sqlx::query_as(&format!(
            "SELECT {} FROM work_sessions \
             WHERE $1 IS NULL OR created_by = $1 OR agent_id = $1 \
             ORDER BY created_at DESC, id LIMIT $2",
            WorkSessionRow::COLUMNS
        ))
        .bind(member_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(WorkSession::try_from).collect()
    }

    async fn lock_work_session(
        &self,
        id: &str,
        lock: &Lock,
    ) -> Result<Option<WorkSession>, StoreError> {
        sqlx::query(
            "UPDATE work_sessions SET environment_id = $1, environment_name = $5, \
             selection_reason = $2, locked_at = $3 WHERE id = $4 AND environment_id IS NULL",
        )
        .bind(lock.environment_id.as_str())
        .bind(lock.reason.as_str())
        .bind(lock.at.unix_timestamp())
        .bind(id)
        .bind(lock.environment_name.as_str())
        .execute(&self.pool)
        .await?;
        self.work_session(id).await
    }

    async fn insert_sandbox(&self, sandbox: &SandboxRecord) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO sandboxes ({}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            SandboxRow::COLUMNS
        ))
        .bind(sandbox.id.as_str())
        .bind(sandbox.session_id.as_str())
        .bind(sandbox.deployment_of.as_deref())
        .bind(sandbox.host_environment_id.as_str())
        .bind(sandbox.host_name.as_str())
        .bind(sandbox.template_id.as_deref())
        .bind(sandbox.state.as_str())
        .bind(sandbox.reason.as_deref())
        .bind(
            sandbox
                .setup
                .as_ref()
                .map(|setup| json_text("sandboxes", setup))
                .transpose()?,
        )
        .bind(sandbox.created_by.as_str())
        .bind(sandbox.created_at.unix_timestamp())
        .bind(sandbox.ready_at.map(OffsetDateTime::unix_timestamp))
        .bind(sandbox.ended_at.map(OffsetDateTime::unix_timestamp))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn update_sandbox(&self, sandbox: &SandboxRecord) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE sandboxes SET state = $1, reason = $2, setup = $3, ready_at = $4, \
             ended_at = $5 WHERE id = $6",
        )
        .bind(sandbox.state.as_str())
        .bind(sandbox.reason.as_deref())
        .bind(
            sandbox
                .setup
                .as_ref()
                .map(|setup| json_text("sandboxes", setup))
                .transpose()?,
        )
        .bind(sandbox.ready_at.map(OffsetDateTime::unix_timestamp))
        .bind(sandbox.ended_at.map(OffsetDateTime::unix_timestamp))
        .bind(sandbox.id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn sandbox(&self, id: &str) -> Result<Option<SandboxRecord>, StoreError> {
        let row: Option<SandboxRow> = sqlx::query_as(&format!(
            "SELECT {} FROM sandboxes WHERE id = $1",
            SandboxRow::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(SandboxRecord::try_from).transpose()
    }

    async fn session_sandboxes(&self, session_id: &str) -> Result<Vec<SandboxRecord>, StoreError> {
        let rows: Vec<SandboxRow> = sqlx::query_as(&format!(
            "SELECT {} FROM sandboxes WHERE session_id = $1 ORDER BY created_at DESC, id",
            SandboxRow::COLUMNS
        ))
        .bind(session_id)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(SandboxRecord::try_from).collect()
    }

    async fn deployments(&self, environment_id: &str) -> Result<Vec<SandboxRecord>, StoreError> {
        let rows: Vec<SandboxRow> = sqlx::query_as(&format!(
            "SELECT {} FROM sandboxes WHERE deployment_of = $1 ORDER BY created_at DESC, id",
            SandboxRow::COLUMNS
        ))
        .bind(environment_id)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(SandboxRecord::try_from).collect()
    }

    async fn list_sandboxes(
        &self,
        live: bool,
        limit: u32,
    ) -> Result<Vec<SandboxRecord>, StoreError> {
        let rows: Vec<SandboxRow> = sqlx::query_as(&format!(
            "SELECT {} FROM sandboxes WHERE NOT $1 OR ended_at IS NULL \
             ORDER BY created_at DESC, id LIMIT $2",
            SandboxRow::COLUMNS
        ))
        .bind(live)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(SandboxRecord::try_from).collect()
    }

    async fn end_work_session(&self, id: &str, at: OffsetDateTime) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE work_sessions SET ended_at = $1 WHERE id = $2 AND ended_at IS NULL",
        )
        .bind(at.unix_timestamp())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn touch_work_sessions(
        &self,
        uses: &[(String, OffsetDateTime)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for (id, at) in uses {
            sqlx::query(
                "UPDATE work_sessions SET last_used_at = $1 WHERE id = $2 AND last_used_at < $1",
            )
            .bind(at.unix_timestamp())
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn prune_work_sessions(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM work_sessions WHERE ended_at < $1 OR last_used_at + idle_timeout_s < $1",
        )
        .bind(before.unix_timestamp())
        .execute(&self.pool)
        .await?;
        Ok(B::rows_affected(&done))
    }

    async fn insert_approval(
        &self,
        approval: &ApprovalRecord,
    ) -> Result<ApprovalRecord, StoreError> {
        let table = "approvals";
        let inserted = sqlx::query(&format!(
            "INSERT INTO approvals ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
             $12, $13, $14, $15, $16, $17, $18, $19, $20, $21) ON CONFLICT (call_id) DO NOTHING",
            ApprovalRow::COLUMNS
        ))
        .bind(approval.id.as_str())
        .bind(approval.call_id.as_str())
        .bind(approval.stored_status.as_str())
        .bind(approval.environment_id.as_str())
        .bind(approval.environment_name.as_str())
        .bind(approval.session_id.as_deref())
        .bind(approval.tool.as_str())
        .bind(json_text(table, &approval.args)?)
        .bind(i64::try_from(approval.timeout_s).unwrap_or(i64::MAX))
        .bind(approval.call_sha256.as_str())
        .bind(approval.rule.as_str())
        .bind(approval.requested_by.id.as_str())
        .bind(approval.requested_by.name.as_str())
        .bind(approval.requested_at.unix_timestamp())
        .bind(approval.expires_at.unix_timestamp())
        .bind(approval.decided_by.as_ref().map(|by| by.id.as_str()))
        .bind(approval.decided_by.as_ref().map(|by| by.name.as_str()))
        .bind(approval.decided_at.map(OffsetDateTime::unix_timestamp))
        .bind(approval.comment.as_deref())
        .bind(
            approval
                .outcome
                .as_ref()
                .map(|outcome| json_text(table, outcome))
                .transpose()?,
        )
        .bind(
            approval
                .notification
                .as_ref()
                .map(|notification| json_text(table, notification))
                .transpose()?,
        )
        .execute(&self.pool)
        .await?;
        if B::rows_affected(&inserted) == 1 {
            return Ok(approval.clone());
        }
        let row: Option<ApprovalRow> = sqlx::query_as(&format!(
            "SELECT {} FROM approvals WHERE call_id = $1",
            ApprovalRow::COLUMNS
        ))
        .bind(approval.call_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.map(ApprovalRecord::try_from)
            .transpose()?
            .ok_or(StoreError::NotFound)
    }

    async fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
        let row: Option<ApprovalRow> = sqlx::query_as(&format!(
            "SELECT {} FROM approvals WHERE id = $1",
            ApprovalRow::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(ApprovalRecord::try_from).transpose()
    }

    async fn list_approvals(
        &self,
        status: Option<ApprovalStatus>,
        now: OffsetDateTime,
        limit: u32,
    ) -> Result<Vec<ApprovalRecord>, StoreError> {
        // Expired is pending past its expiry; pending is pending before it.
        let (stored, expiry) = match status {
            None => (None, ""),
            Some(ApprovalStatus::Pending) => (Some("pending"), " AND expires_at > $2"),
            Some(ApprovalStatus::Expired) => (Some("pending"), " AND expires_at <= $2"),
            Some(decided) => (Some(decided.as_str()), ""),
        };
        let rows: Vec<ApprovalRow> = sqlx::query_as(&format!(
            "SELECT {} FROM approvals WHERE ($1 IS NULL OR status = $1){expiry} \
             ORDER BY requested_at DESC, id LIMIT $3",
            ApprovalRow::COLUMNS
        ))
        .bind(stored)
        .bind(now.unix_timestamp())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(ApprovalRecord::try_from).collect()
    }

    async fn decide_approval(&self, decided: &DecidedApproval<'_>) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE approvals SET status = $1, decided_by = $2, decided_by_name = $3, \
             decided_at = $4, comment = $5, args = $6 \
             WHERE id = $7 AND status = 'pending' AND expires_at > $4",
        )
        .bind(decided.decision.status().as_str())
        .bind(decided.by.id.as_str())
        .bind(decided.by.name.as_str())
        .bind(decided.at.unix_timestamp())
        .bind(decided.comment)
        .bind(json_text("approvals", decided.args)?)
        .bind(decided.id)
        .execute(&self.pool)
        .await?;
        Ok(B::rows_affected(&done) == 1)
    }

    async fn finish_approval(&self, id: &str, outcome: &ApprovalOutcome) -> Result<(), StoreError> {
        sqlx::query("UPDATE approvals SET outcome = $1 WHERE id = $2 AND outcome IS NULL")
            .bind(json_text("approvals", outcome)?)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn set_approval_notification(
        &self,
        id: &str,
        notification: &Notification,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE approvals SET notification = $1 WHERE id = $2")
            .bind(json_text("approvals", notification)?)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn prune_approvals(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM approvals WHERE requested_at < $1")
            .bind(before.unix_timestamp())
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done))
    }

    async fn insert_template(&self, template: &TemplateRecord) -> Result<(), StoreError> {
        let result = sqlx::query(&format!(
            "INSERT INTO templates ({}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            TemplateRow::COLUMNS
        ))
        .bind(template.id.as_str())
        .bind(template.name.as_str())
        .bind(template.description.as_str())
        .bind(template.scope.to_string())
        .bind(network_text(template.network))
        .bind(json_text("templates", &template.allowed_domains)?)
        .bind(template.env_text.as_str())
        .bind(template.setup_script.as_str())
        .bind(seconds_to_db(template.idle_timeout_s))
        .bind(seconds_to_db(template.max_lifetime_s))
        .bind(template.created_by.id.as_str())
        .bind(template.created_by.name.as_str())
        .bind(template.created_at.unix_timestamp())
        .bind(template.updated_at.unix_timestamp())
        .execute(&self.pool)
        .await;
        template_name_taken(result, &template.name).map(drop)
    }

    async fn template(&self, id: &str) -> Result<Option<TemplateRecord>, StoreError> {
        let row: Option<TemplateRow> = sqlx::query_as(&format!(
            "SELECT {} FROM templates WHERE id = $1",
            TemplateRow::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(TemplateRecord::try_from).transpose()
    }

    async fn template_by_name(&self, name: &str) -> Result<Option<TemplateRecord>, StoreError> {
        let row: Option<TemplateRow> = sqlx::query_as(&format!(
            "SELECT {} FROM templates WHERE name = $1",
            TemplateRow::COLUMNS
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        row.map(TemplateRecord::try_from).transpose()
    }

    async fn list_templates(&self) -> Result<Vec<TemplateRecord>, StoreError> {
        let rows: Vec<TemplateRow> = sqlx::query_as(&format!(
            "SELECT {} FROM templates ORDER BY name, id",
            TemplateRow::COLUMNS
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(TemplateRecord::try_from).collect()
    }

    async fn update_template(&self, template: &TemplateRecord) -> Result<(), StoreError> {
        let result = sqlx::query(
            "UPDATE templates SET name = $1, description = $2, network = $3, \
             allowed_domains = $4, env_text = $5, setup_script = $6, idle_timeout_s = $7, \
             max_lifetime_s = $8, updated_at = $9 WHERE id = $10",
        )
        .bind(template.name.as_str())
        .bind(template.description.as_str())
        .bind(network_text(template.network))
        .bind(json_text("templates", &template.allowed_domains)?)
        .bind(template.env_text.as_str())
        .bind(template.setup_script.as_str())
        .bind(seconds_to_db(template.idle_timeout_s))
        .bind(seconds_to_db(template.max_lifetime_s))
        .bind(template.updated_at.unix_timestamp())
        .bind(template.id.as_str())
        .execute(&self.pool)
        .await;
        let done = template_name_taken(result, &template.name)?;
        if B::rows_affected(&done) == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn delete_template(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM templates WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn insert_environment(&self, env: &EnvironmentRecord) -> Result<(), StoreError> {
        let table = "environments";
        let result = sqlx::query(&format!(
            "INSERT INTO environments ({}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            EnvironmentRow::COLUMNS
        ))
        .bind(env.id.as_str())
        .bind(env.name.as_str())
        .bind(env.description.as_str())
        .bind(env.env_type.as_str())
        .bind(json_text(table, &env.tags)?)
        .bind(env.scope.to_string())
        .bind(tier_text(env.tier))
        .bind(env.install_browser_tools)
        .bind(json_text(table, &env.policy)?)
        .bind(env.created_at.unix_timestamp())
        .bind(env.last_seen.map(OffsetDateTime::unix_timestamp))
        .bind(
            env.runner
                .as_ref()
                .map(|runner| json_text(table, runner))
                .transpose()?,
        )
        .execute(&self.pool)
        .await;
        name_taken(result, &env.name).map(drop)
    }

    async fn environment(&self, id: &str) -> Result<Option<EnvironmentRecord>, StoreError> {
        let row: Option<EnvironmentRow> = sqlx::query_as(&format!(
            "SELECT {} FROM environments WHERE id = $1",
            EnvironmentRow::COLUMNS
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(EnvironmentRecord::try_from).transpose()
    }

    async fn environment_by_name(
        &self,
        name: &str,
    ) -> Result<Option<EnvironmentRecord>, StoreError> {
        if name.is_empty() {
            return Ok(None);
        }
        let row: Option<EnvironmentRow> = sqlx::query_as(&format!(
            "SELECT {} FROM environments WHERE name = $1",
            EnvironmentRow::COLUMNS
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        row.map(EnvironmentRecord::try_from).transpose()
    }

    async fn list_environments(&self) -> Result<Vec<EnvironmentRecord>, StoreError> {
        let rows: Vec<EnvironmentRow> = sqlx::query_as(&format!(
            "SELECT {} FROM environments ORDER BY created_at, id",
            EnvironmentRow::COLUMNS
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(EnvironmentRecord::try_from).collect()
    }

    async fn update_environment(&self, env: &EnvironmentRecord) -> Result<(), StoreError> {
        let table = "environments";
        let result = sqlx::query(
            "UPDATE environments SET name = $1, description = $2, env_type = $3, tags = $4, \
             tier = $5, install_browser_tools = $6, policy = $7 WHERE id = $8",
        )
        .bind(env.name.as_str())
        .bind(env.description.as_str())
        .bind(env.env_type.as_str())
        .bind(json_text(table, &env.tags)?)
        .bind(tier_text(env.tier))
        .bind(env.install_browser_tools)
        .bind(json_text(table, &env.policy)?)
        .bind(env.id.as_str())
        .execute(&self.pool)
        .await;
        let done = name_taken(result, &env.name)?;
        if B::rows_affected(&done) == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn delete_environment(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM environments WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn fill_blank_name(
        &self,
        id: &str,
        name: &str,
        fallback: &str,
    ) -> Result<String, StoreError> {
        for candidate in [name, fallback] {
            let result =
                sqlx::query("UPDATE environments SET name = $1 WHERE id = $2 AND name = ''")
                    .bind(candidate)
                    .bind(id)
                    .execute(&self.pool)
                    .await;
            match result {
                Ok(_) => break,
                Err(error) if is_unique_violation(&error) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        let name: Option<String> =
            sqlx::query_scalar("SELECT name FROM environments WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        name.ok_or(StoreError::NotFound)
    }

    async fn record_seen(
        &self,
        id: &str,
        at: OffsetDateTime,
        runner: &RunnerInfo,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE environments SET last_seen = $1, runner = $2 WHERE id = $3")
            .bind(at.unix_timestamp())
            .bind(json_text("environments", runner)?)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn record_seen_batch(&self, seen: &[SeenRecord]) -> Result<(), StoreError> {
        if seen.is_empty() {
            return Ok(());
        }
        self.backend.record_seen_batch(&self.pool, seen).await
    }

    async fn rotate_token(
        &self,
        token: &TokenRecord,
        previous_valid_until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE registration_tokens SET valid_until = $1 \
             WHERE environment_id = $2 AND (valid_until IS NULL OR valid_until > $1)",
        )
        .bind(previous_valid_until.unix_timestamp())
        .bind(token.environment_id.as_str())
        .execute(&mut *tx)
        .await?;
        sqlx::query(&format!(
            "INSERT INTO registration_tokens ({}) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            TokenRow::COLUMNS
        ))
        .bind(token.id.as_str())
        .bind(token.environment_id.as_str())
        .bind(token.token_hash.as_str())
        .bind(token.hint.as_str())
        .bind(token.created_at.unix_timestamp())
        .bind(token.last_used_at.map(OffsetDateTime::unix_timestamp))
        .bind(token.valid_until.map(OffsetDateTime::unix_timestamp))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(B::rows_affected(&done) > 0)
    }

    async fn token_by_hash(&self, token_hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        let row: Option<TokenRow> = sqlx::query_as(&format!(
            "SELECT {} FROM registration_tokens WHERE token_hash = $1",
            TokenRow::COLUMNS
        ))
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(TokenRecord::from))
    }

    async fn touch_token(&self, id: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        sqlx::query("UPDATE registration_tokens SET last_used_at = $1 WHERE id = $2")
            .bind(at.unix_timestamp())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn claim_token(&self, id: &str, at: OffsetDateTime) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE registration_tokens SET last_used_at = $1 WHERE id = $2 AND last_used_at IS NULL",
        )
        .bind(at.unix_timestamp())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(B::rows_affected(&done) == 1)
    }

    async fn revoke_tokens(&self, environment_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM registration_tokens WHERE environment_id = $1")
            .bind(environment_id)
            .execute(&self.pool)
            .await?;
        Ok(B::rows_affected(&done))
    }

    async fn current_token(&self, environment_id: &str) -> Result<Option<TokenRecord>, StoreError> {
        let row: Option<TokenRow> = sqlx::query_as(&format!(
            "SELECT {} FROM registration_tokens \
             WHERE environment_id = $1 AND valid_until IS NULL \
             ORDER BY created_at DESC, {} DESC LIMIT 1",
            TokenRow::COLUMNS,
            B::INSERTION_ORDER
        ))
        .bind(environment_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(TokenRecord::from))
    }

    async fn claim_session(
        &self,
        environment_id: &str,
        holder: &str,
        session_id: &str,
        presence: &str,
        at: OffsetDateTime,
    ) -> Result<u64, StoreError> {
        let epoch: i64 = sqlx::query_scalar(
            "INSERT INTO runner_sessions \
             (environment_id, epoch, holder, session_id, presence, refreshed_at) \
             VALUES ($1, 1, $2, $3, $4, $5) \
             ON CONFLICT (environment_id) DO UPDATE SET epoch = runner_sessions.epoch + 1, \
             holder = excluded.holder, session_id = excluded.session_id, \
             presence = excluded.presence, heartbeat = '{}', refreshed_at = excluded.refreshed_at \
             RETURNING epoch",
        )
        .bind(environment_id)
        .bind(holder)
        .bind(session_id)
        .bind(presence)
        .bind(at.unix_timestamp())
        .fetch_one(&self.pool)
        .await?;
        Ok(epoch_from_db(epoch))
    }

    async fn session(&self, environment_id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let row: Option<SessionRow> = sqlx::query_as(&format!(
            "SELECT {} FROM runner_sessions WHERE environment_id = $1",
            SessionRow::COLUMNS
        ))
        .bind(environment_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(SessionRecord::from))
    }

    async fn release_session(&self, environment_id: &str, epoch: u64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE runner_sessions SET holder = NULL WHERE environment_id = $1 AND epoch = $2",
        )
        .bind(environment_id)
        .bind(epoch_to_db(epoch))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn refresh_sessions(
        &self,
        holder: &str,
        sessions: &[LeaseRefresh],
        at: OffsetDateTime,
    ) -> Result<Vec<String>, StoreError> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        self.backend
            .refresh_sessions(&self.pool, holder, sessions, at)
            .await
    }

    async fn begin_invocation(
        &self,
        call_id: &str,
        environment_id: &str,
        tool_name: &str,
        at: OffsetDateTime,
    ) -> Result<Option<InvocationRecord>, StoreError> {
        // Twice at most: an entry forgotten between the insert and the read
        // makes room for this one.
        for _ in 0..2 {
            let done = sqlx::query(
                "INSERT INTO invocations (call_id, environment_id, tool_name, state, created_at) \
                 VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT (call_id) DO NOTHING",
            )
            .bind(call_id)
            .bind(environment_id)
            .bind(tool_name)
            .bind(at.unix_timestamp())
            .execute(&self.pool)
            .await?;
            if B::rows_affected(&done) == 1 {
                return Ok(None);
            }
            if let Some(existing) = self.invocation(call_id).await? {
                return Ok(Some(existing));
            }
        }
        Err(corrupt(
            "invocations",
            format!("call {call_id:?} neither inserted nor found"),
        ))
    }

    async fn write_journal(&self, writes: &[JournalWrite]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        self.backend.write_journal(&self.pool, writes).await
    }

    async fn forget_pending_invocation(&self, call_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM invocations WHERE call_id = $1 AND state = 'pending'")
            .bind(call_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn invocation(&self, call_id: &str) -> Result<Option<InvocationRecord>, StoreError> {
        let row: Option<InvocationRow> = sqlx::query_as(&format!(
            "SELECT {} FROM invocations WHERE call_id = $1",
            InvocationRow::COLUMNS
        ))
        .bind(call_id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(InvocationRecord::try_from).transpose()
    }

    async fn prune_invocations(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM invocations WHERE finished_at IS NOT NULL AND finished_at < $1",
        )
        .bind(before.unix_timestamp())
        .execute(&self.pool)
        .await?;
        Ok(B::rows_affected(&done))
    }

    async fn journal_size(&self) -> Result<(u64, u64), StoreError> {
        let (bytes, finished): (i64, i64) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(LENGTH(result)), 0) AS BIGINT), \
             CAST(COUNT(finished_at) AS BIGINT) FROM invocations",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok((
            u64::try_from(bytes).unwrap_or(0),
            u64::try_from(finished).unwrap_or(0),
        ))
    }

    async fn prune_oldest_invocations(&self, count: u32) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM invocations WHERE call_id IN (SELECT call_id FROM invocations \
             WHERE finished_at IS NOT NULL ORDER BY finished_at, call_id LIMIT $1)",
        )
        .bind(i64::from(count))
        .execute(&self.pool)
        .await?;
        Ok(B::rows_affected(&done))
    }

    async fn append_audit(&self, records: &[AuditView<'_>]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        // On SQLite the writers' kept connection (its page cache stays
        // warm); see `Backend::writer`.
        let mut writer = self.backend.writer(&self.pool).await?;
        let mut tx = sqlx::Connection::begin(writer.connection()).await?;
        let (seq, hash, _pruned): (i64, String, i64) =
            sqlx::query_as(LOCK_AUDIT_HEAD).fetch_one(&mut *tx).await?;
        let chain = chain::link(u64::try_from(seq).unwrap_or(0), &hash, records);
        let Some(last) = chain.last() else {
            return Ok(());
        };
        let values: Vec<AuditRowValues<'_>> = records
            .iter()
            .zip(chain.iter())
            .map(|(record, linked)| AuditRowValues {
                seq: count_to_db(linked.seq),
                at_ms: record.at_ms,
                action: record.action.as_str(),
                actor_id: record.member_id,
                environment_id: record.environment_id,
                session_id: record.session_id,
                tool: record.tool,
                decision: record.decision.as_str(),
                entry: linked.entry,
                prev_hash: linked.prev_hash,
                hash: linked.hash,
            })
            .collect();
        // The backend's own way (SQLite's fast path), or else the simple
        // path: multi-row statements through sqlx.
        if !self.backend.insert_audit_rows(&mut tx, &values).await? {
            let mut rows = values.iter();
            for size in audit_chunk_sizes(values.len()) {
                let sql = audit_insert_text(size, B::POSITIONAL_PARAMETERS);
                let mut insert = sqlx::query(&sql);
                for row in rows.by_ref().take(size) {
                    insert = insert
                        .bind(row.seq)
                        .bind(row.at_ms)
                        .bind(row.action)
                        .bind(row.actor_id)
                        .bind(row.environment_id)
                        .bind(row.session_id)
                        .bind(row.tool)
                        .bind(row.decision)
                        .bind(row.entry)
                        .bind(row.prev_hash)
                        .bind(row.hash);
                }
                insert.execute(&mut *tx).await?;
            }
        }
        sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
            .bind(count_to_db(last.seq))
            .bind(last.hash)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        writer.keep();
        Ok(())
    }

    async fn audit_entries(&self, query: &AuditQuery) -> Result<Vec<StoredAudit>, StoreError> {
        let mut conditions: Vec<String> = Vec::new();
        let mut texts: Vec<&str> = Vec::new();
        let mut numbers: Vec<i64> = Vec::new();
        // Text filters first, then numbers: placeholders are numbered in
        // the order they are bound below.
        for (column, value) in [
            ("environment_id", query.environment_id.as_deref()),
            ("actor_id", query.actor_id.as_deref()),
            ("action", query.action.map(|action| action.as_str())),
            ("session_id", query.session_id.as_deref()),
            ("tool", query.tool.as_deref()),
        ] {
            if let Some(value) = value {
                texts.push(value);
                conditions.push(format!("{column} = ${}", texts.len()));
            }
        }
        for (condition, value) in [
            ("at_ms >=", query.since_ms),
            ("at_ms <", query.until_ms),
            (
                if query.descending { "seq <" } else { "seq >" },
                query.cursor.map(count_to_db),
            ),
        ] {
            if let Some(value) = value {
                numbers.push(value);
                conditions.push(format!("{condition} ${}", texts.len() + numbers.len()));
            }
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let sql = format!(
            "SELECT {} FROM audit_log {filter} ORDER BY seq {} LIMIT ${}",
            AuditRow::COLUMNS,
            if query.descending { "DESC" } else { "ASC" },
            texts.len() + numbers.len() + 1
        );
        let mut select = sqlx::query_as::<_, AuditRow>(&sql);
        for text in texts {
            select = select.bind(text);
        }
        for number in numbers {
            select = select.bind(number);
        }
        let rows = select
            .bind(i64::from(query.limit))
            .fetch_all(&self.pool)
            .await?;
        rows.into_iter().map(StoredAudit::try_from).collect()
    }

    async fn audit_head(&self) -> Result<AuditHead, StoreError> {
        let (seq, hash, pruned): (i64, String, i64) =
            sqlx::query_as("SELECT seq, hash, pruned_through FROM audit_head WHERE id = 1")
                .fetch_one(&self.pool)
                .await?;
        Ok(AuditHead {
            seq: u64::try_from(seq).unwrap_or(0),
            hash,
            pruned_through: u64::try_from(pruned).unwrap_or(0),
        })
    }

    async fn prune_audit(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let (_seq, _hash, pruned): (i64, String, i64) =
            sqlx::query_as(LOCK_AUDIT_HEAD).fetch_one(&mut *tx).await?;
        let newest_old: Option<i64> =
            sqlx::query_scalar("SELECT MAX(seq) FROM audit_log WHERE at_ms < $1")
                .bind(crate::audit::unix_ms(before))
                .fetch_one(&mut *tx)
                .await?;
        let Some(through) = newest_old.filter(|through| *through > pruned) else {
            return Ok(0);
        };
        let done = sqlx::query("DELETE FROM audit_log WHERE seq <= $1")
            .bind(through)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE audit_head SET pruned_through = $1 WHERE id = 1")
            .bind(through)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(B::rows_affected(&done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_appends_use_few_statement_shapes() {
        for count in [1usize, 2, 3, 7, 200, 1023, 1024, 1025, 5000] {
            let sizes: Vec<usize> = audit_chunk_sizes(count).collect();
            assert_eq!(
                sizes.iter().sum::<usize>(),
                count,
                "{count}: every row once"
            );
            assert!(
                sizes
                    .iter()
                    .all(|size| size.is_power_of_two() && *size <= AUDIT_ROWS_PER_INSERT),
                "{count}: {sizes:?}"
            );
            assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "largest first");
        }
    }

    #[test]
    fn an_audit_insert_has_a_placeholder_per_written_column() {
        assert_eq!(
            AuditRow::WRITTEN.split(',').count(),
            AuditRow::WRITTEN_WIDTH
        );
        let positional = audit_insert(2, true);
        assert_eq!(positional.matches('?').count(), 2 * AuditRow::WRITTEN_WIDTH);
        let numbered = audit_insert(2, false);
        assert!(numbered.ends_with(&format!("${})", 2 * AuditRow::WRITTEN_WIDTH)));
    }

    #[test]
    fn kept_audit_insert_texts_are_the_built_ones() {
        for positional in [true, false] {
            for rows in [1, 2, 3, 4, 32, 64, 65, 100] {
                assert_eq!(
                    audit_insert_text(rows, positional),
                    audit_insert(rows, positional),
                    "{rows} rows, positional {positional}"
                );
                // Read twice: the kept text the second time.
                assert_eq!(
                    audit_insert_text(rows, positional),
                    audit_insert(rows, positional)
                );
            }
        }
    }
}
