//! The PostgreSQL implementation of [`Store`], for several relays sharing
//! one database. Same tables as SQLite (see `migrations/postgres`); the
//! lease refresh of every session a relay holds is one batched statement.

use std::time::Duration;

use async_trait::async_trait;
use runner_proto::api::{RunnerInfo, Tier};
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::Row;
use time::OffsetDateTime;

use super::{
    corrupt, epoch_from_db, epoch_to_db, journal_upsert, parse_state, sql_state_rank, state_text,
    InvocationRecord, JournalWrite, LeaseRefresh, Member, NewMember, SeenRecord, SessionRecord,
    Store, StoreError, TokenRecord,
};
use crate::clock::from_unix;
use crate::environment::{EnvironmentRecord, Scope};

/// How long a query waits for a free pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to open one connection to the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections in the pool of one relay.
const MAX_CONNECTIONS: u32 = 16;

const ENVIRONMENT_COLUMNS: &str = "id, name, description, env_type, tags, scope, tier, \
     install_browser_tools, policy, created_at, last_seen, runner";
const TOKEN_COLUMNS: &str =
    "id, environment_id, token_hash, hint, created_at, last_used_at, valid_until";

/// A PostgreSQL-backed store.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

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
        Ok(Self { pool })
    }

    async fn teams_of(&self, member_id: &str) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT team_name FROM team_members WHERE member_id = $1 ORDER BY team_name",
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

