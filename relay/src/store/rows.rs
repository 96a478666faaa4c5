//! How records sit in the tables, the same on every database: one row
//! struct a table (read by column name, so a query lists the columns in
//! any order), and the conversions of the values the queries bind. Times
//! are Unix seconds, JSON is text, epochs are signed 64-bit integers.

use runner_proto::api::{InvocationState, Tier};
use runner_proto::approvals::ApprovalStatus;
use runner_proto::sandbox::Network;
use sqlx::FromRow;

use super::{InvocationRecord, Member, MemberKind, SessionRecord, StoreError, TokenRecord};
use crate::approvals::ApprovalRecord;
use runner_proto::audit::{AuditAction, AuditActor, AuditDecision};

use crate::audit::chain;
use crate::audit::{from_unix_ms, AuditRecord, RowFormat, StoredAudit};
use crate::clock::from_unix;
use crate::environment::{EnvironmentRecord, Scope};
use crate::sandboxes::{self, SandboxRecord};
use crate::sessions::{Lock, MemberName, Requested, RequestedFrom, WorkSession};
use crate::templates::TemplateRecord;

/// A stored value that cannot be read back as what it should be.
pub fn corrupt(table: &'static str, message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        table,
        message: message.to_string(),
    }
}

/// A value as the JSON text its column stores.
pub fn json_text<T: serde::Serialize>(
    table: &'static str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| corrupt(table, e))
}

fn from_json<T: serde::de::DeserializeOwned>(
    table: &'static str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(table, e))
}

/// Epochs are stored as signed 64-bit integers; they never get near the
/// limit (one per connect), so the conversion saturates instead of failing.
pub fn epoch_to_db(epoch: u64) -> i64 {
    i64::try_from(epoch).unwrap_or(i64::MAX)
}

pub fn epoch_from_db(epoch: i64) -> u64 {
    u64::try_from(epoch).unwrap_or(0)
}

pub fn tier_text(tier: Tier) -> &'static str {
    match tier {
        Tier::Production => "production",
        Tier::Development => "development",
    }
}

pub fn state_text(state: InvocationState) -> &'static str {
    match state {
        InvocationState::Pending => "pending",
        InvocationState::Dispatched => "dispatched",
        InvocationState::Failed => "failed",
        InvocationState::Done => "done",
    }
}

fn parse_state(text: &str) -> Result<InvocationState, StoreError> {
    match text {
        "pending" => Ok(InvocationState::Pending),
        "dispatched" => Ok(InvocationState::Dispatched),
        "failed" => Ok(InvocationState::Failed),
        "done" => Ok(InvocationState::Done),
        other => Err(corrupt("invocations", format!("unknown state {other:?}"))),
    }
}

/// The `result` column of a journal entry: its JSON once the call is done,
/// NULL before.
pub fn result_text(entry: &InvocationRecord) -> Result<Option<String>, StoreError> {
    match entry.state {
        InvocationState::Done => json_text("invocations", &entry.result).map(Some),
        _ => Ok(None),
    }
}

/// A member found by API key, with the key's stored hash.
#[derive(FromRow)]
pub struct MemberRow {
    pub id: String,
    pub name: String,
    pub is_admin: bool,
    pub kind: String,
    pub default_environment: Option<String>,
}

impl MemberRow {
    /// Qualified by `m.`, the alias every member query gives `members`.
    pub const COLUMNS: &str = "m.id, m.name, m.is_admin, m.kind, m.default_environment";

    /// The member, with the team names read separately.
    pub fn into_member(self, teams: Vec<String>) -> Result<Member, StoreError> {
        Ok(Member {
            kind: MemberKind::parse(&self.kind)
                .ok_or_else(|| corrupt("members", format!("unknown kind {:?}", self.kind)))?,
            id: self.id,
            name: self.name,
            is_admin: self.is_admin,
            teams,
            default_environment: self.default_environment,
        })
    }
}

/// A member found by API key, with the key's stored hash.
#[derive(FromRow)]
pub struct KeyedMemberRow {
    #[sqlx(flatten)]
    pub member: MemberRow,
    pub key_hash: String,
}

