//! Sandbox templates (docs/templates.md): what a new sandbox is prepared
//! with (network, environment variables, a setup script, timeouts), the
//! rules a template's fields obey, and who may see, use and change one.
//!
//! Scope works as for environments ([`crate::access`]): a shared template
//! is usable by every member and managed by organisation admins, a team's
//! by its members. A session holds only a template's id, so deleting a
//! template leaves nothing dangling: the session's next sandbox uses the
//! defaults.

pub mod dotenv;
pub mod secrets;

use runner_proto::fields;
use runner_proto::sandbox::{EnvVar, Network};
use runner_proto::sessions::MemberRef;
use runner_proto::templates::{
    Template, TemplateWarning, MAX_ALLOWED_DOMAINS, MAX_ENV_TEXT_BYTES, MAX_IDLE_TIMEOUT_S,
    MAX_LIFETIME_S, MAX_SETUP_SCRIPT_BYTES, MIN_TIMEOUT_S,
};
use time::OffsetDateTime;

use crate::clock::rfc3339;
use crate::environment::Scope;
use crate::sandboxes::SandboxSettings;
use crate::sessions::MemberName;

pub use dotenv::DotenvError;

/// A template as the store keeps it, with its variables parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRecord {
    pub id: String,
    pub name: String,
    pub description: String,
    pub scope: Scope,
    pub network: Network,
    /// Lowercase, without repeats; empty unless `network` is `allowlist`.
    pub allowed_domains: Vec<String>,
    /// The `.env` text as given.
    pub env_text: String,
    /// `env_text` read ([`dotenv::parse_entries`]); set by [`Self::check`].
    pub entries: Vec<dotenv::Entry>,
    /// Empty: none.
    pub setup_script: String,
    pub idle_timeout_s: u64,
    pub max_lifetime_s: u64,
    pub created_by: MemberName,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// A field of a template request that breaks its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidTemplate(pub String);

impl TemplateRecord {
    /// The variables every process of a sandbox made from this template
    /// sees, in the order the text sets them.
    pub fn env(&self) -> Vec<EnvVar> {
        self.entries.iter().map(|entry| entry.var.clone()).collect()
    }

    /// The setup script, if there is one.
    pub fn setup(&self) -> Option<&str> {
        (!self.setup_script.trim().is_empty()).then_some(self.setup_script.as_str())
    }

    /// What a sandbox made from this template is started with.
    pub fn sandbox_settings(&self) -> SandboxSettings {
        SandboxSettings {
            template_id: Some(self.id.clone()),
            network: self.network,
            allowed_domains: if self.network == Network::Allowlist {
                self.allowed_domains.clone()
            } else {
                Vec::new()
            },
            env: self.env(),
            setup_script: self.setup().map(str::to_owned),
            idle_timeout_s: self.idle_timeout_s,
            max_lifetime_s: self.max_lifetime_s,
        }
    }

    /// Checks every field against its rule, normalises the domains and
    /// reads the `.env` text into [`Self::entries`].
    pub fn check(&mut self) -> Result<(), InvalidTemplate> {
        let text = |field: &str, rule: &fields::Text, value: &str| {
            rule.check(value)
                .map_err(|why| InvalidTemplate(format!("{field} {why}")))
        };
        text("name", &fields::TEMPLATE_NAME, &self.name).map_err(|InvalidTemplate(why)| {
            InvalidTemplate(format!("{why} (got {:?})", self.name))
        })?;
        text("description", &fields::DESCRIPTION, &self.description)?;
        if self.env_text.len() > MAX_ENV_TEXT_BYTES {
            return Err(InvalidTemplate(format!(
                "env_text is {} bytes; at most {MAX_ENV_TEXT_BYTES} are allowed",
                self.env_text.len()
            )));
        }
        if self.setup_script.len() > MAX_SETUP_SCRIPT_BYTES {
            return Err(InvalidTemplate(format!(
                "setup_script is {} bytes; at most {MAX_SETUP_SCRIPT_BYTES} are allowed",
                self.setup_script.len()
            )));
        }
        if self.setup_script.contains('\0') {
            return Err(InvalidTemplate(
                "setup_script must not contain NUL characters".to_owned(),
            ));
        }
        self.entries = dotenv::parse_entries(&self.env_text)
            .map_err(|error| InvalidTemplate(format!("env_text: {error}")))?;
        self.check_network()?;
        check_seconds("idle_timeout_s", self.idle_timeout_s, MAX_IDLE_TIMEOUT_S)?;
        check_seconds("max_lifetime_s", self.max_lifetime_s, MAX_LIFETIME_S)?;
        // An idle timeout past the lifetime never fires; allowed (the
        // rule would tie two fields a PATCH may change one at a time).
        Ok(())
    }

    /// The domains: valid names, lowercase, without repeats.
    fn check_network(&mut self) -> Result<(), InvalidTemplate> {
        if self.allowed_domains.len() > MAX_ALLOWED_DOMAINS {
            return Err(InvalidTemplate(format!(
                "at most {MAX_ALLOWED_DOMAINS} allowed_domains are allowed"
            )));
        }
        let mut domains: Vec<String> = Vec::with_capacity(self.allowed_domains.len());
        for domain in &self.allowed_domains {
            fields::check_domain(domain)
                .map_err(|why| InvalidTemplate(format!("allowed_domains: {domain:?} {why}")))?;
            let domain = domain.to_ascii_lowercase();
            if !domains.contains(&domain) {
                domains.push(domain);
            }
        }
        self.allowed_domains = domains;
        // Domains are kept whatever the network; only `allowlist` uses
        // them (an empty list reaches the relay only). Refusing either
        // case would tie two fields a PATCH may change one at a time.
        Ok(())
    }

