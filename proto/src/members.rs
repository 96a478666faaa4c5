//! JSON bodies of the relay's member and team routes (`/members`, `/teams`)
//! beyond creation: reading them, team membership, default environments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sessions::MemberRef;

/// An environment a member or team points at by default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DefaultEnvironment {
    pub id: String,
    /// Empty once deleted.
    pub name: String,
    /// The environment was deleted: sessions that would use this default
    /// are refused (no runner tools) until a new default is set.
    pub deleted: bool,
}

/// `GET /members/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MemberView {
    pub id: String,
    pub name: String,
    /// `person` or `agent`.
    pub kind: String,
    pub admin: bool,
    pub teams: Vec<String>,
    #[serde(default)]
    pub default_environment: Option<DefaultEnvironment>,
    /// Whether sessions that name no environment can get runner tools:
    /// false when the default environment (the member's, else its first
    /// team's that has one) was deleted.
    pub has_runner_tools: bool,
    /// What is wrong, for people (e.g. the deleted default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `GET /teams/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TeamView {
    pub name: String,
    pub members: Vec<MemberRef>,
    #[serde(default)]
    pub default_environment: Option<DefaultEnvironment>,
    pub has_runner_tools: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `GET /teams`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TeamList {
    pub teams: Vec<String>,
}

/// `PATCH /members/{id}` and `PATCH /teams/{name}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetDefaultEnvironment {
    /// An environment id or name, or `null` to clear (sessions then go to
    /// the team's default, else `auto`).
    pub default_environment: Option<String>,
}

/// `POST /teams/{name}/members`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTeamMember {
    /// Member id, or a name only one member has.
    pub member: String,
}
