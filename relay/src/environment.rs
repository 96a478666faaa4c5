//! The environment model (SPEC §2): the record the store keeps, its scope,
//! the tier's default policy, and validation of user-supplied fields.

use runner_proto::api::{self, RunnerInfo, Tier};
use runner_proto::fields::{self, Text};
use runner_proto::sandbox::{DESTROY_TOOL, START_TOOL};
use runner_proto::ws::{Policy, ToolAccess};
use time::OffsetDateTime;

use crate::clock::rfc3339;

/// Longest environment name, in characters.
pub const MAX_NAME_CHARS: usize = match fields::ENVIRONMENT_NAME.max_chars {
    Some(max) => max,
    None => usize::MAX,
};

pub use runner_proto::tools::DEFAULT_PRODUCTION_TOOLS;

/// Who may act on an environment: the whole organisation or one team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Usable by every member, managed by organisation admins.
    Shared,
    /// Usable and managed by the members of this team.
    Team(String),
}

impl Scope {
    /// Parses `shared` or `team:<name>`.
    pub fn parse(text: &str) -> Result<Self, InvalidField> {
        match text {
            "shared" => Ok(Self::Shared),
            _ => match text.strip_prefix("team:") {
                Some(team) if fields::MEMBER_NAME.check(team).is_ok() => {
                    Ok(Self::Team(team.to_owned()))
                }
                _ => Err(InvalidField::new(
                    "scope",
                    format!("scope {text:?} must be \"shared\" or \"team:<name>\""),
                )),
            },
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Shared => f.write_str("shared"),
            Self::Team(team) => write!(f, "team:{team}"),
        }
    }
}

/// A field of a request that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidField {
    /// The field's name in the request.
    pub field: &'static str,
    /// Why, for people.
    pub message: String,
}

impl InvalidField {
    fn new(field: &'static str, message: String) -> Self {
        Self { field, message }
    }
}

/// An environment as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentRecord {
    pub id: String,
    pub name: String,
    pub description: String,
    pub env_type: String,
    pub tags: Vec<String>,
    pub scope: Scope,
    pub tier: Tier,
    pub install_browser_tools: bool,
    pub policy: Policy,
    pub created_at: OffsetDateTime,
    /// Time of the last hello or heartbeat.
    pub last_seen: Option<OffsetDateTime>,
    /// The runner that connected last.
    pub runner: Option<RunnerInfo>,
}

impl EnvironmentRecord {
    /// The API's view of this record.
    pub fn to_api(&self) -> api::Environment {
        api::Environment {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            env_type: self.env_type.clone(),
            tags: self.tags.clone(),
            scope: self.scope.to_string(),
            tier: self.tier,
            install_browser_tools: self.install_browser_tools,
            policy: self.policy.clone(),
            created_at: rfc3339(self.created_at),
            last_seen: self.last_seen.map(rfc3339),
            status: None,
        }
    }

    /// The short random tail of the id, appended to a hostname that is
    /// already taken as a name.
    pub fn id_suffix(&self) -> &str {
        let start = self.id.len().saturating_sub(6);
        self.id.get(start..).unwrap_or(&self.id)
    }
}

/// A new environment id: `env_` + 32 hex digits.
pub fn new_environment_id() -> String {
    format!("env_{}", uuid::Uuid::new_v4().simple())
}

/// The policy a new environment of this tier starts with (SPEC §4).
pub fn default_policy(tier: Tier) -> Policy {
    match tier {
        Tier::Production => Policy {
            tools: ToolAccess::List {
                tools: DEFAULT_PRODUCTION_TOOLS.map(str::to_owned).to_vec(),
            },
            file_paths: Vec::new(),
            approval_required: Vec::new(),
        },
        Tier::Development => Policy {
            tools: ToolAccess::All,
            file_paths: vec!["*".to_owned()],
            approval_required: Vec::new(),
        },
    }
}

/// The policy of a sandbox host: the relay calls its two tools, nobody
/// else calls anything.
pub fn host_policy() -> Policy {
    Policy {
        tools: ToolAccess::List {
            tools: vec![START_TOOL.to_owned(), DESTROY_TOOL.to_owned()],
        },
        file_paths: Vec::new(),
        approval_required: Vec::new(),
    }
}

