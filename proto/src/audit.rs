//! JSON bodies of the relay's audit log (`GET /audit`): who did what, from
//! where, with which outcome. Entries are chained by hash (each holds the
//! previous one's), so a changed or deleted row is detected by
//! `runner-relay admin audit verify`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most entries one `GET /audit` page holds.
pub const MAX_AUDIT_PAGE: u32 = 1000;
/// Entries a page holds when `limit` is absent.
pub const DEFAULT_AUDIT_PAGE: u32 = 100;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum AuditAction {
    /// A tool call (`invoke-tool`, directly or through a session), whatever
    /// its outcome.
    #[serde(rename = "tool.invoke")]
    ToolInvoke,
    /// A registration token made for an environment that had none.
    #[serde(rename = "token.generate")]
    TokenGenerate,
    /// A registration token made while an older one was still valid.
    #[serde(rename = "token.rotate")]
    TokenRotate,
    /// Every registration token of an environment revoked.
    #[serde(rename = "token.revoke")]
    TokenRevoke,
    #[serde(rename = "environment.create")]
    EnvironmentCreate,
    #[serde(rename = "environment.update")]
    EnvironmentUpdate,
    #[serde(rename = "environment.delete")]
    EnvironmentDelete,
    /// A member (and its API key) created.
    #[serde(rename = "member.create")]
    MemberCreate,
    /// A member's default environment set or cleared.
    #[serde(rename = "member.update")]
    MemberUpdate,
    /// A member's API keys revoked (`runner-relay admin revoke-key`).
    #[serde(rename = "member.key_revoke")]
    MemberKeyRevoke,
    #[serde(rename = "team.create")]
    TeamCreate,
    /// A team's default environment set or cleared.
    #[serde(rename = "team.update")]
    TeamUpdate,
    #[serde(rename = "team.member_add")]
    TeamMemberAdd,
    #[serde(rename = "team.member_remove")]
    TeamMemberRemove,
    #[serde(rename = "session.create")]
    SessionCreate,
    #[serde(rename = "session.end")]
    SessionEnd,
    /// A sandbox started for a session (`error` with `code` when it could
    /// not: `no_sandbox_host`, `sandbox_setup_failed`, …); `target` is its
    /// host.
    #[serde(rename = "sandbox.start")]
    SandboxStart,
    /// A sandbox destroyed; `code` says why (`session_ended`, `stopped`).
    #[serde(rename = "sandbox.stop")]
    SandboxStop,
    /// An API request with a missing or invalid API key.
    #[serde(rename = "auth.failed")]
    AuthFailed,
    /// A runner registration or connect with a bad registration token.
    #[serde(rename = "runner.auth_failed")]
    RunnerAuthFailed,
    /// A runner connected (welcomed); `target` is its host name.
    #[serde(rename = "runner.connect")]
    RunnerConnect,
    /// A runner's connection ended; `code` says why (`connection_lost`,
    /// `revoked`, `replaced`, `going_away`, …).
    #[serde(rename = "runner.disconnect")]
    RunnerDisconnect,
    /// A connected runner's heartbeat says it is degraded (its executor
    /// probe fails, or calls wait for an executor); `code` says which.
    #[serde(rename = "runner.degraded")]
    RunnerDegraded,
    /// Its heartbeat no longer says so.
    #[serde(rename = "runner.recovered")]
    RunnerRecovered,
    /// A call asked for a person's approval.
    #[serde(rename = "approval.request")]
    ApprovalRequest,
    /// An approval approved, denied or expired.
    #[serde(rename = "approval.decide")]
    ApprovalDecide,
    /// A sandbox template created; `target` is its id.
    #[serde(rename = "template.create")]
    TemplateCreate,
    /// A sandbox template changed; `target` is its id.
    #[serde(rename = "template.update")]
    TemplateUpdate,
    /// A sandbox template deleted; `target` is its id.
    #[serde(rename = "template.delete")]
    TemplateDelete,
}

impl AuditAction {
    /// Every action, for help texts and filters.
    pub const ALL: [AuditAction; 29] = [
        Self::ToolInvoke,
        Self::TokenGenerate,
        Self::TokenRotate,
        Self::TokenRevoke,
        Self::EnvironmentCreate,
        Self::EnvironmentUpdate,
        Self::EnvironmentDelete,
        Self::MemberCreate,
        Self::MemberUpdate,
        Self::MemberKeyRevoke,
        Self::TeamCreate,
        Self::TeamUpdate,
        Self::TeamMemberAdd,
        Self::TeamMemberRemove,
        Self::SessionCreate,
        Self::SessionEnd,
        Self::SandboxStart,
        Self::SandboxStop,
        Self::AuthFailed,
        Self::RunnerAuthFailed,
        Self::RunnerConnect,
        Self::RunnerDisconnect,
        Self::RunnerDegraded,
        Self::RunnerRecovered,
        Self::ApprovalRequest,
        Self::ApprovalDecide,
        Self::TemplateCreate,
        Self::TemplateUpdate,
        Self::TemplateDelete,
    ];

