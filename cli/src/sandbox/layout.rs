//! Where a sandbox host keeps its files, and the names the host and a
//! sandbox's init agree on in the directory they share.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use runner_proto::sandbox::{EnvVar, Network};

/// The shared directory's mount point inside a sandbox.
pub const IO_MOUNT: &str = "/run/runner-sandbox";
/// The runner binary's path inside a sandbox (bind-mounted read-only).
pub const RUNNER_IN_SANDBOX: &str = "/usr/local/bin/runner";
/// The bridge's port on the sandbox's loopback (its proxy address).
pub const BRIDGE_PORT: u16 = 3128;

/// In the shared directory: what init is to do ([`InitConfig`]).
pub const INIT_CONFIG: &str = "init.json";
/// The setup script.
pub const SETUP_SCRIPT: &str = "setup.sh";
/// The setup script's output, stdout and stderr together.
pub const SETUP_LOG: &str = "setup.log";
/// How setup ended ([`SetupExit`]), written once it has.
pub const SETUP_EXIT: &str = "setup.exit";
/// The single-use registration token (0600); init deletes it on reading.
pub const TOKEN: &str = "token";
/// Written by init once the sandbox's runner was started.
pub const RUNNER_STARTED: &str = "runner.started";
/// The CA certificates the host trusts for its relay (`--ca-file`), for the
/// sandbox's runner to trust too.
pub const CA_FILE: &str = "ca.pem";
/// The host's proxy for this sandbox (a unix socket).
pub const PROXY_SOCKET: &str = "proxy.sock";

/// What init reads from [`INIT_CONFIG`]: no secret here.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InitConfig {
    /// Base URL (`http(s)://host:port`) the sandbox's runner dials.
    pub relay_url: String,
    pub network: Network,
    pub env: Vec<EnvVar>,
    pub idle_timeout_s: u64,
    pub max_lifetime_s: u64,
    /// [`CA_FILE`] is there: the runner trusts it (`--ca-file`).
    #[serde(default)]
    pub ca_file: bool,
    /// The host runs with `--insecure-skip-tls-verify`; so does the runner.
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
}

/// What init writes to [`SETUP_EXIT`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SetupExit {
    /// `None`: ended by a signal, or could not start.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// A host's directories under its state directory.
#[derive(Debug, Clone)]
pub struct Layout {
    state: PathBuf,
}

impl Layout {
    pub fn new(state_dir: &Path) -> Layout {
        Layout {
            state: state_dir.to_path_buf(),
        }
    }

    /// This host's name among the hosts of the machine (its cgroups are
    /// under it): from its state directory, which only one host uses at
    /// a time (the runner's lock).
    pub fn host_key(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.state.as_os_str().as_encoded_bytes());
        format!("host-{}", hex::encode(&digest[..6]))
    }

    /// Every sandbox's directory is in here, and nothing else.
    pub fn sandboxes(&self) -> PathBuf {
        self.state.join("sandboxes")
    }

    /// The host-derived base layer (built once).
    pub fn base(&self) -> PathBuf {
        self.state.join("sandbox-base")
    }

    pub fn sandbox(&self, id: &str) -> SandboxDirs {
        SandboxDirs {
            dir: self.sandboxes().join(id),
        }
    }
}

/// One sandbox's directories on the host; all removed on destroy.
#[derive(Debug, Clone)]
pub struct SandboxDirs {
    pub dir: PathBuf,
}

impl SandboxDirs {
    /// Writes to the root file system.
    pub fn upper(&self) -> PathBuf {
        self.dir.join("upper")
    }
    pub fn work(&self) -> PathBuf {
        self.dir.join("work")
    }
    /// Writes to `/usr` (host-derived base only).
    pub fn usr_upper(&self) -> PathBuf {
        self.dir.join("usr-upper")
    }
    pub fn usr_work(&self) -> PathBuf {
        self.dir.join("usr-work")
    }
    /// The root file system's mount point (in the sandbox's own mount
    /// namespace only).
    pub fn merged(&self) -> PathBuf {
        self.dir.join("merged")
    }
    /// Shared with init, mounted at [`IO_MOUNT`].
    pub fn io(&self) -> PathBuf {
        self.dir.join("io")
    }
    /// What `sandbox-enter` does ([`crate::sandbox::isolation::enter::Plan`]).
    pub fn plan(&self) -> PathBuf {
        self.dir.join("plan.json")
    }
    /// Standard output and error of the sandbox's processes (bubblewrap,
    /// init, the sandbox's runner).
    pub fn log(&self) -> PathBuf {
        self.dir.join("sandbox.log")
    }
}

/// Whether `id` is a sandbox id the wire allows (`[a-z0-9_-]{1,64}`): also
/// what makes it safe as a directory and cgroup name.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_names() {
        assert!(valid_id("sbx_1-a"));
        assert!(!valid_id(""));
        assert!(!valid_id("../x"));
        assert!(!valid_id("A"));
        assert!(!valid_id(&"a".repeat(65)));
    }
}