/// Checks `value` against its rule (the one the OpenAPI document shows).
fn check(field: &'static str, rule: &Text, value: &str) -> Result<(), InvalidField> {
    rule.check(value)
        .map_err(|why| InvalidField::new(field, format!("{field} {value:?} {why}")))
}

/// Checks a name ([`fields::ENVIRONMENT_NAME`]). Blank is allowed at
/// creation only (`allow_blank`), and only as `""`: the first runner fills
/// it.
pub fn validate_name(name: &str, allow_blank: bool) -> Result<(), InvalidField> {
    let rule = if allow_blank {
        fields::ENVIRONMENT_NAME_AT_CREATION
    } else {
        fields::ENVIRONMENT_NAME
    };
    check("name", &rule, name)
}

/// Checks the free-text and label fields ([`fields::DESCRIPTION`],
/// [`fields::ENVIRONMENT_TYPE`], [`fields::TAG`]).
pub fn validate_labels(
    description: &str,
    env_type: &str,
    tags: &[String],
) -> Result<(), InvalidField> {
    check("description", &fields::DESCRIPTION, description)?;
    check("type", &fields::ENVIRONMENT_TYPE, env_type)?;
    validate_tags(tags)
}

/// Checks a list of tags (of an environment, or a session's preference).
pub fn validate_tags(tags: &[String]) -> Result<(), InvalidField> {
    if tags.len() > fields::MAX_TAGS {
        return Err(InvalidField::new(
            "tags",
            format!("at most {} tags are allowed", fields::MAX_TAGS),
        ));
    }
    tags.iter()
        .try_for_each(|tag| check("tags", &fields::TAG, tag))
}

/// Checks a policy's lists: no blank tool name in `tools.tools` or
/// `approval_required`, no blank path in `file_paths` (an empty list is how
/// a list is cleared; `""` would be a name that matches nothing and reads
/// as a mistake), no control characters ([`fields::TOOL_NAME`],
/// [`fields::FILE_PATH`]).
pub fn validate_policy(policy: &Policy) -> Result<(), InvalidField> {
    let each = |field: &'static str, values: &[String], rule: &Text| {
        values.iter().enumerate().try_for_each(|(index, value)| {
            rule.check(value).map_err(|why| {
                InvalidField::new(
                    field,
                    format!(
                        "{field}[{index}] {value:?} {why}; send an empty list to clear {field}"
                    ),
                )
            })
        })
    };
    if let ToolAccess::List { tools } = &policy.tools {
        each("policy.tools.tools", tools, &fields::TOOL_NAME)?;
    }
    each(
        "policy.approval_required",
        &policy.approval_required,
        &fields::TOOL_NAME,
    )?;
    each("policy.file_paths", &policy.file_paths, &fields::FILE_PATH)?;
    Ok(())
}

/// A hostname made fit to be a name: trimmed, control characters dropped,
/// cut to leave room for a `-suffix`.
pub fn name_from_hostname(hostname: &str) -> String {
    hostname
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_NAME_CHARS - 8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_parses_shared_and_team() {
        assert_eq!(Scope::parse("shared"), Ok(Scope::Shared));
        assert_eq!(Scope::parse("team:ops"), Ok(Scope::Team("ops".into())));
        assert!(Scope::parse("team:").is_err());
        assert!(Scope::parse("everyone").is_err());
        assert_eq!(Scope::Team("ops".into()).to_string(), "team:ops");
    }

    #[test]
    fn names_are_bounded() {
        assert!(validate_name(&"a".repeat(128), false).is_ok());
        assert!(validate_name(&"a".repeat(129), false).is_err());
        assert!(validate_name("", true).is_ok());
        assert!(validate_name("", false).is_err());
        assert!(validate_name("  ", true).is_err());
    }

    #[test]
    fn tier_defaults() {
        let production = default_policy(Tier::Production);
        assert!(matches!(production.tools, ToolAccess::List { ref tools } if tools.len() == 9));
        assert!(production.file_paths.is_empty());
        let development = default_policy(Tier::Development);
        assert_eq!(development.tools, ToolAccess::All);
        assert_eq!(development.file_paths, vec!["*".to_owned()]);
    }
}
