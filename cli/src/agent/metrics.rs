//! The runner's metrics, served at `/metrics` on `run --health-addr` in the
//! OpenMetrics text format through the official `prometheus-client` crate
//! (names and labels: docs/metrics.md).
//!
//! Calls are counted as they end (atomic increments on series resolved
//! when a tool is first seen); the gauges (in flight, backlog, connected,
//! update) are set from what the health endpoint reads at scrape time. The
//! `tool` label is capped at [`MAX_TOOLS`] names, later ones count as
//! `other`: the relay may send any name.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// The prefix of every runner metric.
pub const PREFIX: &str = "runner";
/// The media type of a scrape's answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Distinct tool names with their own series.
pub const MAX_TOOLS: usize = 200;
/// The `tool` label past the cap.
pub const OTHER: &str = "other";
/// The git commit this binary was built from, when the build said
/// (`RUNNER_GIT_COMMIT` at compile time).
pub const GIT_COMMIT: &str = match option_env!("RUNNER_GIT_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};

/// How a call ended on this runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The tool returned without an error (whatever a command's exit code).
    Ok,
    /// The tool failed.
    Error,
    /// The permission file refused it.
    Denied,
    /// Cancelled while it waited for a free slot.
    Cancelled,
}

impl Outcome {
    const ALL: [Outcome; 4] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::Denied,
        Outcome::Cancelled,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The outcome of a call that ended with `error` (`None`: succeeded).
    pub fn of_error(error: Option<&str>) -> Outcome {
        match error {
            None => Outcome::Ok,
            Some(error) if crate::gate::is_denial(error) => Outcome::Denied,
            Some(_) => Outcome::Error,
        }
    }
}

impl EncodeLabelValue for Outcome {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

/// What self-update is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpdateState {
    /// Nothing under way.
    Idle,
    /// Downloading and verifying a newer version.
    Downloading,
    /// A newer version is installed (or handed to the service), waiting
    /// for no call to be running to restart into it.
    Installed,
    /// The last attempt failed (or was rolled back); retried later.
    Failed,
}

impl UpdateState {
    const ALL: [UpdateState; 4] = [
        UpdateState::Idle,
        UpdateState::Downloading,
        UpdateState::Installed,
        UpdateState::Failed,
    ];

    fn as_str(self) -> &'static str {
        match self {
            UpdateState::Idle => "idle",
            UpdateState::Downloading => "downloading",
            UpdateState::Installed => "installed",
            UpdateState::Failed => "failed",
        }
    }
}