    /// The variables whose values look like secrets.
    pub fn warnings(&self) -> Vec<TemplateWarning> {
        self.entries
            .iter()
            .filter_map(|entry| {
                secrets::looks_secret(&entry.var.name, &entry.var.value).map(|why| {
                    TemplateWarning {
                        name: entry.var.name.clone(),
                        line: entry.line,
                        message: format!(
                            "{why}: every member who may use this template can read its value; \
                         prefer a credential the sandbox fetches at setup, or a tool secret"
                        ),
                    }
                })
            })
            .collect()
    }

    /// The API's view of this record.
    pub fn to_api(&self) -> Template {
        Template {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            scope: self.scope.to_string(),
            network: self.network,
            allowed_domains: self.allowed_domains.clone(),
            env_text: self.env_text.clone(),
            env_names: self
                .entries
                .iter()
                .map(|entry| entry.var.name.clone())
                .collect(),
            setup_script: self.setup_script.clone(),
            idle_timeout_s: self.idle_timeout_s,
            max_lifetime_s: self.max_lifetime_s,
            created_by: MemberRef {
                id: self.created_by.id.clone(),
                name: self.created_by.name.clone(),
            },
            created_at: rfc3339(self.created_at),
            updated_at: rfc3339(self.updated_at),
            warnings: self.warnings(),
        }
    }
}

fn check_seconds(field: &str, value: u64, max: u64) -> Result<(), InvalidTemplate> {
    if (MIN_TIMEOUT_S..=max).contains(&value) {
        Ok(())
    } else {
        Err(InvalidTemplate(format!(
            "{field} must be {MIN_TIMEOUT_S}–{max} seconds (got {value})"
        )))
    }
}

/// A new template id: `tpl_` + 32 hex digits.
pub fn new_template_id() -> String {
    format!("tpl_{}", uuid::Uuid::new_v4().simple())
}

/// What the caller wants to do with a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Read it.
    Read,
    /// Start sandboxes with it.
    Use,
    /// Change or delete it.
    Manage,
}

#[cfg(test)]
mod tests {
    use super::*;
    use runner_proto::templates::{DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_LIFETIME_S};

    fn record() -> TemplateRecord {
        TemplateRecord {
            id: new_template_id(),
            name: "python".into(),
            description: String::new(),
            scope: Scope::Shared,
            network: Network::None,
            allowed_domains: Vec::new(),
            env_text: "A=1\nAPI_TOKEN=x\n".into(),
            entries: Vec::new(),
            setup_script: String::new(),
            idle_timeout_s: DEFAULT_IDLE_TIMEOUT_S,
            max_lifetime_s: DEFAULT_MAX_LIFETIME_S,
            created_by: MemberName {
                id: "m".into(),
                name: "m".into(),
            },
            created_at: OffsetDateTime::UNIX_EPOCH,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_checked_record_has_its_variables_and_warnings() {
        let mut template = record();
        template.check().expect("accepted");
        assert_eq!(template.env().len(), 2);
        let warnings = template.warnings();
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            (warnings[0].name.as_str(), warnings[0].line),
            ("API_TOKEN", 2)
        );
        assert_eq!(template.setup(), None);
    }

    #[test]
    fn domains_are_names_stored_once_in_lowercase() {
        let mut template = record();
        template.network = Network::Allowlist;
        template.allowed_domains = vec!["PyPI.org".into(), "pypi.org".into()];
        template.check().expect("accepted");
        assert_eq!(template.allowed_domains, ["pypi.org"]);
        template.allowed_domains = vec!["https://pypi.org".into()];
        let error = template.check().expect_err("refused");
        assert!(error.0.contains("https://pypi.org"), "{error}");
    }

    #[test]
    fn sizes_and_timeouts_are_bounded() {
        let mut template = record();
        template.env_text = format!("A={}", "x".repeat(MAX_ENV_TEXT_BYTES));
        assert!(template
            .check()
            .expect_err("refused")
            .0
            .contains("env_text is"));
        let mut template = record();
        template.setup_script = "#".repeat(MAX_SETUP_SCRIPT_BYTES + 1);
        assert!(template
            .check()
            .expect_err("refused")
            .0
            .contains("setup_script is"));
        let mut template = record();
        template.idle_timeout_s = 10;
        assert!(template.check().is_err());
        // An idle timeout past the lifetime never fires, and is allowed;
        // so are domains kept while the network is not the allowlist, and
        // an allowlist of none (the relay only).
        let mut template = record();
        template.idle_timeout_s = 7200;
        template.max_lifetime_s = 3600;
        template.network = Network::None;
        template.allowed_domains = vec!["PyPI.org".into()];
        assert_eq!(template.check(), Ok(()));
        assert_eq!(template.allowed_domains, ["pypi.org"]);
        assert!(
            template.sandbox_settings().allowed_domains.is_empty(),
            "only the allowlist uses them"
        );
        template.network = Network::Allowlist;
        assert_eq!(template.sandbox_settings().allowed_domains, ["pypi.org"]);
        template.allowed_domains.clear();
        assert_eq!(template.check(), Ok(()));
    }
}