    /// The wire name, e.g. `tool.invoke`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ToolInvoke => "tool.invoke",
            Self::TokenGenerate => "token.generate",
            Self::TokenRotate => "token.rotate",
            Self::TokenRevoke => "token.revoke",
            Self::EnvironmentCreate => "environment.create",
            Self::EnvironmentUpdate => "environment.update",
            Self::EnvironmentDelete => "environment.delete",
            Self::MemberCreate => "member.create",
            Self::MemberUpdate => "member.update",
            Self::MemberKeyRevoke => "member.key_revoke",
            Self::TeamCreate => "team.create",
            Self::TeamUpdate => "team.update",
            Self::TeamMemberAdd => "team.member_add",
            Self::TeamMemberRemove => "team.member_remove",
            Self::SessionCreate => "session.create",
            Self::SessionEnd => "session.end",
            Self::SandboxStart => "sandbox.start",
            Self::SandboxStop => "sandbox.stop",
            Self::AuthFailed => "auth.failed",
            Self::RunnerAuthFailed => "runner.auth_failed",
            Self::RunnerConnect => "runner.connect",
            Self::RunnerDisconnect => "runner.disconnect",
            Self::RunnerDegraded => "runner.degraded",
            Self::RunnerRecovered => "runner.recovered",
            Self::ApprovalRequest => "approval.request",
            Self::ApprovalDecide => "approval.decide",
            Self::TemplateCreate => "template.create",
            Self::TemplateUpdate => "template.update",
            Self::TemplateDelete => "template.delete",
        }
    }

    /// The action with this wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == text)
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditDecision {
    /// Done (for a call: relayed, and the runner answered without error).
    Allowed,
    /// Refused by the relay (policy, authentication); `code` says which rule.
    Denied,
    /// Failed (the runner reported an error, went away, or the request was
    /// invalid); `code` says how.
    Error,
    /// The call did not finish within its timeout.
    Timeout,
}

impl AuditDecision {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Error => "error",
            Self::Timeout => "timeout",
        }
    }

    /// The decision with this wire name.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Allowed, Self::Denied, Self::Error, Self::Timeout]
            .into_iter()
            .find(|decision| decision.as_str() == text)
    }
}

/// Who acted, and from where. Never a secret: the API key appears as its
/// id (the first 12 hex digits of the SHA-256 the store keeps of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditActor {
    /// Member id; absent for a failed authentication and for the operator
    /// using `runner-relay admin` on the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `person`, `agent`, or `operator` (`runner-relay admin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Which of the member's API keys: 12 hex digits of its stored hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The client's `User-Agent`, shortened and without control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The peer's IP address (a load balancer's, behind one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One audit entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditEntry {
    /// Position in the chain: 1, 2, 3… without gaps.
    pub seq: u64,
    /// When it happened (RFC 3339, milliseconds).
    pub at: String,
    pub actor: AuditActor,
    pub action: AuditAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    /// The work session a call went through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The call's id (`GET /invocations/{call_id}` has its result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// What was acted on besides the environment: a member id, a team name,
    /// an approval id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Hex SHA-256 of the call's arguments as canonical JSON (keys sorted,
    /// no spaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_digest: Option<String>,
    /// The arguments themselves, only with `serve --audit-arguments`, the
    /// values of the `env` argument masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Value>,
    pub decision: AuditDecision,
    /// The rule or error code behind the decision, e.g. `tool_not_allowed`,
    /// `timeout`, `invalid_api_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Bytes of tool output relayed to the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_out: Option<u64>,
    /// The previous entry's `hash`.
    pub prev_hash: String,
    /// Hex SHA-256 over this entry's fields and `prev_hash`.
    pub hash: String,
}

/// `GET /audit`: one page of entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditPage {
    pub entries: Vec<AuditEntry>,
    /// Pass as `cursor` (with the same filters and order) for the next
    /// page. In ascending order it is always given: entries appended later
    /// come after it. In descending order, absent after the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
