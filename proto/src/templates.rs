//! JSON bodies of the relay's template routes (`/templates`): what a
//! sandbox is prepared with (network, environment variables in `.env`
//! form, a setup script, its timeouts). docs/templates.md has the rules.
//!
//! The variables' values are stored and shown in plain text to every
//! member who may use the template: they are configuration, not secrets.
//! Answers carry [`TemplateWarning`]s when one looks like a secret.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::sandbox::Network;
use crate::sessions::MemberRef;

/// Most bytes of a template's `.env` text.
pub const MAX_ENV_TEXT_BYTES: usize = 32 * 1024;
/// Most bytes of a template's setup script.
pub const MAX_SETUP_SCRIPT_BYTES: usize = 64 * 1024;
/// Most domains of an allowlist.
pub const MAX_ALLOWED_DOMAINS: usize = 256;
/// A sandbox's idle timeout when the template sets none (15 minutes).
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 900;
/// A sandbox's maximum lifetime when the template sets none (8 hours).
pub const DEFAULT_MAX_LIFETIME_S: u64 = 28_800;
/// Shortest idle timeout and lifetime: a sandbox must outlive its start.
pub const MIN_TIMEOUT_S: u64 = 60;
/// Longest idle timeout (one day).
pub const MAX_IDLE_TIMEOUT_S: u64 = 86_400;
/// Longest lifetime (one week).
pub const MAX_LIFETIME_S: u64 = 604_800;

/// A template as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Template {
    /// `tpl_` and 32 hex digits.
    pub id: String,
    pub name: String,
    pub description: String,
    /// `shared` or `team:<name>`.
    pub scope: String,
    #[schemars(schema_with = "network_schema")]
    pub network: Network,
    /// With `network: allowlist`: the domains (and their subdomains) the
    /// sandbox's proxy lets through.
    pub allowed_domains: Vec<String>,
    /// The environment variables in `.env` form, as given. Visible in plain
    /// text to every member who may use the template.
    pub env_text: String,
    /// The names of the variables `env_text` sets, in order.
    pub env_names: Vec<String>,
    /// Bash, run once as root in each new sandbox before its first call;
    /// empty for none.
    pub setup_script: String,
    pub idle_timeout_s: u64,
    pub max_lifetime_s: u64,
    pub created_by: MemberRef,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Variables whose values look like secrets (their values are visible
    /// to the template's users).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<TemplateWarning>,
}

/// A variable that looks like a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TemplateWarning {
    /// The variable's name.
    pub name: String,
    /// Its line in `env_text` (from 1).
    pub line: usize,
    /// Why it looks like a secret, and what to do instead.
    pub message: String,
}

/// `GET /templates`: the templates the caller may use (every one for
/// organisation admins), by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TemplateList {
    pub templates: Vec<Template>,
}

/// `POST /templates`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTemplate {
    #[schemars(schema_with = "crate::fields::schema::template_name")]
    pub name: String,
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::description")]
    pub description: String,
    /// `shared` (default) or `team:<name>`.
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::scope")]
    pub scope: Option<String>,
    /// Default `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_network_schema")]
    pub network: Option<Network>,
    /// Used only with `network: allowlist` (empty: the relay only); kept
    /// with the other modes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::fields::schema::domains")]
    pub allowed_domains: Vec<String>,
    /// `.env` text: `KEY=value` lines, comments, quoted values (at most
    /// [`MAX_ENV_TEXT_BYTES`] bytes).
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::env_text")]
    pub env_text: String,
    /// At most [`MAX_SETUP_SCRIPT_BYTES`] bytes.
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::setup_script")]
    pub setup_script: String,
    /// Default [`DEFAULT_IDLE_TIMEOUT_S`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::fields::whole::option_u64"
    )]
    #[schemars(schema_with = "idle_timeout_schema")]
    pub idle_timeout_s: Option<u64>,
    /// Default [`DEFAULT_MAX_LIFETIME_S`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::fields::whole::option_u64"
    )]
    #[schemars(schema_with = "lifetime_schema")]
    pub max_lifetime_s: Option<u64>,
}

/// `PATCH /templates/{id}`: every field optional (absent or `null`:
/// unchanged); `scope` is fixed at creation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_template_name")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_description")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "nullable_network_schema")]
    pub network: Option<Network>,
    /// Replaces the list (send `[]` to clear it when leaving `allowlist`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_domains")]
    pub allowed_domains: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_env_text")]
    pub env_text: Option<String>,
    /// `""` removes the script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_setup_script")]
    pub setup_script: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::fields::whole::option_u64"
    )]
    #[schemars(schema_with = "idle_timeout_schema")]
    pub idle_timeout_s: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::fields::whole::option_u64"
    )]
    #[schemars(schema_with = "lifetime_schema")]
    pub max_lifetime_s: Option<u64>,
    /// Present only so that a PATCH naming it gets a clear 400; the
    /// document leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub scope: Option<String>,
}

fn network_schema(_: &mut SchemaGenerator) -> Schema {
    Schema::from(
        json!({ "enum": ["none", "allow_all", "allowlist"] })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

fn nullable_network_schema(_: &mut SchemaGenerator) -> Schema {
    Schema::from(
        json!({ "enum": ["none", "allow_all", "allowlist", null] })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

fn seconds_schema(max: u64) -> Schema {
    Schema::from(
        json!({ "type": ["integer", "null"], "minimum": MIN_TIMEOUT_S, "maximum": max })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

fn idle_timeout_schema(_: &mut SchemaGenerator) -> Schema {
    seconds_schema(MAX_IDLE_TIMEOUT_S)
}

fn lifetime_schema(_: &mut SchemaGenerator) -> Schema {
    seconds_schema(MAX_LIFETIME_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_request_reads_its_defaults_and_refuses_unknown_fields() {
        let create: CreateTemplate = serde_json::from_str(r#"{"name":"py"}"#).expect("accepted");
        assert_eq!(create.network, None);
        assert_eq!(create.idle_timeout_s, None);
        let create: CreateTemplate = serde_json::from_str(
            r#"{"name":"py","network":"allowlist","allowed_domains":["pypi.org"]}"#,
        )
        .expect("accepted");
        assert_eq!(create.network, Some(Network::Allowlist));
        assert!(serde_json::from_str::<CreateTemplate>(r#"{"name":"py","env":"A=1"}"#).is_err());
        assert!(serde_json::from_str::<UpdateTemplate>(r#"{"env":"A=1"}"#).is_err());
    }
}
