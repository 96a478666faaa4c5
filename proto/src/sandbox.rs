//! Sandbox hosts and the sandboxes they start (docs/sandboxes.md).
//!
//! A sandbox host is a runner whose environment has the role
//! [`HOST_ROLE`]: it connects over the runner protocol with a registration
//! token of its own, announces the tools [`START_TOOL`] and
//! [`DESTROY_TOOL`] (which only the relay calls), and reports its
//! [`Capacity`] in every heartbeat. A sandbox is an environment of role
//! [`SANDBOX_ROLE`] whose runner the host started inside the isolation,
//! dialling back with a single-use token: tools, policy, status and audit
//! treat it as any other environment.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `env_type` of an environment that is a sandbox host.
pub const HOST_ROLE: &str = "sandbox-host";
/// `env_type` of an environment that is one sandbox.
pub const SANDBOX_ROLE: &str = "sandbox";

/// The tool that starts a sandbox: arguments [`StartSandbox`], output
/// [`Started`] (as the result's JSON text).
pub const START_TOOL: &str = "sandbox_start";
/// The tool that destroys a sandbox: arguments [`DestroySandbox`], output
/// [`Destroyed`].
pub const DESTROY_TOOL: &str = "sandbox_destroy";

/// Workspace directory of the runner inside every sandbox.
pub const WORKSPACE: &str = "/workspace";

/// What a sandbox host can take, sent in its hello and every heartbeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    /// Sandboxes the host runs at most at once.
    pub slots_total: u32,
    /// Sandboxes it runs now (any state but stopped).
    pub slots_used: u32,
    /// Memory of the machine, MiB.
    pub memory_total_mb: u64,
    /// Memory available for new sandboxes now (`MemAvailable`), MiB.
    pub memory_available_mb: u64,
}

impl Capacity {
    /// Free slots.
    pub fn free_slots(&self) -> u32 {
        self.slots_total.saturating_sub(self.slots_used)
    }
}

/// Where a sandbox's programs may connect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// No route out: a network namespace with loopback only.
    #[default]
    None,
    /// The host's network, unfiltered.
    AllowAll,
    /// No route out; a proxy on the host lets CONNECT and plain HTTP through
    /// to the listed domains only, for programs that honour `HTTP_PROXY` /
    /// `HTTPS_PROXY`.
    Allowlist,
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::AllowAll => "allow_all",
            Self::Allowlist => "allowlist",
        }
    }
}

/// One environment variable of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// Resource limits of one sandbox; `None` is the host's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Processes and threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u32>,
    /// CPU time, in CPUs (1.5 = one and a half cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
}

/// A registration token handed to a sandbox's runner: used once, by that
/// runner's first connection. Never printed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SandboxToken(pub String);

impl fmt::Debug for SandboxToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SandboxToken(…)")
    }
}

/// Arguments of [`START_TOOL`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartSandbox {
    /// The sandbox's id (also its environment's id), `[a-z0-9_-]{1,64}`.
    pub sandbox_id: String,
    /// The work session it serves.
    pub session_id: String,
    /// WebSocket URL of the relay the sandbox's runner dials; empty: the
    /// URL the host dials itself (the usual case: any relay of a cluster
    /// serves the sandbox).
    #[serde(default)]
    pub relay_url: String,
    /// The sandbox environment's single-use registration token.
    pub token: SandboxToken,
    #[serde(default)]
    pub network: Network,
    /// For [`Network::Allowlist`]: domains (and their subdomains) the proxy
    /// lets through, any port.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// Variables every process in the sandbox sees (setup and calls).
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Bash script run once as root before the runner starts.
    #[serde(default)]
    pub setup_script: Option<String>,
    /// The sandbox stops after this long without a call; 0: never (a
    /// deployment).
    pub idle_timeout_s: u64,
    /// The sandbox stops after this long whatever it does; 0: never.
    pub max_lifetime_s: u64,
    #[serde(default)]
    pub limits: Limits,
}

/// Where a sandbox is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    Provisioning,
    SettingUp,
    Ready,
    Busy,
    Stopped,
    Failed,
}

impl SandboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Provisioning => "provisioning",
            Self::SettingUp => "setting_up",
            Self::Ready => "ready",
            Self::Busy => "busy",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
        }
    }

    /// Whether the sandbox is gone for good.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Stopped | Self::Failed)
    }
}

/// How the setup script ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetupReport {
    /// Exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// The last lines of its output (stdout and stderr together), at most
    /// [`SETUP_LOG_TAIL_BYTES`].
    pub log_tail: String,
}

/// Most of the setup log a result carries.
pub const SETUP_LOG_TAIL_BYTES: usize = 4096;

/// Output of [`START_TOOL`]: the sandbox is ready (its runner was started
/// and dials the relay) or failed, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Started {
    pub sandbox_id: String,
    /// [`SandboxState::Ready`] or [`SandboxState::Failed`].
    pub state: SandboxState,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The setup script's outcome, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupReport>,
    /// Time from the request to ready (or failed), ms.
    pub elapsed_ms: u64,
}

/// Arguments of [`DESTROY_TOOL`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DestroySandbox {
    pub sandbox_id: String,
}

/// Output of [`DESTROY_TOOL`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Destroyed {
    pub sandbox_id: String,
    /// Whether the host still had it (destroying twice is not an error).
    pub existed: bool,
}

/// A sandbox as the API shows it (`GET /sandboxes`, and a session's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxInfo {
    /// `sbx_…`, also its environment's id.
    pub id: String,
    pub session_id: String,
    /// The sandbox host's environment id and name.
    pub host_id: String,
    pub host_name: String,
    /// For a deployment (the managed runner of an environment): that
    /// environment's id; `session_id` is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    pub state: SandboxState,
    /// Why it failed or stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SetupReport>,
    /// RFC 3339.
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

/// `POST /execution-environments/{id}/deploy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deploy {
    /// Hours the environment's previous token keeps working (0–168,
    /// default 24).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::fields::whole::option_i64"
    )]
    #[schemars(range(min = 0, max = 168))]
    pub grace_hours: Option<i64>,
}

/// `GET /sandboxes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxList {
    pub sandboxes: Vec<SandboxInfo>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_request_round_trips_and_hides_its_token() {
        let start = StartSandbox {
            sandbox_id: "sbx_1".into(),
            session_id: "ses_1".into(),
            relay_url: "ws://127.0.0.1:1/runner/connect".into(),
            token: SandboxToken("rnrt_secret".into()),
            network: Network::Allowlist,
            allowed_domains: vec!["example.test".into()],
            env: vec![EnvVar {
                name: "A".into(),
                value: "1".into(),
            }],
            setup_script: Some("true".into()),
            idle_timeout_s: 900,
            max_lifetime_s: 28_800,
            limits: Limits::default(),
        };
        let json = serde_json::to_string(&start).expect("encodes");
        assert!(json.contains("\"token\":\"rnrt_secret\""));
        assert!(json.contains("\"network\":\"allowlist\""));
        let back: StartSandbox = serde_json::from_str(&json).expect("decodes");
        assert_eq!(back, start);
        assert!(!format!("{start:?}").contains("rnrt_secret"));
    }

    #[test]
    fn capacity_counts_free_slots_without_underflow() {
        let full = Capacity {
            slots_total: 2,
            slots_used: 3,
            ..Capacity::default()
        };
        assert_eq!(full.free_slots(), 0);
    }
}
