//! Self-update on the relay's word, with a probation that rolls back.
//!
//! The relay names the newest release in heartbeat answers. When it is
//! newer than this binary (and not a version this state directory already
//! installed or rejected), a background task downloads and verifies it
//! ([`crate::update::apply_update`]: signed SHA256SUMS, hash, length,
//! architecture) while the runner keeps serving calls. Then:
//!
//! * **The executable is writable** (a runner started by hand, a container):
//!   it is replaced in place, `NEW --version` must answer (a binary that
//!   cannot even start is rolled back at once), the probation marker is
//!   written, and as soon as no call is running the session closes and the
//!   process re-executes itself (same PID, same arguments) — or, under
//!   systemd, exits [`exit::RESTART_FOR_UPDATE`] to be restarted.
//! * **It is not** (the systemd service: `ProtectSystem=strict` keeps
//!   `/usr/local/bin` read-only for the unprivileged `runner` user): the
//!   runner writes `update-requested` in its state directory and exits
//!   [`exit::RESTART_FOR_UPDATE`]; the unit's `ExecStartPre=+…` runs
//!   [`service_step`] as root before the next start, which downloads and
//!   verifies the release itself (it trusts nothing the unprivileged runner
//!   wrote but the version number, and only installs a *newer* signed
//!   release) and installs it.
//!
//! Probation: a new binary that finds the marker must be welcomed by the
//! relay within [`probation`] (default 2 minutes). If it is, the marker
//! goes and the version is recorded as installed. If not, it rolls back to
//! `runner.previous` (or, under the service, asks the root step to), records
//! the version as rejected so it is never tried again, and restarts into the
//! old binary. The root step also rolls back an update whose binary keeps
//! failing to start ([`MAX_PROBATION_STARTS`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use super::health::Health;
use super::metrics::UpdateState;
use crate::exit;
use crate::update::{self, Mirror, PendingUpdate, Progress, UpdateError, CURRENT_VERSION};

/// Default time a new binary gets to connect before it is rolled back.
pub const DEFAULT_PROBATION: Duration = Duration::from_secs(120);
/// Overrides [`DEFAULT_PROBATION`] (seconds); for tests and slow networks.
pub const PROBATION_ENV: &str = crate::env_vars::UPDATE_PROBATION_SECS;
/// Starts of a binary on probation (counted by the root step) after which
/// it is rolled back without waiting any longer.
pub const MAX_PROBATION_STARTS: u32 = 3;
/// Wait after a mirror that could not be reached.
const RETRY_UNREACHABLE: Duration = Duration::from_secs(600);
/// Wait after a release that failed verification (until a restart, or a day).
const RETRY_REJECTED: Duration = Duration::from_secs(24 * 3600);
/// Time `NEW --version` gets to answer.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// Written by the unprivileged runner for the root step: install this version.
const REQUEST_FILE: &str = "update-requested";
/// Written by a binary that failed its probation under the service.
const ROLLBACK_FILE: &str = "rollback-requested";
/// Versions installed and rejected here, so none is tried twice.
const HISTORY_FILE: &str = "update-history.json";

/// The probation deadline from the environment.
pub fn probation() -> Duration {
    std::env::var(PROBATION_ENV)
        .ok()
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map_or(DEFAULT_PROBATION, Duration::from_secs)
}

/// Whether systemd started this process (it sets `INVOCATION_ID`): then a
/// restart is an exit, and the service manager starts the new binary.
pub fn under_systemd() -> bool {
    std::env::var_os("INVOCATION_ID").is_some()
}

/// Versions this state directory has installed or refused.
#[derive(Debug, Default, Serialize, Deserialize)]
struct History {
    #[serde(default)]
    installed: Vec<String>,
    #[serde(default)]
    rejected: Vec<String>,
}

