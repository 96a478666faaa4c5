//! The audit log's entries, their hash chain and the digest of a call's
//! arguments: pure functions and types, no I/O. The batched writer is
//! [`crate::audit_writer`]; the rows live in the store (`audit_log`).
//!
//! docs/audit.md describes what is recorded and how the chain is checked.

pub mod chain;
mod pending;

pub use pending::{AuditView, PendingAudit, Text};

use runner_proto::audit::{AuditAction, AuditActor, AuditDecision, AuditEntry};
use serde_json::Value;
use time::OffsetDateTime;

use crate::canonical;
use crate::clock::rfc3339;

/// An entry as recorded, before the store puts it in the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// When it happened, to the millisecond (what the store keeps).
    pub at: OffsetDateTime,
    pub actor: AuditActor,
    pub action: AuditAction,
    pub environment_id: Option<String>,
    pub session_id: Option<String>,
    pub tool: Option<String>,
    pub call_id: Option<String>,
    pub target: Option<String>,
    pub args_digest: Option<String>,
    /// Canonical JSON of the (masked) arguments, only with
    /// `--audit-arguments`. Text, so that the hash covers exactly what is
    /// stored.
    pub args: Option<String>,
    pub decision: AuditDecision,
    pub code: Option<String>,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
    pub bytes_out: Option<u64>,
}

impl AuditRecord {
    /// An allowed `action` by `actor` at `at`; the other fields empty.
    pub fn new(at: OffsetDateTime, actor: AuditActor, action: AuditAction) -> Self {
        Self {
            at: truncate_to_millis(at),
            actor,
            action,
            environment_id: None,
            session_id: None,
            tool: None,
            call_id: None,
            target: None,
            args_digest: None,
            args: None,
            decision: AuditDecision::Allowed,
            code: None,
            exit_code: None,
            duration_ms: None,
            bytes_out: None,
        }
    }

    pub fn environment(mut self, id: &str) -> Self {
        self.environment_id = Some(id.to_owned());
        self
    }

    pub fn target(mut self, target: &str) -> Self {
        self.target = Some(target.to_owned());
        self
    }

    pub fn session(mut self, id: &str) -> Self {
        self.session_id = Some(id.to_owned());
        self
    }

    /// Refused (`Denied`) or failed, with the rule or error code.
    pub fn decided(mut self, decision: AuditDecision, code: &str) -> Self {
        self.decision = decision;
        self.code = Some(code.to_owned());
        self
    }

    /// `at` in Unix milliseconds, as stored.
    pub fn at_ms(&self) -> i64 {
        unix_ms(self.at)
    }
}

/// An entry as stored: the record, its place in the chain and its hashes.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAudit {
    pub seq: u64,
    pub record: AuditRecord,
    pub prev_hash: String,
    pub hash: String,
    pub format: RowFormat,
}

/// How a stored row keeps its fields, which decides how its hash is
/// computed ([`chain`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowFormat {
    /// Format 1 (rows written before format 2): every field in its own
    /// column.
    Columns,
    /// Format 2: the fields without a column in `text`, the stored
    /// `entry`, hashed as it is stored.
    Entry {
        text: String,
        /// The row is not what format 2 writes: a column it leaves empty
        /// holds a value, or `entry` is not its JSON. Only an edit does
        /// that.
        damaged: bool,
    },
}

impl StoredAudit {
    /// The API's view.
    pub fn to_api(&self) -> AuditEntry {
        let record = &self.record;
        AuditEntry {
            seq: self.seq,
            at: rfc3339(record.at),
            actor: record.actor.clone(),
            action: record.action,
            environment_id: record.environment_id.clone(),
            session_id: record.session_id.clone(),
            tool: record.tool.clone(),
            call_id: record.call_id.clone(),
            target: record.target.clone(),
            args_digest: record.args_digest.clone(),
            args: record
                .args
                .as_deref()
                .and_then(|text| serde_json::from_str::<Value>(text).ok()),
            decision: record.decision,
            code: record.code.clone(),
            exit_code: record.exit_code,
            duration_ms: record.duration_ms,
            bytes_out: record.bytes_out,
            prev_hash: self.prev_hash.clone(),
            hash: self.hash.clone(),
        }
    }
}

