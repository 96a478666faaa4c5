//! What a running runner says about itself, for watchdogs and people.
//!
//! One [`Health`] per `runner run`: the session updates it (connected,
//! disconnected and why, calls in flight and queued, an update under way),
//! and it is published two ways, so nothing needs a script around it:
//!
//! * `STATE_DIR/status.json`, rewritten atomically on every change and on
//!   every heartbeat, which `runner status --local` reads (together with the
//!   instance lock, which tells a live runner from a stale file);
//! * an optional HTTP endpoint (`--health-addr 127.0.0.1:PORT`) with
//!   `/healthz` (200 when connected, degraded included; 503 otherwise) and
//!   `/status.json` (the whole snapshot), for load balancers and monitors.
//!
//! Degraded is computed when read, like the relay's status: connected, but
//! calls are waiting for a free slot.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The file `runner status --local` reads.
pub const STATUS_FILE: &str = "status.json";

/// Where the runner stands with the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Started, not connected yet.
    Starting,
    /// Connected and keeping up.
    Connected,
    /// Connected, but calls are queueing for a free slot.
    Degraded,
    /// Lost the connection (or never got one); retrying.
    Disconnected,
    /// Stopped for good (signal, or told to stop by the relay).
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Connected => "connected",
            State::Degraded => "degraded",
            State::Disconnected => "disconnected",
            State::Stopped => "stopped",
        }
    }

    /// Whether a watchdog should consider the runner up: connected,
    /// degraded included (busy is not broken; restarting it would only
    /// kill the calls it is working on).
    pub fn is_up(self) -> bool {
        matches!(self, State::Connected | State::Degraded)
    }
}

/// One reading of the runner's health: what `/status.json`, the status
/// file and `runner status --local --json` show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub state: State,
    /// Why it is not simply connected (the last disconnect, the backlog).
    pub reason: Option<String>,
    /// The relay's base URL.
    pub relay: String,
    /// This runner's version.
    pub version: String,
    pub pid: u32,
    pub environment_id: Option<String>,
    pub environment_name: Option<String>,
    pub session_id: Option<String>,
    /// Unix seconds when the current session was welcomed.
    pub connected_since: Option<u64>,
    /// Calls running now.
    pub in_flight: u32,
    /// Calls waiting for a free slot.
    pub backlog: u32,
    /// The concurrency limit (`--max-concurrent-calls`).
    pub max_concurrent_calls: usize,
    /// A newer version the relay offers, when there is one.
    pub latest_version: Option<String>,
    /// What self-update is doing or last did, in words.
    pub update: Option<String>,
    /// Unix seconds of this reading (the status file is rewritten at least
    /// once per heartbeat while connected).
    pub updated_at: u64,
}

/// The part of the snapshot that only the session changes.
#[derive(Debug, Clone)]
struct Connection {
    state: State,
    reason: Option<String>,
    environment_id: Option<String>,
    environment_name: Option<String>,
    session_id: Option<String>,
    connected_since: Option<u64>,
    latest_version: Option<String>,
    update: Option<String>,
}

/// The live health of this runner; shared by the session, the call
/// counters, the status file and the endpoint.
#[derive(Debug)]
pub struct Health {
    relay: String,
    max_concurrent_calls: usize,
    file: Option<PathBuf>,
    connection: Mutex<Connection>,
    /// Calls running now; the session's call tracker counts here.
    pub in_flight: Arc<AtomicU32>,
    /// Calls waiting for a slot.
    pub backlog: Arc<AtomicU32>,
    /// Calls received since start (what `run --idle-exit-s` watches).
    pub received: Arc<std::sync::atomic::AtomicU64>,
    /// The executor health probe's last verdict ([`super::probe`]).
    pub executor: Arc<super::probe::Verdict>,
    /// Calls by tool and outcome, update state: `/metrics`.
    pub metrics: Arc<super::metrics::RunnerMetrics>,
}