impl History {
    fn load(state_dir: &Path) -> History {
        std::fs::read(state_dir.join(HISTORY_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn knows(&self, version: &str) -> bool {
        self.installed
            .iter()
            .chain(&self.rejected)
            .any(|v| v == version)
    }

    fn record(state_dir: &Path, version: &str, installed: bool) {
        let mut history = History::load(state_dir);
        let list = if installed {
            &mut history.installed
        } else {
            &mut history.rejected
        };
        if !list.iter().any(|v| v == version) {
            list.push(version.to_owned());
        }
        if let Err(error) = write_shared(&state_dir.join(HISTORY_FILE), &history) {
            tracing::warn!(%error, "cannot record the update history");
        }
    }
}

/// Writes a small JSON file readable by the service user even when root
/// (the service step) writes it. Nothing in these files is secret.
/// Replaced by rename, so the service user can update a file root wrote
/// (it owns the directory, not the file).
fn write_shared(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut temp, &text)?;
    make_readable(temp.path())?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// What happens at the restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// The new binary is in place: re-execute (or exit under systemd).
    Installed { version: String },
    /// The root step must install it: exit for systemd to restart us.
    Requested { version: String },
}

impl Ready {
    pub fn version(&self) -> &str {
        match self {
            Ready::Installed { version } | Ready::Requested { version } => version,
        }
    }
}

#[derive(Debug, Default)]
struct Progressing {
    busy: bool,
    ready: Option<Ready>,
    not_before: HashMap<String, Instant>,
}

/// Self-update for one `runner run`.
#[derive(Debug)]
pub struct AutoUpdate {
    state_dir: PathBuf,
    mirror: String,
    exe: PathBuf,
    health: Arc<Health>,
    progress: Mutex<Progressing>,
    /// Woken when an update is ready to restart into.
    pub ready_notify: Notify,
}

impl AutoUpdate {
    pub fn new(state_dir: &Path, mirror: &str, exe: PathBuf, health: Arc<Health>) -> AutoUpdate {
        AutoUpdate {
            state_dir: state_dir.to_path_buf(),
            mirror: mirror.to_owned(),
            exe,
            health,
            progress: Mutex::default(),
            ready_notify: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Progressing> {
        // Poisoning needs a panic while holding the lock; every field is
        // assigned whole, so the state stays consistent.
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The executable that updates replace.
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// An update installed (or requested) and waiting for a restart.
    pub fn ready(&self) -> Option<Ready> {
        self.lock().ready.clone()
    }

    /// The relay named `latest`: start updating to it if it is newer and
    /// worth trying. Returns at once; the work runs in the background.
    pub fn offer(self: &Arc<Self>, latest: &str) {
        if !runner_proto::version::is_newer(latest, CURRENT_VERSION) {
            return;
        }
        if History::load(&self.state_dir).knows(latest) {
            tracing::debug!(%latest, "not updating: this version was installed or rejected here before");
            return;
        }
        {
            let mut progress = self.lock();
            if progress.busy || progress.ready.is_some() {
                return;
            }
            if progress
                .not_before
                .get(latest)
                .is_some_and(|at| Instant::now() < *at)
            {
                return;
            }
            progress.busy = true;
        }
        let this = Arc::clone(self);
        let latest = latest.to_owned();
        tokio::spawn(async move {
            let outcome = this.fetch(&latest).await;
            let mut progress = this.lock();
            progress.busy = false;
            match outcome {
                Ok(ready) => {
                    progress.ready = Some(ready);
                    drop(progress);
                    this.ready_notify.notify_one();
                }
                Err(wait) => {
                    progress.not_before.insert(latest, Instant::now() + wait);
                }
            }
        });
    }

    /// Downloads, verifies and installs (or requests) `version`. `Err` is
    /// how long to wait before trying this version again.
    async fn fetch(&self, version: &str) -> Result<Ready, Duration> {
        self.health
            .update(Some(format!("downloading and verifying {version}")));
        self.health
            .metrics
            .set_update_state(UpdateState::Downloading);
        tracing::info!(%version, mirror = %self.mirror, "a newer runner version is available; updating");
        let mirror = Mirror::new(&self.mirror).map_err(|error| {
            self.failed(version, &error);
            RETRY_REJECTED
        })?;
        match update::apply_update(&mirror, version, &self.exe, Progress::Hidden).await {
            Ok(applied) => {
                if let Err(reason) = preflight(&self.exe).await {
                    tracing::error!(%version, %reason, "the new binary does not start; rolling back");
                    if let Err(error) = update::rollback(&self.exe) {
                        tracing::error!(error = %crate::client::error_chain(&error), "rollback failed");
                    }
                    History::record(&self.state_dir, version, false);
                    self.health.metrics.set_update_state(UpdateState::Failed);
                    self.health.update(Some(format!(
                        "update to {version} rejected: the new binary does not start ({reason})"
                    )));
                    return Err(RETRY_REJECTED);
                }
                let pending = PendingUpdate {
                    version: applied.version.clone(),
                    previous_version: CURRENT_VERSION.to_owned(),
                    path: applied.path.clone(),
                    starts: 0,
                };
                if let Err(error) = update::mark_pending(&self.state_dir, &pending) {
                    // Without the marker there is no probation: undo.
                    tracing::error!(error = %crate::client::error_chain(&error), "cannot record the update; rolling back");
                    let _ = update::rollback(&self.exe);
                    self.health.metrics.set_update_state(UpdateState::Failed);
                    self.health
                        .update(Some(format!("update to {version} undone: {error}")));
                    return Err(RETRY_UNREACHABLE);
                }
                self.health.metrics.set_update_state(UpdateState::Installed);
                self.health.update(Some(format!(
                    "{version} installed; restarting into it when no call is running"
                )));
                Ok(Ready::Installed {
                    version: version.to_owned(),
                })
            }
            Err(UpdateError::Io { ref source, .. })
                if under_systemd() && is_not_writable(source) =>
            {
                // The service's read-only executable: the root step installs.
                let request = self.state_dir.join(REQUEST_FILE);
                if let Err(error) = std::fs::write(&request, version) {
                    tracing::error!(path = %request.display(), %error, "cannot request the update");
                    return Err(RETRY_UNREACHABLE);
                }
                self.health.metrics.set_update_state(UpdateState::Installed);
                self.health.update(Some(format!(
                    "{version} verified; restarting for the service to install it"
                )));
                Ok(Ready::Requested {
                    version: version.to_owned(),
                })
            }
            Err(error) => {
                self.failed(version, &error);
                Err(if error.is_unreachable() {
                    RETRY_UNREACHABLE
                } else {
                    RETRY_REJECTED
                })
            }
        }
    }

    fn failed(&self, version: &str, error: &UpdateError) {
        let chain = crate::client::error_chain(error);
        tracing::error!(%version, error = %chain, "update failed; this binary stays");
        self.health.metrics.set_update_state(UpdateState::Failed);
        self.health
            .update(Some(format!("update to {version} failed: {chain}")));
    }

    /// The relay welcomed this binary: an update on probation is confirmed.
    pub fn welcomed(&self) {
        confirm_probation(&self.state_dir);
    }
}

/// Drops the probation marker of the running binary, if any, and records
/// its version as installed.
pub fn confirm_probation(state_dir: &Path) {
    let Some(pending) = update::pending(state_dir) else {
        return;
    };
    match update::confirm(state_dir) {
        Ok(()) => {
            History::record(state_dir, &pending.version, true);
            tracing::info!(version = %pending.version, previous = %pending.previous_version, "update confirmed: connected with the new binary");
        }
        Err(error) => {
            tracing::warn!(error = %crate::client::error_chain(&error), "cannot remove the update marker")
        }
    }
}

fn is_not_writable(error: &std::io::Error) -> bool {
    // EROFS has no stable ErrorKind on the MSRV; 30 on Linux.
    error.kind() == std::io::ErrorKind::PermissionDenied || error.raw_os_error() == Some(30)
}

/// Runs `exe --version`: a binary that cannot do that will not run calls.
async fn preflight(exe: &Path) -> Result<(), String> {
    let run = tokio::process::Command::new(exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(PREFLIGHT_TIMEOUT, run).await {
        Err(_) => Err(format!(
            "no answer to --version in {}s",
            PREFLIGHT_TIMEOUT.as_secs()
        )),
        Ok(Err(error)) => Err(format!("cannot run it: {error}")),
        Ok(Ok(output)) if !output.status.success() => {
            Err(format!("--version exited with {}", output.status))
        }
        Ok(Ok(output)) if !output.stdout.starts_with(b"runner ") => {
            Err("--version did not print a runner version".to_owned())
        }
        Ok(Ok(_)) => Ok(()),
    }
}

/// The probation of a binary that has not connected in time: roll back (or,
/// under the service, ask the root step to) and record the version as
/// rejected. Returns what to do next.
pub fn fail_probation(state_dir: &Path, pending: &PendingUpdate) -> Restart {
    History::record(state_dir, &pending.version, false);
    let exe_writable = update::rollback(&pending.path);
    match exe_writable {
        Ok(path) => {
            let _ = update::confirm(state_dir);
            tracing::error!(version = %pending.version, restored = %path.display(), "the new version did not connect in time: rolled back");
            Restart::Reexec
        }
        Err(UpdateError::Io { ref source, .. }) if under_systemd() && is_not_writable(source) => {
            if let Err(error) = std::fs::write(state_dir.join(ROLLBACK_FILE), &pending.version) {
                tracing::error!(%error, "cannot request the rollback");
            }
            tracing::error!(version = %pending.version, "the new version did not connect in time: restarting for the service to roll back");
            Restart::Exit
        }
        Err(error) => {
            // Nothing to go back to: keep running what we have, and never
            // judge it again.
            let _ = update::confirm(state_dir);
            tracing::error!(error = %crate::client::error_chain(&error), "the new version did not connect in time, and rolling back failed; staying on it");
            Restart::No
        }
    }
}

/// How to continue after an update or a rollback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Re-execute this process image (manual mode), or exit under systemd.
    Reexec,
    /// Exit for the service manager to restart us.
    Exit,
    /// Keep running.
    No,
}

/// Replaces this process with `exe` and the same arguments (same PID: a
/// terminal, a supervisor, the instance lock's PID all stay right). The
/// instance lock and every socket are close-on-exec, so the new image
/// starts clean. Under systemd, exits [`exit::RESTART_FOR_UPDATE`] instead.
pub fn restart(exe: &Path) -> anyhow::Error {
    if under_systemd() {
        return exit::ExitError::new(
            exit::RESTART_FOR_UPDATE,
            "restarting into the updated binary (the service manager starts it)",
        )
        .into();
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(exe);
        command.args(std::env::args_os().skip(1));
        tracing::info!(exe = %exe.display(), "re-executing");
        // Only returns on failure.
        let error = command.exec();
        anyhow::Error::new(error).context(format!("cannot re-execute {}", exe.display()))
    }
    #[cfg(not(unix))]
    {
        exit::ExitError::new(
            exit::RESTART_FOR_UPDATE,
            "restart to use the updated binary",
        )
        .into()
    }
}

/// What [`service_step`] did, for its log line and tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum StepOutcome {
    Nothing,
    RolledBack { version: String, reason: String },
    Installed { version: String },
    Refused { version: String, reason: String },
}

/// The root half of a service update, run by `runner update --service-step`
/// from the unit's `ExecStartPre=-+`: roll back a failed probation, or
/// install a requested release. Never fails the start of the service: every
/// error is reported in the outcome and the log.
pub async fn service_step(state_dir: &Path, exe: &Path, mirror: Option<&str>) -> StepOutcome {
    let rollback_request = state_dir.join(ROLLBACK_FILE);
    let request = state_dir.join(REQUEST_FILE);

    if let Some(mut pending) = update::pending(state_dir) {
        let asked = std::fs::read_to_string(&rollback_request).ok();
        pending.starts += 1;
        let reason = match asked {
            Some(_) => Some("it did not connect within its probation".to_owned()),
            None if pending.starts > MAX_PROBATION_STARTS => Some(format!(
                "it started {} times without connecting",
                pending.starts - 1
            )),
            None => None,
        };
        let _ = std::fs::remove_file(&rollback_request);
        let _ = std::fs::remove_file(&request);
        match reason {
            None => {
                // Still on probation: count this start and let it try.
                let _ = update::mark_pending(state_dir, &pending);
                let _ = make_readable(&state_dir.join("update-pending.json"));
                return StepOutcome::Nothing;
            }
            Some(reason) => {
                History::record(state_dir, &pending.version, false);
                let _ = update::confirm(state_dir);
                return match update::rollback(exe) {
                    Ok(_) => StepOutcome::RolledBack {
                        version: pending.version,
                        reason,
                    },
                    Err(error) => StepOutcome::Refused {
                        version: pending.version,
                        reason: format!(
                            "{reason}, and rollback failed: {}",
                            crate::client::error_chain(&error)
                        ),
                    },
                };
            }
        }
    }
    let _ = std::fs::remove_file(&rollback_request);

    let Ok(version) = std::fs::read_to_string(&request) else {
        return StepOutcome::Nothing;
    };
    let _ = std::fs::remove_file(&request);
    let version = version.trim().to_owned();
    // The request comes from the unprivileged runner: believe only that it
    // wants a newer release; what gets installed is what the release key
    // signed for that version.
    if !runner_proto::version::is_valid(&version)
        || !runner_proto::version::is_newer(&version, CURRENT_VERSION)
    {
        return StepOutcome::Refused {
            reason: format!("{version:?} is not newer than {CURRENT_VERSION}"),
            version: version.chars().take(64).collect(),
        };
    }
    let Some(mirror) = mirror else {
        return StepOutcome::Refused {
            version,
            reason: "no mirror: set RUNNER_UPDATE_MIRROR or RUNNER_URL in /etc/runner/env"
                .to_owned(),
        };
    };
    let applied = match Mirror::new(mirror) {
        Ok(mirror) => update::apply_update(&mirror, &version, exe, Progress::Hidden).await,
        Err(error) => Err(error),
    };
    match applied {
        Ok(applied) => {
            if let Err(reason) = preflight(exe).await {
                let _ = update::rollback(exe);
                History::record(state_dir, &version, false);
                return StepOutcome::Refused {
                    version,
                    reason: format!("the new binary does not start ({reason}); rolled back"),
                };
            }
            let pending = PendingUpdate {
                version: applied.version.clone(),
                previous_version: CURRENT_VERSION.to_owned(),
                path: applied.path,
                starts: 0,
            };
            if let Err(error) = update::mark_pending(state_dir, &pending) {
                let _ = update::rollback(exe);
                return StepOutcome::Refused {
                    version,
                    reason: format!(
                        "cannot record the probation ({}); rolled back",
                        crate::client::error_chain(&error)
                    ),
                };
            }
            let _ = make_readable(&state_dir.join("update-pending.json"));
            StepOutcome::Installed { version }
        }
        Err(error) => {
            if !error.is_unreachable() {
                History::record(state_dir, &version, false);
            }
            StepOutcome::Refused {
                version,
                reason: crate::client::error_chain(&error),
            }
        }
    }
}

/// Root writes the marker; the service user must be able to read it (and,
/// owning the directory, remove it).
fn make_readable(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_remembers_installed_and_rejected_versions() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!History::load(dir.path()).knows("2.0.0"));
        History::record(dir.path(), "2.0.0", true);
        History::record(dir.path(), "3.0.0", false);
        History::record(dir.path(), "3.0.0", false);
        let history = History::load(dir.path());
        assert!(history.knows("2.0.0"));
        assert!(history.knows("3.0.0"));
        assert!(!history.knows("4.0.0"));
        assert_eq!(history.rejected, vec!["3.0.0".to_owned()]);
    }
}
