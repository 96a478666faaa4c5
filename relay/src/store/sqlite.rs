//! The SQLite implementation of [`Store`]: one file, WAL mode so that
//! `runner-relay admin` can write while the server runs.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use runner_proto::api::{RunnerInfo, Tier};
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Row, Sqlite};
use time::OffsetDateTime;

use super::sqlite_journal::{self as journal, INVOCATION_COLUMNS};
use super::{
    corrupt, epoch_from_db, epoch_to_db, parse_state, InvocationRecord, JournalWrite, LeaseRefresh,
    Member, NewMember, SeenRecord, SessionRecord, Store, StoreError, TokenRecord,
};
use crate::clock::from_unix;
use crate::environment::{EnvironmentRecord, Scope};

/// How long a writer waits for another one (the server, an admin command)
/// to finish before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections in the pool; SQLite serialises writers anyway.
const MAX_CONNECTIONS: u32 = 8;

const ENVIRONMENT_COLUMNS: &str = "id, name, description, env_type, tags, scope, tier, \
     install_browser_tools, policy, created_at, last_seen, runner";
const TOKEN_COLUMNS: &str =
    "id, environment_id, token_hash, hint, created_at, last_used_at, valid_until";

/// A SQLite-backed store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The journal writer's own connection, kept between batches. A pool
    /// hands out its idle connections in turn, and a SQLite connection
    /// that finds the file changed by another one since its last use
    /// drops its whole page cache and reads the pages again: with three
    /// connections, nearly every batch did.
    journal: Arc<tokio::sync::Mutex<Option<PoolConnection<Sqlite>>>>,
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
            // WAL + NORMAL: commits don't wait for an fsync (measured: 2-2.6x
            // the call throughput, see BENCHMARKS.md); the database stays
            // consistent on a crash, and an OS crash can lose only the last
            // moments of heartbeats and journal entries.
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
        Ok(Self {
            pool,
            journal: Arc::default(),
        })
    }

    async fn teams_of(&self, member_id: &str) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT team_name FROM team_members WHERE member_id = ? ORDER BY team_name",
        )
        .bind(member_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                row.try_get::<String, _>("team_name")
                    .map_err(StoreError::from)
            })
            .collect()
    }
}

fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(db) if db.is_unique_violation())
}

fn tier_text(tier: Tier) -> &'static str {
    match tier {
        Tier::Production => "production",
        Tier::Development => "development",
    }
}

fn environment_from_row(row: &SqliteRow) -> Result<EnvironmentRecord, StoreError> {
    let table = "environments";
    let tags: String = row.try_get("tags")?;
    let policy: String = row.try_get("policy")?;
    let runner: Option<String> = row.try_get("runner")?;
    let scope: String = row.try_get("scope")?;
    let tier: String = row.try_get("tier")?;
    Ok(EnvironmentRecord {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        env_type: row.try_get("env_type")?,
        tags: serde_json::from_str(&tags).map_err(|e| corrupt(table, e))?,
        scope: Scope::parse(&scope).map_err(|e| corrupt(table, e))?,
        tier: match tier.as_str() {
            "development" => Tier::Development,
            "production" => Tier::Production,
            other => return Err(corrupt(table, format!("unknown tier {other:?}"))),
        },
        install_browser_tools: row.try_get("install_browser_tools")?,
        policy: serde_json::from_str(&policy).map_err(|e| corrupt(table, e))?,
        created_at: from_unix(row.try_get("created_at")?),
        last_seen: row.try_get::<Option<i64>, _>("last_seen")?.map(from_unix),
        runner: runner
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| corrupt(table, e))?,
    })
}

fn token_from_row(row: &SqliteRow) -> Result<TokenRecord, StoreError> {
    Ok(TokenRecord {
        id: row.try_get("id")?,
        environment_id: row.try_get("environment_id")?,
        token_hash: row.try_get("token_hash")?,
        hint: row.try_get("hint")?,
        created_at: from_unix(row.try_get("created_at")?),
        last_used_at: row
            .try_get::<Option<i64>, _>("last_used_at")?
            .map(from_unix),
        valid_until: row.try_get::<Option<i64>, _>("valid_until")?.map(from_unix),
    })
}