/// A row of `work_sessions`.
#[derive(FromRow)]
pub struct WorkSessionRow {
    id: String,
    created_by: String,
    created_by_name: String,
    agent_id: Option<String>,
    agent_name: Option<String>,
    requested: String,
    requested_from: String,
    tags: String,
    environment_id: Option<String>,
    environment_name: Option<String>,
    selection_reason: Option<String>,
    locked_at: Option<i64>,
    created_at: i64,
    last_used_at: i64,
    idle_timeout_s: i64,
    ended_at: Option<i64>,
    template_id: Option<String>,
}

impl WorkSessionRow {
    pub const COLUMNS: &str = "id, created_by, created_by_name, agent_id, agent_name, \
         requested, requested_from, tags, environment_id, environment_name, selection_reason, \
         locked_at, created_at, last_used_at, idle_timeout_s, ended_at, template_id";
}

impl TryFrom<WorkSessionRow> for WorkSession {
    type Error = StoreError;

    fn try_from(row: WorkSessionRow) -> Result<Self, StoreError> {
        let table = "work_sessions";
        let lock = match (row.environment_id, row.locked_at) {
            (Some(environment_id), Some(at)) => Some(Lock {
                environment_id,
                environment_name: row.environment_name.unwrap_or_default(),
                reason: row.selection_reason.unwrap_or_default(),
                at: from_unix(at),
            }),
            _ => None,
        };
        Ok(WorkSession {
            id: row.id,
            created_by: MemberName {
                id: row.created_by,
                name: row.created_by_name,
            },
            agent: row.agent_id.map(|id| MemberName {
                id,
                name: row.agent_name.unwrap_or_default(),
            }),
            requested: Requested::parse(&row.requested),
            requested_from: RequestedFrom::parse(&row.requested_from).ok_or_else(|| {
                corrupt(table, format!("unknown origin {:?}", row.requested_from))
            })?,
            tags: from_json(table, &row.tags)?,
            lock,
            created_at: from_unix(row.created_at),
            last_used_at: from_unix(row.last_used_at),
            idle_timeout_s: u64::try_from(row.idle_timeout_s).unwrap_or(0),
            ended_at: row.ended_at.map(from_unix),
            template_id: row.template_id,
        })
    }
}

/// A row of `sandboxes`.
#[derive(FromRow)]
pub struct SandboxRow {
    id: String,
    session_id: String,
    deployment_of: Option<String>,
    host_environment_id: String,
    host_name: String,
    template_id: Option<String>,
    state: String,
    reason: Option<String>,
    setup: Option<String>,
    created_by: String,
    created_at: i64,
    ready_at: Option<i64>,
    ended_at: Option<i64>,
}

impl SandboxRow {
    pub const COLUMNS: &str = "id, session_id, deployment_of, host_environment_id, host_name, \
         template_id, state, reason, setup, created_by, created_at, ready_at, ended_at";
}

impl TryFrom<SandboxRow> for SandboxRecord {
    type Error = StoreError;

    fn try_from(row: SandboxRow) -> Result<Self, StoreError> {
        let table = "sandboxes";
        Ok(SandboxRecord {
            state: sandboxes::parse_state(&row.state)
                .ok_or_else(|| corrupt(table, format!("unknown state {:?}", row.state)))?,
            setup: row
                .setup
                .as_deref()
                .map(|text| from_json(table, text))
                .transpose()?,
            id: row.id,
            session_id: row.session_id,
            deployment_of: row.deployment_of,
            host_environment_id: row.host_environment_id,
            host_name: row.host_name,
            template_id: row.template_id,
            reason: row.reason,
            created_by: row.created_by,
            created_at: from_unix(row.created_at),
            ready_at: row.ready_at.map(from_unix),
            ended_at: row.ended_at.map(from_unix),
        })
    }
}

/// A row of `environments`.
#[derive(FromRow)]
pub struct EnvironmentRow {
    id: String,
    name: String,
    description: String,
    env_type: String,
    tags: String,
    scope: String,
    tier: String,
    install_browser_tools: bool,
    policy: String,
    created_at: i64,
    last_seen: Option<i64>,
    runner: Option<String>,
}

impl EnvironmentRow {
    pub const COLUMNS: &str = "id, name, description, env_type, tags, scope, tier, \
         install_browser_tools, policy, created_at, last_seen, runner";
}

impl TryFrom<EnvironmentRow> for EnvironmentRecord {
    type Error = StoreError;

