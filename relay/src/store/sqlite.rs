//! The SQLite implementation of [`Store`]: one file, WAL mode so that
//! `runner-relay admin` can write while the server runs.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use runner_proto::api::{RunnerInfo, Tier};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
};
use sqlx::Row;
use time::OffsetDateTime;

use super::{Member, NewMember, Store, StoreError, TokenRecord};
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
}

impl SqliteStore {
    /// Opens (creating if missing) the database and runs migrations.
    pub async fn open(database_url: &str) -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str(database_url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
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

fn corrupt(table: &'static str, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        table,
        message: message.to_string(),
    }
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

fn json_text<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| corrupt("environments", e))
}

#[async_trait]
impl Store for SqliteStore {
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
}