fn environment_from_row(row: &PgRow) -> Result<EnvironmentRecord, StoreError> {
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

fn token_from_row(row: &PgRow) -> Result<TokenRecord, StoreError> {
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
const INVOCATION_COLUMNS: &str = "call_id, environment_id, tool_name, state, epoch, created_at, \
     finished_at, result, exit_code, error";

fn session_from_row(row: &PgRow) -> Result<SessionRecord, StoreError> {
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

fn invocation_from_row(row: &PgRow) -> Result<InvocationRecord, StoreError> {
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
impl Store for PostgresStore {
    fn shared(&self) -> bool {
        true
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
        sqlx::query("INSERT INTO members (id, name, is_admin, created_at) VALUES ($1, $2, $3, $4)")
            .bind(&id)
            .bind(&member.name)
            .bind(member.is_admin)
            .bind(at.unix_timestamp())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO api_keys (id, member_id, key_hash, hint, created_at) VALUES ($1, $2, $3, $4, $5)",
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
                sqlx::query_scalar("SELECT name FROM teams WHERE name = $1")
                    .bind(team)
                    .fetch_optional(&mut *tx)
                    .await?;
            if exists.is_none() {
                return Err(StoreError::UnknownTeam(team.clone()));
            }
            sqlx::query("INSERT INTO team_members (team_name, member_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
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
             JOIN members m ON m.id = k.member_id WHERE k.key_hash = $1",
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
            "INSERT INTO environments ({ENVIRONMENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
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
            "SELECT {ENVIRONMENT_COLUMNS} FROM environments WHERE id = $1"
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
            "SELECT {ENVIRONMENT_COLUMNS} FROM environments WHERE name = $1"
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
            "UPDATE environments SET name = $1, description = $2, env_type = $3, tags = $4, tier = $5, \
             install_browser_tools = $6, policy = $7 WHERE id = $8",
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
        let done = sqlx::query("DELETE FROM environments WHERE id = $1")
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
        let ids: Vec<&str> = seen.iter().map(|r| r.environment_id.as_str()).collect();
        let at: Vec<i64> = seen.iter().map(|r| r.at.unix_timestamp()).collect();
        let runners = seen
            .iter()
            .map(|r| json_text(&r.runner))
            .collect::<Result<Vec<String>, StoreError>>()?;
        sqlx::query(
            "UPDATE environments AS e SET last_seen = input.at, runner = input.runner \
             FROM UNNEST($1::text[], $2::bigint[], $3::text[]) AS input(id, at, runner) \
             WHERE e.id = input.id",
        )
        .bind(&ids)
        .bind(&at)
        .bind(&runners)
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
            "UPDATE registration_tokens SET valid_until = $1 \
             WHERE environment_id = $2 AND (valid_until IS NULL OR valid_until > $3)",
        )
        .bind(until)
        .bind(&token.environment_id)
        .bind(until)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query(&format!(
            "INSERT INTO registration_tokens ({TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
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
            "SELECT {TOKEN_COLUMNS} FROM registration_tokens WHERE token_hash = $1"
        ))
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(token_from_row)
        .transpose()
    }

    async fn touch_token(&self, id: &str, at: OffsetDateTime) -> Result<(), StoreError> {
        sqlx::query("UPDATE registration_tokens SET last_used_at = $1 WHERE id = $2")
            .bind(at.unix_timestamp())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn revoke_tokens(&self, environment_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM registration_tokens WHERE environment_id = $1")
            .bind(environment_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn current_token(&self, environment_id: &str) -> Result<Option<TokenRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {TOKEN_COLUMNS} FROM registration_tokens \
             WHERE environment_id = $1 AND valid_until IS NULL \
             ORDER BY created_at DESC, seq DESC LIMIT 1"
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
        sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM runner_sessions WHERE environment_id = $1"
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
        let ids: Vec<String> = sessions.iter().map(|s| s.environment_id.clone()).collect();
        let epochs: Vec<i64> = sessions.iter().map(|s| epoch_to_db(s.epoch)).collect();
        let heartbeats: Vec<String> = sessions.iter().map(|s| s.heartbeat.clone()).collect();
        let presences: Vec<Option<String>> = sessions.iter().map(|s| s.presence.clone()).collect();
        let kept: Vec<String> = sqlx::query_scalar(
            "UPDATE runner_sessions AS s SET refreshed_at = $1, heartbeat = input.heartbeat, \
             presence = COALESCE(input.presence, s.presence) \
             FROM UNNEST($2::text[], $3::bigint[], $4::text[], $5::text[]) \
             AS input(environment_id, epoch, heartbeat, presence) \
             WHERE s.environment_id = input.environment_id AND s.epoch = input.epoch AND s.holder = $6 \
             RETURNING s.environment_id",
        )
        .bind(at.unix_timestamp())
        .bind(&ids)
        .bind(&epochs)
        .bind(&heartbeats)
        .bind(&presences)
        .bind(holder)
        .fetch_all(&self.pool)
        .await?;
        let mut seen_ids = Vec::new();
        let mut seen_at = Vec::new();
        let mut seen_runner = Vec::new();
        for session in sessions {
            if let Some((when, runner)) = &session.seen {
                seen_ids.push(session.environment_id.clone());
                seen_at.push(when.unix_timestamp());
                seen_runner.push(json_text(runner)?);
            }
        }
        if !seen_ids.is_empty() {
            sqlx::query(
                "UPDATE environments AS e SET last_seen = input.at, runner = input.runner \
                 FROM UNNEST($1::text[], $2::bigint[], $3::text[]) AS input(id, at, runner) \
                 WHERE e.id = input.id",
            )
            .bind(&seen_ids)
            .bind(&seen_at)
            .bind(&seen_runner)
            .execute(&self.pool)
            .await?;
        }
        let kept: std::collections::HashSet<String> = kept.into_iter().collect();
        Ok(ids.into_iter().filter(|id| !kept.contains(id)).collect())
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
        // Two statements over arrays (creating and update-only entries), so
        // a batch costs two round trips however large it is. The batch
        // writer folds each call into one write: no call_id twice.
        let mut columns: [Columns; 2] = Default::default();
        for write in writes {
            columns[usize::from(write.create)].push(&write.entry)?;
        }
        let [update, create] = columns;
        let input = "UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], \
             $6::bigint[], $7::bigint[], $8::text[], $9::int4[], $10::text[]) \
             AS input(call_id, environment_id, tool_name, state, epoch, created_at, finished_at, \
             result, exit_code, error)";
        let create = (!create.call_id.is_empty()).then(|| {
            let statement = format!(
                "INSERT INTO invocations ({INVOCATION_COLUMNS}) SELECT * FROM {input} {}",
                journal_upsert()
            );
            (statement, create)
        });
        let update = (!update.call_id.is_empty()).then(|| {
            let statement = format!(
                "UPDATE invocations AS i SET state = input.state, \
                 tool_name = CASE WHEN i.tool_name = '' THEN input.tool_name ELSE i.tool_name END, \
                 epoch = COALESCE(i.epoch, input.epoch), finished_at = input.finished_at, \
                 result = input.result, exit_code = input.exit_code, error = input.error \
                 FROM {input} \
                 WHERE i.call_id = input.call_id AND i.environment_id = input.environment_id \
                 AND {} < {}",
                sql_state_rank("i.state"),
                sql_state_rank("input.state")
            );
            (statement, update)
        });
        match (create, update) {
            // One statement is atomic on its own: no BEGIN and COMMIT, two
            // round trips fewer (a batch is usually of one kind).
            (Some((statement, columns)), None) | (None, Some((statement, columns))) => {
                columns
                    .bind(sqlx::query(&statement))
                    .execute(&self.pool)
                    .await?;
            }
            (Some((create_sql, create)), Some((update_sql, update))) => {
                let mut tx = self.pool.begin().await?;
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

    async fn forget_pending_invocation(&self, call_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM invocations WHERE call_id = $1 AND state = 'pending'")
            .bind(call_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn invocation(&self, call_id: &str) -> Result<Option<InvocationRecord>, StoreError> {
        sqlx::query(&format!(
            "SELECT {INVOCATION_COLUMNS} FROM invocations WHERE call_id = $1"
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
            "DELETE FROM invocations WHERE finished_at IS NOT NULL AND finished_at < $1",
        )
        .bind(before.unix_timestamp())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}

/// Journal writes as column arrays, for one `UNNEST` statement.
#[derive(Default)]
struct Columns {
    call_id: Vec<String>,
    environment_id: Vec<String>,
    tool_name: Vec<String>,
    state: Vec<&'static str>,
    epoch: Vec<Option<i64>>,
    created_at: Vec<i64>,
    finished_at: Vec<Option<i64>>,
    result: Vec<Option<String>>,
    exit_code: Vec<Option<i32>>,
    error: Vec<Option<String>>,
}

impl Columns {
    fn push(&mut self, entry: &InvocationRecord) -> Result<(), StoreError> {
        let result = match entry.state {
            runner_proto::api::InvocationState::Done => {
                Some(serde_json::to_string(&entry.result).map_err(|e| corrupt("invocations", e))?)
            }
            _ => None,
        };
        self.call_id.push(entry.call_id.clone());
        self.environment_id.push(entry.environment_id.clone());
        self.tool_name.push(entry.tool_name.clone());
        self.state.push(state_text(entry.state));
        self.epoch.push(entry.epoch.map(epoch_to_db));
        self.created_at.push(entry.created_at.unix_timestamp());
        self.finished_at
            .push(entry.finished_at.map(OffsetDateTime::unix_timestamp));
        self.result.push(result);
        self.exit_code.push(entry.exit_code);
        self.error.push(entry.error.clone());
        Ok(())
    }

    fn bind(
        self,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments> {
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
    }
}
