//! JSON bodies of the relay's approval routes (`/approvals`): a call to a
//! tool that needs a person's approval waits for one instead of being
//! refused, when its caller asks (`"on_approval": "wait"`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sessions::MemberRef;

/// What `invoke-tool` does when the tool needs a person's approval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnApproval {
    /// Refuse with 403 `approval_required` (nobody is there to approve).
    #[default]
    Refuse,
    /// Ask for an approval: 202 with an [`ApprovalTicket`], or, with
    /// `approval_wait_s`, the call's answer when it is approved in time.
    Wait,
}

impl OnApproval {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refuse => "refuse",
            Self::Wait => "wait",
        }
    }
}

/// Default time an approval stays open: expiry counts as denied.
pub const DEFAULT_APPROVAL_TTL_S: u64 = 600;
/// Longest `approval_wait_s` and `?wait=` a request may hold.
pub const MAX_APPROVAL_WAIT_S: u64 = 300;

/// Where an approval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// Approved: the stored call was sent (exactly once); its answer is in
    /// `outcome` once it ends.
    Approved,
    /// Denied by a person: the call never ran.
    Denied,
    /// Nobody decided in time; counts as denied: the call never ran.
    Expired,
}

impl ApprovalStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
        }
    }

    /// The status a query string or a stored row names.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "approved" => Some(Self::Approved),
            "denied" => Some(Self::Denied),
            "expired" => Some(Self::Expired),
            _ => None,
        }
    }

    /// Denied or expired: the call never runs.
    pub fn refused(self) -> bool {
        matches!(self, Self::Denied | Self::Expired)
    }
}

/// `202 Accepted` answer of an `invoke-tool` that asked for an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalTicket {
    pub approval_id: String,
    /// The id the call runs under once approved (`GET /invocations/{call_id}`).
    pub call_id: String,
    pub status: ApprovalStatus,
    /// RFC 3339; an approval not decided by then counts as denied.
    pub expires_at: String,
    /// One sentence for people: who may decide, and how.
    pub message: String,
}

/// `POST /approvals/{id}/approve` and `/deny`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    /// Why, for the record (at most 1000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// An approval, as its requester and approvers see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    pub id: String,
    pub call_id: String,
    pub status: ApprovalStatus,
    pub environment_id: String,
    pub environment_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub tool: String,
    /// The call's arguments in full, except the values of `env`, masked.
    pub args: Value,
    pub timeout_s: u64,
    /// SHA-256 (hex) of the exact call: environment, tool, arguments,
    /// timeout and call id. The call that runs after approval has this hash.
    pub call_sha256: String,
    /// The rule that asked for the approval.
    pub rule: String,
    pub requested_by: MemberRef,
    pub requested_at: String,
    pub expires_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<MemberRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// After approval: the call's answer, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<ApprovalOutcome>,
    /// The organisation's approval webhook, when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification: Option<Notification>,
}

impl Approval {
    /// Nothing more will change: refused, or approved and the call ended.
    pub fn settled(&self) -> bool {
        self.status.refused() || self.outcome.is_some()
    }
}

/// How an approved call ended: the fields of an `invoke-tool` answer, or
/// the error that ended it without one (runner gone, timeout).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalOutcome {
    #[serde(default)]
    pub result: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The tool's error, as in an `invoke-tool` answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Set when the call ended without the runner's answer: `timeout`,
    /// `runner_disconnected`, `runner_not_connected`, or a policy refusal
    /// code when the environment's policy changed before the approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    pub finished_at: String,
}

/// Delivery of the approval webhook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Notification {
    pub state: DeliveryState,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Where a webhook delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Being tried (with backoff).
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Every attempt failed; `last_error` says why.
    Failed,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "delivered" => Some(Self::Delivered),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// `GET /approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalList {
    pub approvals: Vec<Approval>,
}

/// The body the approval webhook posts (signed: see docs/approvals.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalWebhook {
    /// `approval.requested`.
    pub event: String,
    /// One line a chat tool can post as is.
    pub text: String,
    pub approval_id: String,
    pub environment_id: String,
    pub environment_name: String,
    pub tool: String,
    /// The shell command, for `shell` calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub rule: String,
    pub requested_by: MemberRef,
    pub expires_at: String,
    /// Where a person reads and decides it (the relay's public URL).
    pub link: String,
}
