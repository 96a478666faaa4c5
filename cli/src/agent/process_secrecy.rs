//! What a tool can read of the runner that started it.
//!
//! Tools run as the runner's user, so by default they could read the
//! runner's initial environment (`/proc/PPID/environ`: `RUNNER_TOKEN` or
//! `RUNNER_API_KEY` where the runner was started with them, as dev mode,
//! `/etc/runner/env` and containers do) and its memory (`/proc/PPID/mem`,
//! where the token lives once loaded). A process that is not *dumpable*
//! has its `/proc/PID/*` files owned by root and refuses ptrace, so a
//! process of the same user gets "permission denied" on both; the runner
//! itself still reads its own. Children are dumpable again after `exec`,
//! so tools are unaffected ([`hide_from_tools`]).
//!
//! They could also read the runner's files: the credential files in its
//! config directory, its state directory, the service's environment file,
//! and ask the keychain over the session bus. [`runner_files`] names
//! them, and [`hide_runner_files`] runs tools in a namespace where they
//! are covered (`crate::exec::tool_view`). A root runner's tools run as
//! root, who can undo any of this: run the service as a user
//! (`--run-as`). See docs/security.md.

use std::path::{Path, PathBuf};

use crate::config::{ConfigFile, Dirs, SecretLocation};
use crate::exec::tool_view::{self, HideRunnerFiles, Plan};

/// Marks this process non-dumpable; says so, or why not.
pub fn hide_from_tools() {
    #[cfg(target_os = "linux")]
    match nix::sys::prctl::set_dumpable(false) {
        Ok(()) => {
            tracing::debug!("non-dumpable: tools cannot read this process's memory or environment")
        }
        Err(error) => {
            tracing::warn!(%error, "could not mark the runner non-dumpable: tools running as its user can read its memory and environment")
        }
    }
}

/// The runner's files a tool has no business reading, and the workspace
/// (kept visible where it lies in one of them): the config directory
/// (`config.yaml`, the credential files), the state directory, the
/// service's environment file, the MCP config (which may hold the
/// servers' credentials) and, where the keychain holds a secret of the
/// runner's, the session bus sockets a tool would ask it through.
pub fn runner_files(
    dirs: &Dirs,
    config: &ConfigFile,
    workspace: &Path,
    mcp_config: Option<&Path>,
) -> RunnerFiles {
    let mut cover = vec![
        dirs.config.clone(),
        dirs.state.clone(),
        PathBuf::from(crate::service::ENV_FILE),
    ];
    cover.extend(mcp_config.map(Path::to_owned));
    let mut unhidden_bus = None;
    if keychain_holds_a_secret(config) {
        let bus = session_bus();
        cover.extend(bus.sockets);
        unhidden_bus = bus.unhidden;
    }
    RunnerFiles {
        plan: Plan::new(&cover, &[workspace.to_owned()]),
        unhidden_bus,
    }
}

/// What [`runner_files`] found to hide.
#[derive(Debug, Clone)]
pub struct RunnerFiles {
    pub plan: Plan,
    /// The session bus's abstract address, where the keychain holds a
    /// secret of the runner's: no mount hides it.
    pub unhidden_bus: Option<String>,
}

impl RunnerFiles {
    /// What stays reachable however the files are hidden, if anything.
    fn gap(&self) -> Option<String> {
        self.unhidden_bus.as_ref().map(|address| {
            format!("the session bus {address} is an abstract socket, which no mount hides")
        })
    }
}

/// Makes tools run with `plan` hidden, as `setting` says: `Err` only for
/// `on` where it cannot be done (the runner must not start).
pub async fn hide_runner_files(setting: HideRunnerFiles, files: RunnerFiles) -> Result<(), String> {
    if setting == HideRunnerFiles::Off {
        tracing::info!("--hide-runner-files off: tools can read the runner's files");
        return Ok(());
    }
    let gap = files.gap();
    match crate::exec::prepare_tool_view(files.plan).await {
        Ok(view) => {
            tracing::info!("runner files: {}", view.describe());
            if let Some(gap) = gap {
                tracing::warn!(
                    "runner files: {gap}; a tool may ask the keychain through it (runner doctor)"
                );
            }
            tool_view::install(view);
            Ok(())
        }
        Err(why) if setting == HideRunnerFiles::On => Err(why),
        Err(why) => {
            tracing::warn!(
                "runner files are not hidden from tools: {why}; tools can read the runner's credential files (runner doctor)"
            );
            Ok(())
        }
    }
}