impl Health {
    /// `state_dir`: where the status file goes (`None`: no file, for tests
    /// and embedders).
    pub fn new(relay: &str, max_concurrent_calls: usize, state_dir: Option<&Path>) -> Health {
        Health {
            relay: relay.to_owned(),
            max_concurrent_calls,
            file: state_dir.map(|dir| dir.join(STATUS_FILE)),
            connection: Mutex::new(Connection {
                state: State::Starting,
                reason: None,
                environment_id: None,
                environment_name: None,
                session_id: None,
                connected_since: None,
                latest_version: None,
                update: None,
            }),
            in_flight: Arc::default(),
            backlog: Arc::default(),
            received: Arc::default(),
            executor: Arc::default(),
            metrics: Arc::default(),
        }
    }

    /// Whether the runner is connected to the relay now.
    pub fn is_connected(&self) -> bool {
        self.connection
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .is_up()
    }

    fn with(&self, change: impl FnOnce(&mut Connection)) {
        {
            // Poisoning needs a panic while holding the lock; the fields stay
            // consistent either way (each is assigned whole).
            let mut connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
            change(&mut connection);
        }
        self.publish();
    }

    /// A session was welcomed.
    pub fn connected(&self, environment_id: &str, environment_name: &str, session_id: &str) {
        self.with(|c| {
            c.state = State::Connected;
            c.reason = None;
            c.environment_id = Some(environment_id.to_owned());
            c.environment_name = Some(environment_name.to_owned());
            c.session_id = Some(session_id.to_owned());
            c.connected_since = Some(unix_now());
        });
    }

    /// The connection is gone (or could not be made); `reason` says why.
    pub fn disconnected(&self, reason: &str) {
        self.with(|c| {
            c.state = State::Disconnected;
            c.reason = Some(reason.to_owned());
            c.session_id = None;
            c.connected_since = None;
        });
    }

    /// The runner stopped for good.
    pub fn stopped(&self, reason: &str) {
        self.with(|c| {
            c.state = State::Stopped;
            c.reason = Some(reason.to_owned());
            c.session_id = None;
            c.connected_since = None;
        });
    }

    /// The relay's heartbeat answer named the newest version (or none).
    pub fn latest_version(&self, latest: Option<&str>) {
        self.with(|c| c.latest_version = latest.map(str::to_owned));
    }

    /// What self-update is doing, in words (`None` clears it).
    pub fn update(&self, what: Option<String>) {
        self.with(|c| c.update = what);
    }

    /// Rewrites the status file (heartbeats call this so its `updated_at`
    /// shows the runner is alive).
    pub fn publish(&self) {
        let Some(path) = &self.file else { return };
        if let Err(error) = write_atomically(path, &self.snapshot()) {
            // Status is a convenience: never let it stop the runner.
            tracing::debug!(path = %path.display(), %error, "cannot write the status file");
        }
    }