    fn try_from(row: EnvironmentRow) -> Result<Self, StoreError> {
        let table = "environments";
        Ok(EnvironmentRecord {
            id: row.id,
            name: row.name,
            description: row.description,
            env_type: row.env_type,
            tags: from_json(table, &row.tags)?,
            scope: Scope::parse(&row.scope).map_err(|e| corrupt(table, e))?,
            tier: match row.tier.as_str() {
                "development" => Tier::Development,
                "production" => Tier::Production,
                other => return Err(corrupt(table, format!("unknown tier {other:?}"))),
            },
            install_browser_tools: row.install_browser_tools,
            policy: from_json(table, &row.policy)?,
            created_at: from_unix(row.created_at),
            last_seen: row.last_seen.map(from_unix),
            runner: row.runner.map(|text| from_json(table, &text)).transpose()?,
        })
    }
}

/// A row of `templates`.
#[derive(FromRow)]
pub struct TemplateRow {
    id: String,
    name: String,
    description: String,
    scope: String,
    network: String,
    allowed_domains: String,
    env_text: String,
    setup_script: String,
    idle_timeout_s: i64,
    max_lifetime_s: i64,
    created_by: String,
    created_by_name: String,
    created_at: i64,
    updated_at: i64,
}

impl TemplateRow {
    /// In the order the insert binds them.
    pub const COLUMNS: &str = "id, name, description, scope, network, allowed_domains, \
         env_text, setup_script, idle_timeout_s, max_lifetime_s, created_by, created_by_name, \
         created_at, updated_at";
}

/// A network setting as its column stores it.
pub fn network_text(network: Network) -> &'static str {
    network.as_str()
}

impl TryFrom<TemplateRow> for TemplateRecord {
    type Error = StoreError;

    fn try_from(row: TemplateRow) -> Result<Self, StoreError> {
        let table = "templates";
        let network = [Network::None, Network::AllowAll, Network::Allowlist]
            .into_iter()
            .find(|network| network.as_str() == row.network)
            .ok_or_else(|| corrupt(table, format!("unknown network {:?}", row.network)))?;
        let entries = crate::templates::dotenv::parse_entries(&row.env_text)
            .map_err(|error| corrupt(table, format!("env_text of {}: {error}", row.id)))?;
        Ok(TemplateRecord {
            id: row.id,
            name: row.name,
            description: row.description,
            scope: Scope::parse(&row.scope).map_err(|e| corrupt(table, e))?,
            network,
            allowed_domains: from_json(table, &row.allowed_domains)?,
            env_text: row.env_text,
            entries,
            setup_script: row.setup_script,
            idle_timeout_s: u64::try_from(row.idle_timeout_s).map_err(|e| corrupt(table, e))?,
            max_lifetime_s: u64::try_from(row.max_lifetime_s).map_err(|e| corrupt(table, e))?,
            created_by: MemberName {
                id: row.created_by,
                name: row.created_by_name,
            },
            created_at: from_unix(row.created_at),
            updated_at: from_unix(row.updated_at),
        })
    }
}

/// A row of `registration_tokens`.
#[derive(FromRow)]
pub struct TokenRow {
    id: String,
    environment_id: String,
    token_hash: String,
    hint: String,
    created_at: i64,
    last_used_at: Option<i64>,
    valid_until: Option<i64>,
}

impl TokenRow {
    pub const COLUMNS: &str =
        "id, environment_id, token_hash, hint, created_at, last_used_at, valid_until";
}

impl From<TokenRow> for TokenRecord {
    fn from(row: TokenRow) -> Self {
        TokenRecord {
            id: row.id,
            environment_id: row.environment_id,
            token_hash: row.token_hash,
            hint: row.hint,
            created_at: from_unix(row.created_at),
            last_used_at: row.last_used_at.map(from_unix),
            valid_until: row.valid_until.map(from_unix),
        }
    }
}

/// A row of `runner_sessions`.
#[derive(FromRow)]
pub struct SessionRow {
    environment_id: String,
    epoch: i64,
    holder: Option<String>,
    session_id: String,
    presence: String,
    heartbeat: String,
    refreshed_at: i64,
}

impl SessionRow {
    pub const COLUMNS: &str =
        "environment_id, epoch, holder, session_id, presence, heartbeat, refreshed_at";
}

