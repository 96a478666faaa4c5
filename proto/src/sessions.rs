//! JSON bodies of the relay's session routes (`/sessions`): an agent or CI
//! job asks for "auto", a named environment or a sandbox once, and every
//! call of the session then runs on the environment its first call locked.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::Status;

/// What a session asks for in `environment`: let the relay pick.
pub const AUTO: &str = "auto";
/// What a session asks for in `environment`: always a fresh sandbox.
pub const SANDBOX: &str = "sandbox";

/// `POST /sessions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// `auto`, `sandbox`, or an environment id or name. Absent: the agent's
    /// default environment, else its team's, else `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Tags `auto` prefers: an environment carrying all of them wins over
    /// one that does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::fields::schema::tags")]
    pub tags: Vec<String>,
    /// The agent (member id or name) the session works for, whose default
    /// environment applies; absent: the caller when it is an agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The template (id or name) that prepares the session's sandbox, for
    /// `sandbox` (and `auto`, should it get one). Absent: the default
    /// configuration (no network, no setup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// Whether a session still takes calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Takes calls.
    Open,
    /// Ended by `DELETE /sessions/{id}`.
    Ended,
    /// Unused for longer than its idle timeout.
    Expired,
}

impl SessionState {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Ended => "ended",
            Self::Expired => "expired",
        }
    }
}

/// A member as a session names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemberRef {
    pub id: String,
    pub name: String,
}

/// The environment a session is locked to, as it is now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionEnvironment {
    pub id: String,
    /// Empty once the environment was deleted.
    pub name: String,
    /// `None` once the environment was deleted.
    #[serde(default)]
    pub status: Option<Status>,
    /// Why the status is what it is (or that the environment was deleted).
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether the environment still exists.
    pub deleted: bool,
}

/// A session (`GET /sessions/{id}`, and the answer of `POST /sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Session {
    /// `ses_…`.
    pub id: String,
    pub state: SessionState,
    /// What was asked for after defaults: `auto`, `sandbox` or an
    /// environment id.
    pub requested: String,
    /// Where the request came from: `request`, `agent`, `team` or `auto`.
    pub requested_from: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub created_by: MemberRef,
    #[serde(default)]
    pub agent: Option<MemberRef>,
    /// The environment locked by the first call; `None` before it.
    #[serde(default)]
    pub environment: Option<SessionEnvironment>,
    /// Why that environment was chosen.
    #[serde(default)]
    pub selection_reason: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    #[serde(default)]
    pub locked_at: Option<String>,
    pub last_used_at: String,
    /// When the session expires if it stays unused (RFC 3339).
    pub expires_at: String,
    #[serde(default)]
    pub ended_at: Option<String>,
    pub idle_timeout_s: u64,
    /// The template its sandbox is prepared by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    /// The sandbox serving it, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxInfo>,
}

/// `GET /sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

/// Header of a session call's answer naming the environment it ran on.
pub const ENVIRONMENT_HEADER: &str = "x-runner-environment";
