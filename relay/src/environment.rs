//! The environment model (SPEC §2): the record the store keeps, its scope,
//! the tier's default policy, and validation of user-supplied fields.

use runner_proto::api::{self, RunnerInfo, Tier};
use runner_proto::ws::{Policy, ToolAccess};
use time::OffsetDateTime;

use crate::clock::rfc3339;

/// Longest environment name, in characters.
pub const MAX_NAME_CHARS: usize = 128;
/// Longest `type` label and tag, in characters.
const MAX_LABEL_CHARS: usize = 64;
/// Most tags on one environment.
const MAX_TAGS: usize = 64;
/// Longest description, in characters.
const MAX_DESCRIPTION_CHARS: usize = 4096;

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
                Some(team) if !team.trim().is_empty() => Ok(Self::Team(team.to_owned())),
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

/// Checks a name: ≤128 characters, no control characters. Blank is allowed
/// at creation only (`allow_blank`): the first runner fills it.
pub fn validate_name(name: &str, allow_blank: bool) -> Result<(), InvalidField> {
    if name.trim().is_empty() {
        if allow_blank && name.is_empty() {
            return Ok(());
        }
        return Err(InvalidField::new(
            "name",
            "name must not be blank".to_owned(),
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(InvalidField::new(
            "name",
            format!("name is longer than {MAX_NAME_CHARS} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(InvalidField::new(
            "name",
            "name must not contain control characters".to_owned(),
        ));
    }
    Ok(())
}

/// Checks the free-text and label fields.
pub fn validate_labels(
    description: &str,
    env_type: &str,
    tags: &[String],
) -> Result<(), InvalidField> {
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(InvalidField::new(
            "description",
            format!("description is longer than {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    if env_type.trim().is_empty() || env_type.chars().count() > MAX_LABEL_CHARS {
        return Err(InvalidField::new(
            "type",
            format!("type {env_type:?} must be 1 to {MAX_LABEL_CHARS} characters"),
        ));
    }
    if tags.len() > MAX_TAGS {
        return Err(InvalidField::new(
            "tags",
            format!("at most {MAX_TAGS} tags are allowed"),
        ));
    }
    if let Some(tag) = tags
        .iter()
        .find(|tag| tag.trim().is_empty() || tag.chars().count() > MAX_LABEL_CHARS)
    {
        return Err(InvalidField::new(
            "tags",
            format!("tag {tag:?} must be 1 to {MAX_LABEL_CHARS} characters"),
        ));
    }
    Ok(())
}

/// Checks a policy's lists: no blank tool name in `tools.tools` or
/// `approval_required`, no blank path in `file_paths` (an empty list is how
/// a list is cleared; `""` would be a name that matches nothing and reads
/// as a mistake).
pub fn validate_policy(policy: &Policy) -> Result<(), InvalidField> {
    let blank = |field: &'static str, values: &[String], what: &str| match values
        .iter()
        .position(|value| value.trim().is_empty())
    {
        Some(index) => Err(InvalidField::new(
            field,
            format!("{field}[{index}] is a blank {what}; send an empty list to clear {field}"),
        )),
        None => Ok(()),
    };
    if let ToolAccess::List { tools } = &policy.tools {
        blank("policy.tools.tools", tools, "tool name")?;
    }
    blank(
        "policy.approval_required",
        &policy.approval_required,
        "tool name",
    )?;
    blank("policy.file_paths", &policy.file_paths, "path")?;
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