/// The chain's newest entry and what pruning removed before its oldest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditHead {
    /// Sequence number of the newest entry (0: none yet).
    pub seq: u64,
    /// Its hash ([`chain::GENESIS`] before the first entry).
    pub hash: String,
    /// Entries up to this sequence number were pruned (retention).
    pub pruned_through: u64,
}

/// Filters of an audit query (`GET /audit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub environment_id: Option<String>,
    pub actor_id: Option<String>,
    pub action: Option<AuditAction>,
    pub session_id: Option<String>,
    pub tool: Option<String>,
    /// Inclusive, Unix milliseconds.
    pub since_ms: Option<i64>,
    /// Exclusive, Unix milliseconds.
    pub until_ms: Option<i64>,
    /// Only entries after (ascending) or before (descending) this one.
    pub cursor: Option<u64>,
    pub descending: bool,
    pub limit: u32,
}

/// Unix milliseconds of a time.
pub fn unix_ms(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The time of Unix milliseconds (the epoch for one out of range).
pub fn from_unix_ms(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn truncate_to_millis(at: OffsetDateTime) -> OffsetDateTime {
    from_unix_ms(unix_ms(at))
}

/// A `User-Agent` as recorded: at most [`MAX_CLIENT_CHARS`] characters,
/// control characters replaced, so that a client cannot forge lines in a
/// terminal or a log.
pub fn client_name(user_agent: &str) -> Option<String> {
    // Most clients send a short printable ASCII name: kept as it is.
    let plain = user_agent.len() <= MAX_CLIENT_CHARS
        && user_agent
            .bytes()
            .all(|b| b.is_ascii_graphic() || b == b' ');
    if plain {
        let trimmed = user_agent.trim();
        return (!trimmed.is_empty()).then(|| trimmed.to_owned());
    }
    let cleaned: String = user_agent
        .chars()
        .take(MAX_CLIENT_CHARS)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let cleaned = cleaned.trim();
    (!cleaned.is_empty()).then(|| cleaned.to_owned())
}

/// Longest client name kept.
pub const MAX_CLIENT_CHARS: usize = 128;

/// Puts what the audit log keeps of a call's arguments into `record`:
/// their digest and, when `keep` is set, their masked canonical JSON.
pub fn write_args(record: &mut PendingAudit, args: &Value, keep: bool) {
    let digest = canonical::sha256_of(args);
    record.write(Text::ArgsDigest, |text| canonical::push_hex(text, &digest));
    if keep {
        record.set(
            Text::Args,
            &canonical::to_string(&canonical::mask_env(args)),
        );
    }
}

/// A record with every field set.
#[cfg(test)]
pub(crate) fn full_record() -> AuditRecord {
    let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a valid time");
    let actor = AuditActor {
        member_id: Some("mem_1".into()),
        name: Some("Ada \"the\" admin\n".into()),
        kind: Some("person".into()),
        key_id: Some("0123456789ab".into()),
        client: Some("runner/1.0".into()),
        source: Some("127.0.0.1".into()),
    };
    let mut record = AuditRecord::new(at, actor, AuditAction::ToolInvoke)
        .environment("env_1")
        .session("ses_1")
        .target("apr_1");
    record.tool = Some("shell".into());
    record.call_id = Some("call_1".into());
    record.args_digest = Some("ab".repeat(32));
    record.args = Some(r#"{"command":"true"}"#.into());
    record.decision = AuditDecision::Error;
    record.code = Some("runner_error".into());
    record.exit_code = Some(-1);
    record.duration_ms = Some(12);
    record.bytes_out = Some(34);
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_names_are_short_and_printable() {
        assert_eq!(
            client_name("runner/1.2 (linux)").as_deref(),
            Some("runner/1.2 (linux)")
        );
        assert_eq!(client_name("a\nb\u{1b}[31m").as_deref(), Some("a?b?[31m"));
        assert_eq!(
            client_name("x".repeat(500).as_str()).map(|s| s.len()),
            Some(128)
        );
        assert_eq!(client_name("  "), None);
    }

    #[test]
    fn milliseconds_round_trip() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789)
            .expect("a valid time");
        let record = AuditRecord::new(at, AuditActor::default(), AuditAction::ToolInvoke);
        assert_eq!(record.at_ms(), 1_700_000_000_123);
        assert_eq!(from_unix_ms(record.at_ms()), record.at);
    }
}