impl From<SessionRow> for SessionRecord {
    fn from(row: SessionRow) -> Self {
        SessionRecord {
            environment_id: row.environment_id,
            epoch: epoch_from_db(row.epoch),
            holder: row.holder,
            session_id: row.session_id,
            presence: row.presence,
            heartbeat: row.heartbeat,
            refreshed_at: from_unix(row.refreshed_at),
        }
    }
}

/// A row of `invocations`, the call journal.
#[derive(FromRow)]
pub struct InvocationRow {
    call_id: String,
    environment_id: String,
    tool_name: String,
    state: String,
    epoch: Option<i64>,
    created_at: i64,
    finished_at: Option<i64>,
    result: Option<String>,
    exit_code: Option<i32>,
    error: Option<String>,
    error_code: Option<String>,
}

impl InvocationRow {
    /// In the order the journal's batch statements bind them.
    pub const COLUMNS: &str = "call_id, environment_id, tool_name, state, epoch, created_at, \
         finished_at, result, exit_code, error, error_code";
}

impl TryFrom<InvocationRow> for InvocationRecord {
    type Error = StoreError;

    fn try_from(row: InvocationRow) -> Result<Self, StoreError> {
        Ok(InvocationRecord {
            call_id: row.call_id,
            environment_id: row.environment_id,
            tool_name: row.tool_name,
            state: parse_state(&row.state)?,
            epoch: row.epoch.map(epoch_from_db),
            created_at: from_unix(row.created_at),
            finished_at: row.finished_at.map(from_unix),
            result: row
                .result
                .map(|text| from_json("invocations", &text))
                .transpose()?
                .unwrap_or_default(),
            exit_code: row.exit_code,
            error: row.error,
            error_code: row.error_code,
        })
    }
}

/// A row of `approvals`.
#[derive(FromRow)]
pub struct ApprovalRow {
    id: String,
    call_id: String,
    status: String,
    environment_id: String,
    environment_name: String,
    session_id: Option<String>,
    tool: String,
    args: String,
    timeout_s: i64,
    call_sha256: String,
    rule: String,
    requested_by: String,
    requested_by_name: String,
    requested_at: i64,
    expires_at: i64,
    decided_by: Option<String>,
    decided_by_name: Option<String>,
    decided_at: Option<i64>,
    comment: Option<String>,
    outcome: Option<String>,
    notification: Option<String>,
}

impl ApprovalRow {
    pub const COLUMNS: &str = "id, call_id, status, environment_id, environment_name, \
         session_id, tool, args, timeout_s, call_sha256, rule, requested_by, requested_by_name, \
         requested_at, expires_at, decided_by, decided_by_name, decided_at, comment, outcome, \
         notification";
}

impl TryFrom<ApprovalRow> for ApprovalRecord {
    type Error = StoreError;

    fn try_from(row: ApprovalRow) -> Result<Self, StoreError> {
        let table = "approvals";
        let stored_status = ApprovalStatus::parse(&row.status)
            .filter(|status| *status != ApprovalStatus::Expired)
            .ok_or_else(|| corrupt(table, format!("unknown status {:?}", row.status)))?;
        Ok(ApprovalRecord {
            id: row.id,
            call_id: row.call_id,
            stored_status,
            environment_id: row.environment_id,
            environment_name: row.environment_name,
            session_id: row.session_id,
            tool: row.tool,
            args: from_json(table, &row.args)?,
            timeout_s: u64::try_from(row.timeout_s).map_err(|e| corrupt(table, e))?,
            call_sha256: row.call_sha256,
            rule: row.rule,
            requested_by: MemberName {
                id: row.requested_by,
                name: row.requested_by_name,
            },
            requested_at: from_unix(row.requested_at),
            expires_at: from_unix(row.expires_at),
            decided_by: row.decided_by.map(|id| MemberName {
                id,
                name: row.decided_by_name.unwrap_or_default(),
            }),
            decided_at: row.decided_at.map(from_unix),
            comment: row.comment,
            outcome: row
                .outcome
                .as_deref()
                .map(|text| from_json(table, text))
                .transpose()?,
            notification: row
                .notification
                .as_deref()
                .map(|text| from_json(table, text))
                .transpose()?,
        })
    }
}