const SESSION_COLUMNS: &str =
    "environment_id, epoch, holder, session_id, presence, heartbeat, refreshed_at";
fn session_from_row(row: &SqliteRow) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        environment_id: row.try_get("environment_id")?,
        epoch: epoch_from_db(row.try_get("epoch")?),
        holder: row.try_get("holder")?,
        session_id: row.try_get("session_id")?,
        presence: row.try_get("presence")?,
        heartbeat: row.try_get("heartbeat")?,
        refreshed_at: from_unix(row.try_get("refreshed_at")?),
    })
}

fn invocation_from_row(row: &SqliteRow) -> Result<InvocationRecord, StoreError> {
    let result: Option<String> = row.try_get("result")?;
    let state: String = row.try_get("state")?;
    Ok(InvocationRecord {
        call_id: row.try_get("call_id")?,
        environment_id: row.try_get("environment_id")?,
        tool_name: row.try_get("tool_name")?,
        state: parse_state(&state)?,
        epoch: row.try_get::<Option<i64>, _>("epoch")?.map(epoch_from_db),
        created_at: from_unix(row.try_get("created_at")?),
        finished_at: row.try_get::<Option<i64>, _>("finished_at")?.map(from_unix),
        result: result
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| corrupt("invocations", e))?
            .unwrap_or_default(),
        exit_code: row.try_get("exit_code")?,
        error: row.try_get("error")?,
    })
}

fn json_text<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| corrupt("environments", e))
}

#[async_trait]
impl Store for SqliteStore {
    fn shared(&self) -> bool {
        // One relay per file; `runner-relay admin` only adds members.
        false
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
            "INSERT INTO teams (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
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
        sqlx::query("INSERT INTO members (id, name, is_admin, created_at) VALUES (?, ?, ?, ?)")
            .bind(&id)
            .bind(&member.name)
            .bind(member.is_admin)
            .bind(at.unix_timestamp())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO api_keys (id, member_id, key_hash, hint, created_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(format!("key_{}", uuid::Uuid::new_v4().simple()))
        .bind(&id)
        .bind(key_hash)
        .bind(key_hint)
        .bind(at.unix_timestamp())
        .execute(&mut *tx)
        .await?;
        for team in &member.teams {
            let exists: Option<String> =
                sqlx::query_scalar("SELECT name FROM teams WHERE name = ?")
                    .bind(team)
                    .fetch_optional(&mut *tx)
                    .await?;
            if exists.is_none() {
                return Err(StoreError::UnknownTeam(team.clone()));
            }
            sqlx::query("INSERT OR IGNORE INTO team_members (team_name, member_id) VALUES (?, ?)")
                .bind(team)
                .bind(&id)
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
        })
    }

