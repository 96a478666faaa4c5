//! Approvals: a call to a tool that needs a person's approval, stored until
//! someone allowed to decide approves or denies it (docs/approvals.md).
//!
//! This module holds what an approval is and the rules that do not need the
//! store or the network: the hash that binds the approved call (canonical
//! JSON and `env` masking are `crate::canonical`'s, shared with the audit
//! log). Who may decide is in `access`;
//! routes and the run of an approved call in `http::approvals`; the webhook
//! in `webhook`.

pub mod waiters;

use runner_proto::approvals::{ApprovalOutcome, ApprovalStatus, Notification};
use serde_json::Value;
use time::OffsetDateTime;

use crate::canonical;
use crate::sessions::MemberName;

pub use waiters::ApprovalWaiters;

/// What an approver is shown instead of a value of the `env` argument.
pub use crate::canonical::MASK;

/// Longest decision comment kept.
pub const MAX_COMMENT_CHARS: usize = 1000;

/// A stored approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRecord {
    pub id: String,
    /// The id the call runs under once approved.
    pub call_id: String,
    /// As stored: pending, approved or denied. See [`Self::status`].
    pub stored_status: ApprovalStatus,
    pub environment_id: String,
    pub environment_name: String,
    pub session_id: Option<String>,
    pub tool: String,
    /// In full while pending (the call needs them); masked once decided.
    pub args: Value,
    pub timeout_s: u64,
    /// [`call_hash`] of the call as requested.
    pub call_sha256: String,
    pub rule: String,
    pub requested_by: MemberName,
    pub requested_at: OffsetDateTime,
    pub expires_at: OffsetDateTime,
    pub decided_by: Option<MemberName>,
    pub decided_at: Option<OffsetDateTime>,
    pub comment: Option<String>,
    pub outcome: Option<ApprovalOutcome>,
    pub notification: Option<Notification>,
}

impl ApprovalRecord {
    /// The status at `now`: a pending approval past its expiry is expired
    /// (and counts as denied).
    pub fn status(&self, now: OffsetDateTime) -> ApprovalStatus {
        match self.stored_status {
            ApprovalStatus::Pending if now >= self.expires_at => ApprovalStatus::Expired,
            status => status,
        }
    }

    /// Nothing more will change at `now`: refused (denied, expired), or
    /// approved and its call ended.
    pub fn settled(&self, now: OffsetDateTime) -> bool {
        self.status(now).refused() || self.outcome.is_some()
    }

    /// Whether the stored call is still the one that was asked for.
    pub fn hash_matches(&self) -> bool {
        let hash = call_hash(
            &self.environment_id,
            &self.tool,
            &self.args,
            self.timeout_s,
            &self.call_id,
        );
        crate::secret::hashes_match(&hash, &self.call_sha256)
    }
}

/// The decision a person makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

impl Decision {
    /// The status an approval gets.
    pub fn status(self) -> ApprovalStatus {
        match self {
            Self::Approve => ApprovalStatus::Approved,
            Self::Deny => ApprovalStatus::Denied,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
        }
    }
}

/// SHA-256 (hex) of the exact call: what an approval binds. The arguments
/// go in canonically (object keys sorted at every level), so the same call
/// always hashes the same whatever order its JSON had.
pub fn call_hash(
    environment_id: &str,
    tool: &str,
    args: &Value,
    timeout_s: u64,
    call_id: &str,
) -> String {
    let call = serde_json::json!({
        "v": 1,
        "environment_id": environment_id,
        "tool": tool,
        "args": args,
        "timeout_s": timeout_s,
        "call_id": call_id,
    });
    canonical::sha256_hex_of(&call)
}

/// A comment as kept: trimmed, at most [`MAX_COMMENT_CHARS`] characters.
pub fn comment(text: Option<&str>) -> Option<String> {
    let text = text?.trim();
    (!text.is_empty()).then(|| text.chars().take(MAX_COMMENT_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_binds_every_part() {
        let a = json!({"command": "ls", "env": {"A": "1", "B": "2"}});
        let b: Value = serde_json::from_str(r#"{"env": {"B": "2", "A": "1"}, "command": "ls"}"#)
            .expect("json");
        let hash = |args: &Value, timeout, call| call_hash("env_1", "shell", args, timeout, call);
        assert_eq!(hash(&a, 60, "c"), hash(&b, 60, "c"));
        let changed = json!({"command": "ls -a", "env": {"A": "1", "B": "2"}});
        assert_ne!(hash(&a, 60, "c"), hash(&changed, 60, "c"));
        assert_ne!(hash(&a, 60, "c"), hash(&a, 61, "c"));
        assert_ne!(hash(&a, 60, "c"), hash(&a, 60, "d"));
        assert_ne!(
            hash(&a, 60, "c"),
            call_hash("env_2", "shell", &a, 60, "c"),
            "the environment is bound"
        );
        assert_eq!(hash(&a, 60, "c").len(), 64);
    }

    #[test]
    fn env_values_are_masked_and_nothing_else() {
        let args = json!({"command": "deploy", "env": {"TOKEN": "s3cret", "N": 1}});
        let shown = canonical::mask_env(&args);
        assert_eq!(
            shown,
            json!({"command": "deploy", "env": {"TOKEN": MASK, "N": MASK}})
        );
        assert!(!shown.to_string().contains("s3cret"));
        assert_eq!(
            canonical::mask_env(&json!({"env": "A=b"})),
            json!({"env": MASK})
        );
        assert_eq!(
            canonical::mask_env(&json!({"path": "x"})),
            json!({"path": "x"})
        );
    }

    #[test]
    fn pending_turns_expired_at_its_expiry() {
        let at = OffsetDateTime::from_unix_timestamp(1_000).expect("time");
        let record = ApprovalRecord {
            id: "apr_1".into(),
            call_id: "c".into(),
            stored_status: ApprovalStatus::Pending,
            environment_id: "env_1".into(),
            environment_name: "box".into(),
            session_id: None,
            tool: "shell".into(),
            args: json!({}),
            timeout_s: 60,
            call_sha256: call_hash("env_1", "shell", &json!({}), 60, "c"),
            rule: "r".into(),
            requested_by: MemberName {
                id: "m".into(),
                name: "m".into(),
            },
            requested_at: at,
            expires_at: at + time::Duration::seconds(600),
            decided_by: None,
            decided_at: None,
            comment: None,
            outcome: None,
            notification: None,
        };
        assert!(record.hash_matches());
        assert_eq!(record.status(at), ApprovalStatus::Pending);
        assert_eq!(
            record.status(at + time::Duration::seconds(600)),
            ApprovalStatus::Expired
        );
        let mut tampered = record.clone();
        tampered.args = json!({"command": "rm -rf /"});
        assert!(!tampered.hash_matches());
    }
}