/// A row of `audit_log`.
#[derive(FromRow)]
pub struct AuditRow {
    seq: i64,
    at_ms: i64,
    action: String,
    actor_id: Option<String>,
    actor_name: Option<String>,
    actor_kind: Option<String>,
    key_id: Option<String>,
    client: Option<String>,
    source: Option<String>,
    environment_id: Option<String>,
    session_id: Option<String>,
    tool: Option<String>,
    call_id: Option<String>,
    target: Option<String>,
    args_digest: Option<String>,
    args: Option<String>,
    decision: String,
    code: Option<String>,
    exit_code: Option<i32>,
    duration_ms: Option<i64>,
    bytes_out: Option<i64>,
    prev_hash: String,
    hash: String,
    entry: Option<String>,
}

impl AuditRow {
    /// Every column, read.
    pub const COLUMNS: &str = "seq, at_ms, action, actor_id, actor_name, actor_kind, key_id, \
         client, source, environment_id, session_id, tool, call_id, target, args_digest, args, \
         decision, code, exit_code, duration_ms, bytes_out, prev_hash, hash, entry";
    /// The columns a format 2 row is written with, in the order
    /// [`super::sql_store`]'s append binds them (the others stay NULL).
    pub const WRITTEN: &str = "seq, at_ms, action, actor_id, environment_id, session_id, tool, \
         decision, entry, prev_hash, hash";
    /// How many [`Self::WRITTEN`] names.
    pub const WRITTEN_WIDTH: usize = 11;
}

/// One format 2 row, in [`AuditRow::WRITTEN`] order.
#[derive(Debug, Clone, Copy)]
pub struct AuditRowValues<'a> {
    pub seq: i64,
    pub at_ms: i64,
    pub action: &'a str,
    pub actor_id: Option<&'a str>,
    pub environment_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub tool: Option<&'a str>,
    pub decision: &'a str,
    pub entry: &'a str,
    pub prev_hash: &'a str,
    pub hash: &'a str,
}

/// An unsigned count as stored (saturating: durations and byte counts
/// never get near the limit).
pub fn count_to_db(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

impl TryFrom<AuditRow> for StoredAudit {
    type Error = StoreError;

    fn try_from(row: AuditRow) -> Result<Self, StoreError> {
        let table = "audit_log";
        let action = AuditAction::parse(&row.action)
            .ok_or_else(|| corrupt(table, format!("unknown action {:?}", row.action)))?;
        let decision = AuditDecision::parse(&row.decision)
            .ok_or_else(|| corrupt(table, format!("unknown decision {:?}", row.decision)))?;
        let mut record = AuditRecord::new(
            from_unix_ms(row.at_ms),
            AuditActor {
                member_id: row.actor_id,
                ..AuditActor::default()
            },
            action,
        );
        record.environment_id = row.environment_id;
        record.session_id = row.session_id;
        record.tool = row.tool;
        record.decision = decision;
        let format = match row.entry {
            // Format 2: the other columns are left empty.
            Some(text) => {
                let mut damaged = row.actor_name.is_some()
                    || row.actor_kind.is_some()
                    || row.key_id.is_some()
                    || row.client.is_some()
                    || row.source.is_some()
                    || row.call_id.is_some()
                    || row.target.is_some()
                    || row.args_digest.is_some()
                    || row.args.is_some()
                    || row.code.is_some()
                    || row.exit_code.is_some()
                    || row.duration_ms.is_some()
                    || row.bytes_out.is_some();
                if !chain::fill_from_entry(&text, &mut record) {
                    damaged = true;
                }
                RowFormat::Entry { text, damaged }
            }
            None => {
                let actor = &mut record.actor;
                actor.name = row.actor_name;
                actor.kind = row.actor_kind;
                actor.key_id = row.key_id;
                actor.client = row.client;
                actor.source = row.source;
                record.call_id = row.call_id;
                record.target = row.target;
                record.args_digest = row.args_digest;
                record.args = row.args;
                record.code = row.code;
                record.exit_code = row.exit_code;
                record.duration_ms = row.duration_ms.map(|ms| u64::try_from(ms).unwrap_or(0));
                record.bytes_out = row.bytes_out.map(|n| u64::try_from(n).unwrap_or(0));
                RowFormat::Columns
            }
        };
        Ok(StoredAudit {
            seq: u64::try_from(row.seq).unwrap_or(0),
            record,
            prev_hash: row.prev_hash,
            hash: row.hash,
            format,
        })
    }
}
