//! `run --idle-exit-s` / `--max-lifetime-s`: a sandbox's runner stops on
//! its own after a quiet spell or at the end of its life, and its host
//! then destroys the sandbox (docs/sandboxes.md).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::health::Health;

/// How often the watch looks at the call counters.
const TICK: Duration = Duration::from_millis(250);

/// When to stop; `None`: never for that reason.
#[derive(Debug, Clone, Copy)]
pub struct Lifetime {
    /// Without a call received and none running.
    pub idle: Option<Duration>,
    /// From start.
    pub max: Option<Duration>,
}

/// Cancels `shutdown` once `lifetime` says so.
pub async fn stop_when_done(lifetime: Lifetime, health: Arc<Health>, shutdown: CancellationToken) {
    let started = Instant::now();
    let mut last_active = started;
    let mut seen = health.received.load(Ordering::Relaxed);
    let mut tick = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shutdown.cancelled() => return,
        }
        let now = Instant::now();
        let received = health.received.load(Ordering::Relaxed);
        let busy = health.in_flight.load(Ordering::Relaxed) > 0
            || health.backlog.load(Ordering::Relaxed) > 0;
        if received != seen || busy {
            seen = received;
            last_active = now;
        }
        if lifetime.max.is_some_and(|max| now - started >= max) {
            tracing::info!("maximum lifetime reached: stopping");
            break;
        }
        if lifetime.idle.is_some_and(|idle| now - last_active >= idle) {
            tracing::info!("idle timeout reached: stopping");
            break;
        }
    }
    shutdown.cancel();
}