    /// The health as of now.
    pub fn snapshot(&self) -> Snapshot {
        let c = self
            .connection
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        let backlog = self.backlog.load(Ordering::Relaxed);
        let (state, reason) = match c.state {
            State::Connected if backlog > 0 => (
                State::Degraded,
                Some(format!(
                    "{backlog} call(s) waiting for a free slot ({in_flight} running, limit {})",
                    self.max_concurrent_calls
                )),
            ),
            state => (state, c.reason),
        };
        Snapshot {
            state,
            reason,
            relay: self.relay.clone(),
            version: crate::update::CURRENT_VERSION.to_owned(),
            pid: std::process::id(),
            environment_id: c.environment_id,
            environment_name: c.environment_name,
            session_id: c.session_id,
            connected_since: c.connected_since,
            in_flight,
            backlog,
            max_concurrent_calls: self.max_concurrent_calls,
            latest_version: c.latest_version,
            update: c.update,
            updated_at: unix_now(),
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Write to a temporary file beside `path`, then rename: a reader sees the
/// old snapshot or the new one, never half of one.
fn write_atomically(path: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut text = serde_json::to_vec_pretty(snapshot).map_err(std::io::Error::other)?;
    text.push(b'\n');
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut temp, &text)?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Reads a status file written by [`Health::publish`].
pub fn read_status_file(state_dir: &Path) -> Result<Option<Snapshot>, String> {
    let path = state_dir.join(STATUS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|error| format!("{} is not a status file: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read {}: {error}", path.display())),
    }
}

/// Binds the health endpoint now (so a bad address stops the runner at
/// start, with a clear error) and serves it in the background.
pub async fn serve(addr: SocketAddr, health: Arc<Health>) -> std::io::Result<SocketAddr> {
    use axum::routing::get;

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() {
        tracing::warn!(%local, "the health endpoint listens beyond this machine; it shows the relay URL and environment, but no secret");
    }
    let app = axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/status.json", get(status_json))
        .route("/metrics", get(metrics))
        .with_state(health);
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "health endpoint stopped");
        }
    });
    tracing::info!(%local, "health endpoint listening (/healthz, /status.json, /metrics)");
    Ok(local)
}

async fn healthz(
    axum::extract::State(health): axum::extract::State<Arc<Health>>,
) -> (axum::http::StatusCode, axum::Json<serde_json::Value>) {
    let snapshot = health.snapshot();
    let code = if snapshot.state.is_up() {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        axum::Json(serde_json::json!({
            "status": snapshot.state,
            "reason": snapshot.reason,
        })),
    )
}

async fn metrics(
    axum::extract::State(health): axum::extract::State<Arc<Health>>,
) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            super::metrics::CONTENT_TYPE,
        )],
        health.metrics.encode({
            let snapshot = health.snapshot();
            super::metrics::Gauges {
                in_flight: snapshot.in_flight,
                backlog: snapshot.backlog,
                connected: snapshot.state.is_up(),
                update_available: snapshot.latest_version.is_some(),
            }
        }),
    )
}

async fn status_json(
    axum::extract::State(health): axum::extract::State<Arc<Health>>,
) -> axum::Json<Snapshot> {
    axum::Json(health.snapshot())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_calls_make_a_connected_runner_degraded_with_the_reason() {
        let health = Health::new("http://relay", 2, None);
        assert_eq!(health.snapshot().state, State::Starting);
        health.connected("env_1", "box", "ses_1");
        assert_eq!(health.snapshot().state, State::Connected);
        health.in_flight.store(2, Ordering::Relaxed);
        health.backlog.store(3, Ordering::Relaxed);
        let snapshot = health.snapshot();
        assert_eq!(snapshot.state, State::Degraded);
        let reason = snapshot.reason.unwrap_or_default();
        assert!(reason.contains("3 call(s) waiting"), "{reason}");
        assert!(reason.contains("limit 2"), "{reason}");
        // A disconnected runner is disconnected, backlog or not.
        health.disconnected("connection lost: reset");
        let snapshot = health.snapshot();
        assert_eq!(snapshot.state, State::Disconnected);
        assert_eq!(snapshot.reason.as_deref(), Some("connection lost: reset"));
        assert!(!snapshot.state.is_up());
    }

    #[test]
    fn the_status_file_round_trips_and_garbage_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(read_status_file(dir.path()), Ok(None));
        let health = Health::new("http://relay", 4, Some(dir.path()));
        health.connected("env_1", "box", "ses_1");
        let read = read_status_file(dir.path())
            .expect("readable")
            .expect("written");
        assert_eq!(read.state, State::Connected);
        assert_eq!(read.environment_id.as_deref(), Some("env_1"));
        assert_eq!(read.pid, std::process::id());
        std::fs::write(dir.path().join(STATUS_FILE), b"{not json").expect("write");
        assert!(read_status_file(dir.path()).is_err());
    }
}