    async fn member_by_key_hash(
        &self,
        key_hash: &str,
    ) -> Result<Option<(Member, String)>, StoreError> {
        let row = sqlx::query(
            "SELECT m.id, m.name, m.is_admin, k.key_hash FROM api_keys k \
             JOIN members m ON m.id = k.member_id WHERE k.key_hash = ?",
        )
        .bind(key_hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let id: String = row.try_get("id")?;
        let teams = self.teams_of(&id).await?;
        Ok(Some((
            Member {
                id,
                name: row.try_get("name")?,
                is_admin: row.try_get("is_admin")?,
                teams,
            },
            row.try_get("key_hash")?,
        )))
    }

    async fn insert_environment(&self, env: &EnvironmentRecord) -> Result<(), StoreError> {
        let result = sqlx::query(&format!(
            "INSERT INTO environments ({ENVIRONMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ))
        .bind(&env.id)
        .bind(&env.name)
        .bind(&env.description)
        .bind(&env.env_type)
        .bind(json_text(&env.tags)?)
        .bind(env.scope.to_string())
        .bind(tier_text(env.tier))
        .bind(env.install_browser_tools)
        .bind(json_text(&env.policy)?)
        .bind(env.created_at.unix_timestamp())
        .bind(env.last_seen.map(OffsetDateTime::unix_timestamp))
        .bind(env.runner.as_ref().map(json_text).transpose()?)
        .execute(&self.pool)
        .await;
        match result {
            Ok(_) => Ok(()),
            Err(error) if is_unique_violation(&error) => {
                Err(StoreError::NameTaken(env.name.clone()))
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn environment(&self, id: &str) -> Result<Option<EnvironmentRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {ENVIRONMENT_COLUMNS} FROM environments WHERE id = ?"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(environment_from_row)
        .transpose()
    }

    async fn environment_by_name(
        &self,
        name: &str,
    ) -> Result<Option<EnvironmentRecord>, StoreError> {
        if name.is_empty() {
            return Ok(None);
        }
        sqlx::query(&format!(
            "SELECT {ENVIRONMENT_COLUMNS} FROM environments WHERE name = ?"
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(environment_from_row)
        .transpose()
    }

    async fn list_environments(&self) -> Result<Vec<EnvironmentRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {ENVIRONMENT_COLUMNS} FROM environments ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(environment_from_row)
        .collect()
    }

    async fn update_environment(&self, env: &EnvironmentRecord) -> Result<(), StoreError> {
        let result = sqlx::query(
            "UPDATE environments SET name = ?, description = ?, env_type = ?, tags = ?, tier = ?, \
             install_browser_tools = ?, policy = ? WHERE id = ?",
        )
        .bind(&env.name)
        .bind(&env.description)
        .bind(&env.env_type)
        .bind(json_text(&env.tags)?)
        .bind(tier_text(env.tier))
        .bind(env.install_browser_tools)
        .bind(json_text(&env.policy)?)
        .bind(&env.id)
        .execute(&self.pool)
        .await;
        match result {
            Ok(done) if done.rows_affected() == 0 => Err(StoreError::NotFound),
            Ok(_) => Ok(()),
            Err(error) if is_unique_violation(&error) => {
                Err(StoreError::NameTaken(env.name.clone()))
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn delete_environment(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM environments WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn fill_blank_name(
        &self,
        id: &str,
        name: &str,
        fallback: &str,
    ) -> Result<String, StoreError> {
        for candidate in [name, fallback] {
            let result = sqlx::query("UPDATE environments SET name = ? WHERE id = ? AND name = ''")
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
        let name: Option<String> = sqlx::query_scalar("SELECT name FROM environments WHERE id = ?")
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
        sqlx::query("UPDATE environments SET last_seen = ?, runner = ? WHERE id = ?")
            .bind(at.unix_timestamp())
            .bind(json_text(runner)?)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn record_seen_batch(&self, seen: &[SeenRecord]) -> Result<(), StoreError> {
        if seen.is_empty() {
            return Ok(());
        }
        // One statement for the whole batch (rows as a JSON array).
        let rows = seen
            .iter()
            .map(|record| {
                Ok(serde_json::json!([
                    record.environment_id,
                    record.at.unix_timestamp(),
                    json_text(&record.runner)?
                ]))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        sqlx::query(
            "UPDATE environments SET last_seen = input.at, runner = input.runner \
             FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS at, \
             json_extract(value, '$[2]') AS runner FROM json_each(?1)) AS input \
             WHERE environments.id = input.id",
        )
        .bind(serde_json::Value::Array(rows).to_string())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn rotate_token(
        &self,
        token: &TokenRecord,
        previous_valid_until: OffsetDateTime,
    ) -> Result<bool, StoreError> {
        let until = previous_valid_until.unix_timestamp();
        let mut tx = self.pool.begin().await?;
        let replaced = sqlx::query(
            "UPDATE registration_tokens SET valid_until = ? \
             WHERE environment_id = ? AND (valid_until IS NULL OR valid_until > ?)",
        )
        .bind(until)
        .bind(&token.environment_id)
        .bind(until)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query(&format!(
            "INSERT INTO registration_tokens ({TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ))
        .bind(&token.id)
        .bind(&token.environment_id)
        .bind(&token.token_hash)
        .bind(&token.hint)
        .bind(token.created_at.unix_timestamp())
        .bind(token.last_used_at.map(OffsetDateTime::unix_timestamp))
        .bind(token.valid_until.map(OffsetDateTime::unix_timestamp))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(replaced > 0)
    }

    async fn token_by_hash(&self, token_hash: &str) -> Result<Option<TokenRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {TOKEN_COLUMNS} FROM registration_tokens WHERE token_hash = ?"
        ))
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(token_from_row)
        .transpose()
    }

    async fn touch_token(&self, id: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        sqlx::query("UPDATE registration_tokens SET last_used_at = ? WHERE id = ?")
            .bind(at.unix_timestamp())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn revoke_tokens(&self, environment_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM registration_tokens WHERE environment_id = ?")
            .bind(environment_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn current_token(&self, environment_id: &str) -> Result<Option<TokenRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {TOKEN_COLUMNS} FROM registration_tokens \
             WHERE environment_id = ? AND valid_until IS NULL \
             ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ))
        .bind(environment_id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(token_from_row)
        .transpose()
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
            "INSERT INTO runner_sessions (environment_id, epoch, holder, session_id, presence, refreshed_at) \
             VALUES (?, 1, ?, ?, ?, ?) \
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
        sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM runner_sessions WHERE environment_id = ?"
        ))
        .bind(environment_id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(session_from_row)
        .transpose()
    }

    async fn release_session(&self, environment_id: &str, epoch: u64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE runner_sessions SET holder = NULL WHERE environment_id = ? AND epoch = ?",
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
        let mut lost = Vec::new();
        let mut tx = self.pool.begin().await?;
        for session in sessions {
            let done = sqlx::query(
                "UPDATE runner_sessions SET refreshed_at = ?, heartbeat = ?, \
                 presence = COALESCE(?, presence) \
                 WHERE environment_id = ? AND epoch = ? AND holder = ?",
            )
            .bind(at.unix_timestamp())
            .bind(&session.heartbeat)
            .bind(&session.presence)
            .bind(&session.environment_id)
            .bind(epoch_to_db(session.epoch))
            .bind(holder)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                lost.push(session.environment_id.clone());
            }
            if let Some((seen, runner)) = &session.seen {
                sqlx::query("UPDATE environments SET last_seen = ?, runner = ? WHERE id = ?")
                    .bind(seen.unix_timestamp())
                    .bind(json_text(runner)?)
                    .bind(&session.environment_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(lost)
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
                 VALUES (?, ?, ?, 'pending', ?) ON CONFLICT (call_id) DO NOTHING",
            )
            .bind(call_id)
            .bind(environment_id)
            .bind(tool_name)
            .bind(at.unix_timestamp())
            .execute(&self.pool)
            .await?;
            if done.rows_affected() == 1 {
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
        if statements.is_empty() {
            return Ok(());
        }
        let mut held = self.journal.lock().await;
        let mut connection = match held.take() {
            Some(connection) => connection,
            None => self.pool.acquire().await?,
        };
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
        // Kept only after a success: a connection that failed goes back to
        // the pool (which closes it if broken), and the next batch takes
        // another.
        if written.is_ok() {
            *held = Some(connection);
        }
        Ok(written?)
    }

    async fn forget_pending_invocation(&self, call_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM invocations WHERE call_id = ? AND state = 'pending'")
            .bind(call_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn invocation(&self, call_id: &str) -> Result<Option<InvocationRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {INVOCATION_COLUMNS} FROM invocations WHERE call_id = ?"
        ))
        .bind(call_id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(invocation_from_row)
        .transpose()
    }

    async fn prune_invocations(&self, before: OffsetDateTime) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM invocations WHERE finished_at IS NOT NULL AND finished_at < ?",
        )
        .bind(before.unix_timestamp())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::store::sqlite_journal;

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
        assert!(store.journal.lock().await.is_some(), "kept after a success");

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
            store.journal.lock().await.is_none(),
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
        assert!(store.journal.lock().await.is_some());
        for (call_id, kept) in [("a", true), ("b", false), ("c", true)] {
            let found = store.invocation(call_id).await.expect("read").is_some();
            assert_eq!(found, kept, "{call_id}");
        }
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
        let held = store.journal.lock().await;
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
