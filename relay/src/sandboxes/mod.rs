//! Sandboxes: an environment whose runner a sandbox host started for one
//! work session (docs/sandboxes.md). The relay keeps the record of each
//! (which host, which template, its state and why) and picks the host
//! ([`placement`]); the host does the isolating. Everything else (tools,
//! policy, status, streaming, audit) sees a sandbox as an environment.

pub mod placement;

use runner_proto::sandbox::{EnvVar, Network, SandboxState, SetupReport};
use time::OffsetDateTime;

/// Default idle timeout of a sandbox without a template, seconds.
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 15 * 60;
/// Default maximum lifetime of a sandbox without a template, seconds.
pub const DEFAULT_MAX_LIFETIME_S: u64 = 8 * 60 * 60;
/// How long the relay waits for a host to answer `sandbox_start` (the
/// setup script runs inside that time).
pub const START_TIMEOUT_S: u64 = 15 * 60;
/// How long a started sandbox's runner has to connect.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// How long the relay waits for a host to answer `sandbox_destroy`.
pub const DESTROY_TIMEOUT_S: u64 = 30;

/// How every sandbox id begins; no other environment id does.
pub const ID_PREFIX: &str = "sbx_";

/// A new sandbox id (also its environment's id): `sbx_` + 32 hex digits.
pub fn new_sandbox_id() -> String {
    format!("{ID_PREFIX}{}", uuid::Uuid::new_v4().simple())
}

/// How a new sandbox is prepared: its template's settings, or the default
/// configuration (no network, no variables, no setup).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    pub template_id: Option<String>,
    pub network: Network,
    pub allowed_domains: Vec<String>,
    pub env: Vec<EnvVar>,
    pub setup_script: Option<String>,
    pub idle_timeout_s: u64,
    pub max_lifetime_s: u64,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            template_id: None,
            network: Network::None,
            allowed_domains: Vec::new(),
            env: Vec::new(),
            setup_script: None,
            idle_timeout_s: DEFAULT_IDLE_TIMEOUT_S,
            max_lifetime_s: DEFAULT_MAX_LIFETIME_S,
        }
    }
}

/// A sandbox as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRecord {
    /// Also the id of the sandbox's environment.
    pub id: String,
    /// The session it serves; empty for a deployment.
    pub session_id: String,
    /// The environment whose managed runner it is (a deployment).
    pub deployment_of: Option<String>,
    pub host_environment_id: String,
    /// The host's name then, to name it once it is deleted.
    pub host_name: String,
    pub template_id: Option<String>,
    pub state: SandboxState,
    /// Why it failed or stopped.
    pub reason: Option<String>,
    pub setup: Option<SetupReport>,
    /// Member id of the session's creator.
    pub created_by: String,
    pub created_at: OffsetDateTime,
    pub ready_at: Option<OffsetDateTime>,
    pub ended_at: Option<OffsetDateTime>,
}

/// Parses a stored state.
pub fn parse_state(text: &str) -> Option<SandboxState> {
    [
        SandboxState::Provisioning,
        SandboxState::SettingUp,
        SandboxState::Ready,
        SandboxState::Busy,
        SandboxState::Stopped,
        SandboxState::Failed,
    ]
    .into_iter()
    .find(|state| state.as_str() == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_and_nothing_else_does() {
        for state in [
            SandboxState::Provisioning,
            SandboxState::SettingUp,
            SandboxState::Ready,
            SandboxState::Busy,
            SandboxState::Stopped,
            SandboxState::Failed,
        ] {
            assert_eq!(parse_state(state.as_str()), Some(state));
        }
        assert_eq!(parse_state("Ready"), None);
        assert!(new_sandbox_id().starts_with("sbx_"));
    }
}
