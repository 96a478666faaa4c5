//! `runner run`: stay connected to the relay and execute calls, forever.
//!
//! The loop around [`session::run`] reconnects with jittered exponential
//! backoff and stops only on a signal or when the relay says this runner
//! must stop (replaced by another runner, token revoked, environment
//! deleted); the latter exits with [`exit::STOPPED_BY_RELAY`] so a service
//! manager does not restart it into a fight.

pub mod autoupdate;
pub mod backoff;
pub mod dial;
pub mod health;
pub mod leftovers;
pub mod lifetime;
pub mod lock;
pub mod metrics;
pub mod notify;
pub mod probe;
pub mod process_secrecy;
pub mod session;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use runner_proto::close;
use tokio_util::sync::CancellationToken;

use crate::exit::{self, ExitError};
use crate::update::PendingUpdate;
use autoupdate::Restart;
use backoff::Backoff;
use session::{SessionConfig, SessionEnd};

/// Two `go_away`s closer than this: the second one waits for the backoff.
const GO_AWAY_SPACING: std::time::Duration = std::time::Duration::from_secs(2);

/// A binary on probation after an update: it must be welcomed by the relay
/// before `deadline`, or it is rolled back.
pub struct Probation {
    pub pending: PendingUpdate,
    pub state_dir: PathBuf,
    pub deadline: tokio::time::Instant,
}

/// Runs sessions until shutdown or a terminal close.
pub async fn run_forever(
    config: SessionConfig,
    shutdown: CancellationToken,
    mut probation: Option<Probation>,
) -> Result<()> {
    let mut backoff = Backoff::new();
    let carry = session::Carry::new(config.max_concurrent_calls, &config.health);
    let health = std::sync::Arc::clone(&config.health);
    let mut last_go_away: Option<Instant> = None;
    loop {
        let started = Instant::now();
        let session = session::run(&config, &carry, &shutdown);
        tokio::pin!(session);
        let end = loop {
            let deadline = probation.as_ref().map(|p| p.deadline);
            tokio::select! {
                end = &mut session => break end,
                () = sleep_until(deadline) => {
                    // `deadline` is Some here: `sleep_until(None)` never returns.
                    let Some(expired) = probation.take() else { continue };
                    // Welcomed in time: the session removed the marker.
                    if crate::update::pending(&expired.state_dir).is_none() {
                        continue;
                    }
                    health.update(Some(format!(
                        "{} did not connect within its probation; rolling back",
                        expired.pending.version
                    )));
                    match autoupdate::fail_probation(&expired.state_dir, &expired.pending) {
                        Restart::Reexec => return Err(autoupdate::restart(&expired.pending.path)),
                        Restart::Exit => return Err(restart_exit()),
                        Restart::No => {}
                    }
                }
            }
        };
        match end {
            SessionEnd::Shutdown => {
                health.stopped("shut down");
                tracing::info!("stopped");
                return Ok(());
            }
            SessionEnd::Restart { version } => {
                health.stopped(&format!("restarting into {version}"));
                return Err(match config.auto_update.as_ref().and_then(|a| a.ready()) {
                    Some(autoupdate::Ready::Installed { .. }) => match &config.auto_update {
                        Some(auto_update) => autoupdate::restart(auto_update.exe()),
                        None => restart_exit(),
                    },
                    _ => restart_exit(),
                });
            }
            SessionEnd::Terminal { code, reason } => {
                let what = match code {
                    close::REPLACED => "this runner was replaced",
                    close::REVOKED => "this runner's registration token was revoked",
                    close::DELETED => "this runner's environment was deleted",
                    close::UNSUPPORTED_VERSION => {
                        "the relay does not support this runner's protocol version"
                    }
                    _ => "the relay told this runner to stop",
                };
                let hint = match code {
                    close::REPLACED => "only one runner may serve an environment; stop the other one, or register this machine with its own environment",
                    close::UNSUPPORTED_VERSION => "install the runner version the relay offers",
                    _ => "register again with a new token: `runner register --url URL`",
                };
                health.stopped(&format!("{what}: {reason}"));
                return Err(
                    ExitError::new(exit::STOPPED_BY_RELAY, format!("{what}: {reason}"))
                        .with_hint(hint)
                        .into(),
                );
            }
            SessionEnd::Unauthorized(reason) => {
                health.stopped(&format!("the relay refused this runner's token: {reason}"));
                return Err(ExitError::new(
                    exit::STOPPED_BY_RELAY,
                    format!("the relay refused this runner's token: {reason}"),
                )
                .with_hint("generate a new token (`runner token generate ENV`) and run `runner register` again")
                .into());
            }
            // A draining relay: straight back through the load-balanced
            // URL, unless the previous session ended the same way a moment
            // ago (then the usual backoff, so a confused relay cannot spin
            // us).
            SessionEnd::GoAway { reason }
                if last_go_away.is_none_or(|at| at.elapsed() >= GO_AWAY_SPACING) =>
            {
                tracing::info!(%reason, "the relay asked this runner to reconnect elsewhere; reconnecting now");
                health.disconnected(&format!("relay draining: {reason}"));
                last_go_away = Some(Instant::now());
                backoff.reset();
            }
            SessionEnd::GoAway { reason } => {
                let delay = backoff.next_delay();
                health.disconnected(&format!("relay draining: {reason}"));
                tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "asked to reconnect again; backing off");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown.cancelled() => return Ok(()),
                }
            }
            SessionEnd::Retry {
                welcomed,
                reason,
                retry_after,
            } => {
                if welcomed && started.elapsed() >= backoff::HEALTHY_SESSION {
                    backoff.reset();
                }
                let delay = match retry_after {
                    Some(floor) => backoff.next_delay_at_least(floor),
                    None => backoff.next_delay(),
                };
                health.disconnected(&reason);
                tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "disconnected; reconnecting");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown.cancelled() => return Ok(()),
                }
            }
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn restart_exit() -> anyhow::Error {
    ExitError::new(
        exit::RESTART_FOR_UPDATE,
        "exiting for the service manager to restart the runner (update)",
    )
    .into()
}