impl EncodeLabelValue for UpdateState {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CallLabels {
    tool: Arc<str>,
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct UpdateLabel {
    state: UpdateState,
}

/// What the session and self-update record, and `/metrics` shows.
#[derive(Debug)]
pub struct RunnerMetrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    known: RwLock<HashMap<Arc<str>, Arc<[Counter; 4]>>>,
    other: Arc<[Counter; 4]>,
    in_flight: Gauge,
    backlog: Gauge,
    connected: Gauge,
    update_available: Gauge,
    update: Family<UpdateLabel, Gauge>,
    update_state: AtomicU8,
    kept_output_bytes: Gauge,
    kept_output_cap_bytes: Gauge,
    kept_output_evicted: Gauge,
}

impl Default for RunnerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl RunnerMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register(
            "build",
            "The runner's version and the git commit it was built from",
            Info::new(vec![
                ("version", env!("CARGO_PKG_VERSION")),
                ("git_commit", GIT_COMMIT),
            ]),
        );
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls this runner finished, by tool and outcome",
            calls.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "tool_calls_in_flight",
            "Tool calls running now",
            in_flight.clone(),
        );
        let backlog = Gauge::default();
        registry.register(
            "tool_calls_queued",
            "Tool calls waiting for a free slot (--max-concurrent-calls)",
            backlog.clone(),
        );
        let connected = Gauge::default();
        registry.register(
            "relay_connected",
            "1 while a session with the relay is up, else 0",
            connected.clone(),
        );
        let update_available = Gauge::default();
        registry.register(
            "update_available",
            "1 when the relay offers a newer runner version, else 0",
            update_available.clone(),
        );
        let update = Family::<UpdateLabel, Gauge>::default();
        registry.register(
            "update_state",
            "Self-update: 1 for the state it is in, 0 for the others",
            update.clone(),
        );
        let kept_output_bytes = Gauge::default();
        registry.register(
            "kept_output_bytes",
            "Bytes the files keeping large outputs held when last measured",
            kept_output_bytes.clone(),
        );
        let kept_output_cap_bytes = Gauge::default();
        registry.register(
            "kept_output_cap_bytes",
            "The cap on those files (--kept-output-max-mb)",
            kept_output_cap_bytes.clone(),
        );
        let kept_output_evicted = Gauge::default();
        registry.register(
            "kept_output_evicted_files",
            "Kept output files removed to stay under the cap since the runner started",
            kept_output_evicted.clone(),
        );
        let other = Arc::new(series(&calls, Arc::from(OTHER)));
        let metrics = Self {
            registry,
            calls,
            known: RwLock::default(),
            other,
            in_flight,
            backlog,
            connected,
            update_available,
            update,
            update_state: AtomicU8::new(0),
            kept_output_bytes,
            kept_output_cap_bytes,
            kept_output_evicted,
        };
        metrics.set_update_state(UpdateState::Idle);
        metrics
    }

    /// A call of `tool` ended with `outcome`.
    pub fn call_finished(&self, tool: &str, outcome: Outcome) {
        let index = Outcome::ALL
            .iter()
            .position(|known| *known == outcome)
            .unwrap_or(0);
        self.tool(tool)[index].inc();
    }

    fn tool(&self, tool: &str) -> Arc<[Counter; 4]> {
        {
            let known = self.known.read().unwrap_or_else(|p| p.into_inner());
            if let Some(series) = known.get(tool) {
                return series.clone();
            }
            if known.len() >= MAX_TOOLS || tool == OTHER {
                return self.other.clone();
            }
        }
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if known.len() >= MAX_TOOLS {
            return self.other.clone();
        }
        let name: Arc<str> = Arc::from(tool);
        known
            .entry(name.clone())
            .or_insert_with(|| Arc::new(series(&self.calls, name)))
            .clone()
    }

    /// Self-update moved to `state`.
    pub fn set_update_state(&self, state: UpdateState) {
        let index = UpdateState::ALL
            .iter()
            .position(|known| *known == state)
            .unwrap_or(0);
        self.update_state
            .store(u8::try_from(index).unwrap_or(0), Ordering::Relaxed);
    }

    /// The exposition, with the gauges set to `now` (what the health
    /// endpoint reads at the scrape).
    pub fn encode(&self, now: Gauges) -> String {
        self.in_flight.set(i64::from(now.in_flight));
        self.backlog.set(i64::from(now.backlog));
        self.connected.set(i64::from(now.connected));
        self.update_available.set(i64::from(now.update_available));
        let kept = crate::exec::kept::usage();
        let as_gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        self.kept_output_bytes.set(as_gauge(kept.bytes));
        self.kept_output_cap_bytes
            .set(as_gauge(crate::exec::kept::output_cap()));
        self.kept_output_evicted.set(as_gauge(kept.evicted_files));
        let current = usize::from(self.update_state.load(Ordering::Relaxed));
        for (index, state) in UpdateState::ALL.into_iter().enumerate() {
            self.update
                .get_or_create(&UpdateLabel { state })
                .set(i64::from(index == current));
        }
        let mut text = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// The runner's state at a scrape, as the health endpoint reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    pub in_flight: u32,
    pub backlog: u32,
    pub connected: bool,
    pub update_available: bool,
}

fn series(calls: &Family<CallLabels, Counter>, tool: Arc<str>) -> [Counter; 4] {
    Outcome::ALL.map(|outcome| {
        calls.get_or_create_owned(&CallLabels {
            tool: tool.clone(),
            outcome,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_past_the_cap_count_as_other() {
        let metrics = RunnerMetrics::new();
        for n in 0..MAX_TOOLS + 5 {
            metrics.call_finished(&format!("tool_{n}"), Outcome::Ok);
        }
        metrics.call_finished("x", Outcome::Denied);
        let text = metrics.encode(Gauges::default());
        assert!(text.contains("runner_tool_calls_total{tool=\"tool_0\",outcome=\"ok\"} 1"));
        assert!(text.contains("runner_tool_calls_total{tool=\"other\",outcome=\"ok\"} 5"));
        assert!(text.contains("runner_tool_calls_total{tool=\"other\",outcome=\"denied\"} 1"));
        assert!(!text.contains(&format!("tool_{MAX_TOOLS}\"")));
        assert!(text.contains("runner_update_state{state=\"idle\"} 1"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn permission_file_refusals_are_denied() {
        let refusal = format!("{}: shell rm", crate::gate::DENIED_PREFIX);
        assert_eq!(Outcome::of_error(Some(&refusal)), Outcome::Denied);
        assert_eq!(Outcome::of_error(Some("boom")), Outcome::Error);
        assert_eq!(Outcome::of_error(None), Outcome::Ok);
    }
}