/// `runner doctor`'s line: whether `runner run` would hide its files with
/// `setting`, and what (`Ok`), or why not and what would (`Err`).
pub async fn describe(
    setting: HideRunnerFiles,
    files: RunnerFiles,
) -> Result<String, (String, String)> {
    if setting == HideRunnerFiles::Off {
        return Err((
            "not hidden: --hide-runner-files is off".to_owned(),
            "--hide-runner-files auto (RUNNER_HIDE_RUNNER_FILES)".to_owned(),
        ));
    }
    let gap = files.gap();
    let mut detail = match crate::exec::prepare_tool_view(files.plan).await {
        Ok(view) => view.describe(),
        Err(why) => {
            let fix = if nix::unistd::geteuid().is_root() {
                "give the runner CAP_SYS_ADMIN (a container: not under the default seccomp profile), or run it as a user with user namespaces allowed; docs/security.md"
            } else {
                "allow this user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0; on Ubuntu 24.04, an AppArmor profile granting `userns` to this binary); docs/security.md"
            };
            return Err((format!("not hidden: {why}"), fix.to_owned()));
        }
    };
    if let Some(gap) = gap {
        detail.push_str(&format!("; {gap}"));
    }
    Ok(detail)
}

/// Whether `runner register` or `runner login` put a secret in the OS
/// keychain, which answers anyone on the user's session bus.
fn keychain_holds_a_secret(config: &ConfigFile) -> bool {
    let registered = config
        .registration
        .as_ref()
        .is_some_and(|r| r.token_location == SecretLocation::Keyring);
    let logged_in = config
        .login
        .as_ref()
        .is_some_and(|l| l.api_key_location == SecretLocation::Keyring);
    registered || logged_in
}

/// The session bus as this process would reach it.
struct SessionBus {
    /// Socket files: `DBUS_SESSION_BUS_ADDRESS`'s `unix:path=`, and the
    /// well-known `$XDG_RUNTIME_DIR/bus` and `/run/user/UID/bus`, which
    /// clients try without the variable.
    sockets: Vec<PathBuf>,
    /// An `unix:abstract=` address: no file to cover.
    unhidden: Option<String>,
}

fn session_bus() -> SessionBus {
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").unwrap_or_default();
    let mut bus = bus_address(&address);
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR") {
        bus.sockets.push(Path::new(&runtime).join("bus"));
    }
    bus.sockets.push(
        Path::new("/run/user")
            .join(nix::unistd::geteuid().to_string())
            .join("bus"),
    );
    bus
}

/// The socket paths in a D-Bus address list (`;`-separated
/// `transport:key=value,…` entries, values `%`-escaped).
fn bus_address(address: &str) -> SessionBus {
    let mut bus = SessionBus {
        sockets: Vec::new(),
        unhidden: None,
    };
    for entry in address.split(';') {
        let Some(options) = entry.strip_prefix("unix:") else {
            continue;
        };
        for option in options.split(',') {
            match option.split_once('=') {
                Some(("path", value)) => bus.sockets.push(PathBuf::from(unescape(value))),
                Some(("abstract", _)) => bus.unhidden = Some(entry.to_owned()),
                _ => {}
            }
        }
    }
    bus
}

/// A D-Bus address value with its `%XX` escapes decoded (a broken one is
/// kept as written).
fn unescape(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_addresses_name_their_sockets() {
        let bus = bus_address("unix:path=/run/user/1000/bus");
        assert_eq!(bus.sockets, [PathBuf::from("/run/user/1000/bus")]);
        assert!(bus.unhidden.is_none());
        let bus = bus_address(
            "unix:abstract=/tmp/dbus-x,guid=1;unix:path=/tmp/my%20bus,guid=2;tcp:host=h",
        );
        assert_eq!(bus.sockets, [PathBuf::from("/tmp/my bus")]);
        assert_eq!(
            bus.unhidden.as_deref(),
            Some("unix:abstract=/tmp/dbus-x,guid=1")
        );
        assert!(bus_address("").sockets.is_empty());
        assert_eq!(unescape("a%2"), "a%2");
    }
}
