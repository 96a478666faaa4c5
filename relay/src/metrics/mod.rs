//! The relay's metrics in the Prometheus (OpenMetrics) text format, through
//! the official `prometheus-client` crate. Names, types, labels and the two
//! ways to scrape them are in docs/metrics.md.
//!
//! Recording is atomic increments on series resolved ahead of the call
//! (see [`tools`]); nothing here allocates per call. `serve --no-metrics`
//! makes every recording method a no-op (one branch) and `/metrics` answer
//! 404. No label carries an environment, session or call id, or a secret:
//! every label value is a word from [`labels`], an HTTP status, a route
//! pattern, or a capped tool name.

pub mod labels;
pub mod tools;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

pub use self::labels::SANDBOX_START_OUTCOMES;
use self::labels::{
    ApprovalDecision, AuthFailure, ConnectLabel, ConnectOutcome, DecisionLabel, DisconnectLabel,
    DisconnectReason, HttpLabels, NatsLabel, NatsOutcome, Outcome, ReasonLabel, SandboxStartLabel,
    StatusLabel,
};
use self::tools::{ToolNames, ToolSeries};
use crate::secret::{hash_secret, hashes_match, Secret};

/// The prefix of every relay metric.
pub const PREFIX: &str = "runner_relay";
/// The media type of a scrape's answer (what `encode` writes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The git commit this binary was built from, when the build said
/// (`RUNNER_GIT_COMMIT` at compile time).
pub const GIT_COMMIT: &str = match option_env!("RUNNER_GIT_COMMIT") {
    Some(commit) => commit,
    None => "unknown",
};
/// The environment statuses, each a series of `environments` (a status no
/// environment has reads 0 rather than vanishing).
const STATUSES: [&str; 4] = ["pending", "online", "degraded", "offline"];

/// Tool call durations: 1 ms to about 4.4 min, doubling.
fn call_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 19))
}

/// NATS round trips: 0.5 ms to about 2 s, doubling.
fn nats_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 13))
}

/// The relay's metrics. Cheap to clone (one `Arc`).
#[derive(Debug, Clone)]
pub struct Metrics {
    families: Option<Arc<Families>>,
    /// SHA-256 of the scrape token of `GET /metrics` on the API port.
    scrape_token_hash: Option<Arc<str>>,
}

#[derive(Debug)]
struct Families {
    registry: Registry,
    runners_connected: Gauge,
    environments: Family<StatusLabel, Gauge>,
    connects: Family<ConnectLabel, Counter>,
    disconnects: Family<DisconnectLabel, Counter>,
    tools: ToolNames,
    in_flight: Gauge,
    approvals_pending: Gauge,
    approvals_decided: Family<DecisionLabel, Counter>,
    auth_failures: Family<ReasonLabel, Counter>,
    http_requests: Family<HttpLabels, Counter>,
    nats_requests: Family<NatsLabel, Counter>,
    nats_duration: Histogram,
    sandbox_starts: Family<SandboxStartLabel, Counter>,
    sandbox_start_duration: Histogram,
    sandboxes_live: Gauge,
    journal_results_truncated: Counter,
    journal_max_bytes: Gauge,
    journal_bytes: Gauge,
    change_feed_listening: Gauge,
    /// When `environments` was last read from the store.
    environments_read_at: Mutex<Option<Instant>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Metrics on, every family registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register(
            "build",
            "The relay's version and the git commit it was built from",
            Info::new(vec![
                ("version", env!("CARGO_PKG_VERSION")),
                ("git_commit", GIT_COMMIT),
            ]),
        );
        let runners_connected = Gauge::default();
        registry.register(
            "runners_connected",
            "Runners connected to this relay now",
            runners_connected.clone(),
        );
        let environments = Family::<StatusLabel, Gauge>::default();
        registry.register(
            "environments",
            "Environments by status (the whole organisation, read from the store)",
            environments.clone(),
        );
        for status in STATUSES {
            environments.get_or_create(&StatusLabel { status }).set(0);
        }
        let connects = Family::<ConnectLabel, Counter>::default();
        registry.register(
            "runner_connects",
            "Runner connections that reached the handshake, by outcome",
            connects.clone(),
        );
        let disconnects = Family::<DisconnectLabel, Counter>::default();
        registry.register(
            "runner_disconnects",
            "Welcomed runner sessions that ended, by reason",
            disconnects.clone(),
        );
        let calls = Family::default();
        registry.register(
            "tool_calls",
            "Tool calls by tool and outcome",
            calls.clone(),
        );
        let durations = Family::new_with_constructor(call_buckets as fn() -> Histogram);
        registry.register_with_unit(
            "tool_call_duration",
            "Time from the request to the result of relayed tool calls, by tool",
            Unit::Seconds,
            durations.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "tool_calls_in_flight",
            "Tool calls relayed and waiting for their result now",
            in_flight.clone(),
        );
        let approvals_pending = Gauge::default();
        registry.register(
            "approvals_pending",
            "Approvals asked for and not decided yet",
            approvals_pending.clone(),
        );
        let approvals_decided = Family::<DecisionLabel, Counter>::default();
        registry.register(
            "approvals_decided",
            "Approvals decided, by decision (expiry counts as expired)",
            approvals_decided.clone(),
        );
        let auth_failures = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "auth_failures",
            "Failed authentications, by reason",
            auth_failures.clone(),
        );
        let http_requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "API requests by method, matched route and status",
            http_requests.clone(),
        );
        let nats_requests = Family::<NatsLabel, Counter>::default();
        registry.register(
            "nats_requests",
            "Requests to the relay holding a runner over NATS (shared mode), by outcome",
            nats_requests.clone(),
        );
        let nats_duration = nats_buckets();
        registry.register_with_unit(
            "nats_request_duration",
            "Round trip of requests over NATS (shared mode)",
            Unit::Seconds,
            nats_duration.clone(),
        );
        let sandbox_starts = Family::<SandboxStartLabel, Counter>::default();
        registry.register(
            "sandbox_starts",
            "Sandboxes started for sessions by this relay, by outcome",
            sandbox_starts.clone(),
        );
        let sandbox_start_duration = call_buckets();
        registry.register_with_unit(
            "sandbox_start_duration",
            "Time from a session's first call to its sandbox's runner connected (setup included)",
            Unit::Seconds,
            sandbox_start_duration.clone(),
        );
        let sandboxes_live = Gauge::default();
        registry.register(
            "sandboxes_live",
            "Sandboxes not ended (the whole organisation, counted every 10 s)",
            sandboxes_live.clone(),
        );
        let journal_results_truncated = Counter::default();
        registry.register(
            "journal_results_truncated",
            "Call results the journal kept only the end of (serve --journal-result-max-kb)",
            journal_results_truncated.clone(),
        );
        let journal_max_bytes = Gauge::default();
        registry.register_with_unit(
            "journal_max",
            "The call journal's size cap (serve --journal-max-mb); alert on journal_bytes / journal_max_bytes",
            Unit::Bytes,
            journal_max_bytes.clone(),
        );
        let journal_bytes = Gauge::default();
        registry.register_with_unit(
            "journal",
            "Bytes of results the call journal holds (measured every 5 min; serve --journal-max-mb)",
            Unit::Bytes,
            journal_bytes.clone(),
        );
        let change_feed_listening = Gauge::default();
        registry.register(
            "change_feed_listening",
            "1 while this relay hears PostgreSQL's change feed and so keeps members and environments in memory (shared mode)",
            change_feed_listening.clone(),
        );
        for outcome in SANDBOX_START_OUTCOMES {
            sandbox_starts
                .get_or_create(&SandboxStartLabel { outcome })
                .inc_by(0);
        }
        // Every series of a closed label set exists from the start, at 0:
        // `rate()` then sees the first increment, and a scrape shows what
        // could be counted.
        for outcome in ConnectOutcome::ALL {
            connects.get_or_create(&ConnectLabel { outcome }).inc_by(0);
        }
        for reason in DisconnectReason::ALL {
            disconnects
                .get_or_create(&DisconnectLabel { reason })
                .inc_by(0);
        }
        for decision in ApprovalDecision::ALL {
            approvals_decided
                .get_or_create(&DecisionLabel { decision })
                .inc_by(0);
        }
        for reason in AuthFailure::ALL {
            auth_failures
                .get_or_create(&ReasonLabel { reason })
                .inc_by(0);
        }
        for outcome in NatsOutcome::ALL {
            nats_requests
                .get_or_create(&NatsLabel { outcome })
                .inc_by(0);
        }
        Self {
            families: Some(Arc::new(Families {
                registry,
                runners_connected,
                environments,
                connects,
                disconnects,
                tools: ToolNames::new(calls, durations),
                in_flight,
                approvals_pending,
                approvals_decided,
                auth_failures,
                http_requests,
                nats_requests,
                nats_duration,
                sandbox_starts,
                sandbox_start_duration,
                sandboxes_live,
                journal_results_truncated,
                journal_max_bytes,
                journal_bytes,
                change_feed_listening,
                environments_read_at: Mutex::new(None),
            })),
            scrape_token_hash: None,
        }
    }

    /// Metrics off (`serve --no-metrics`): nothing recorded, nothing served.
    pub fn disabled() -> Self {
        Self {
            families: None,
            scrape_token_hash: None,
        }
    }

    pub fn enabled(&self) -> bool {
        self.families.is_some()
    }

    /// `GET /metrics` on the API port answers a request bearing `token`.
    pub fn with_scrape_token(mut self, token: &Secret) -> Self {
        self.scrape_token_hash = Some(token.hash().into());
        self
    }

    /// Whether the API port serves `/metrics` (a scrape token is set).
    pub fn scrape_token_set(&self) -> bool {
        self.scrape_token_hash.is_some()
    }

    /// Whether `presented` is the scrape token (compared as hashes, in
    /// constant time).
    pub fn scrape_token_matches(&self, presented: &str) -> bool {
        self.scrape_token_hash
            .as_deref()
            .is_some_and(|stored| hashes_match(stored, &hash_secret(presented)))
    }

    /// The exposition, `None` when metrics are off.
    pub fn encode(&self) -> Option<String> {
        let families = self.families.as_ref()?;
        let mut text = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail.
        prometheus_client::encoding::text::encode(&mut text, &families.registry).ok()?;
        Some(text)
    }

    /// Scrape time: runners connected here now.
    pub fn set_runners_connected(&self, count: usize) {
        if let Some(families) = &self.families {
            families
                .runners_connected
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    /// Scrape time: environments by status (every status is set; one
    /// missing from `counts` reads 0).
    pub fn set_environments(&self, counts: &[(&'static str, usize)]) {
        let Some(families) = &self.families else {
            return;
        };
        for status in STATUSES {
            let count = counts
                .iter()
                .filter(|(name, _)| *name == status)
                .map(|(_, count)| *count)
                .sum::<usize>();
            families
                .environments
                .get_or_create(&StatusLabel { status })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    /// Whether `environments` is due a new reading, at most one per
    /// `interval` (the reading walks every environment); if so, the
    /// reading counts as taken now.
    pub fn environments_due(&self, interval: Duration) -> bool {
        let Some(families) = &self.families else {
            return false;
        };
        let mut read_at = families
            .environments_read_at
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let due = read_at.is_none_or(|at| at.elapsed() >= interval);
        if due {
            *read_at = Some(Instant::now());
        }
        due
    }

    /// A runner connection ended its handshake (welcomed or not).
    pub fn runner_connect(&self, outcome: ConnectOutcome) {
        if let Some(families) = &self.families {
            families
                .connects
                .get_or_create(&ConnectLabel { outcome })
                .inc();
        }
    }

    /// A welcomed runner session ended.
    pub fn runner_disconnect(&self, reason: DisconnectReason) {
        if let Some(families) = &self.families {
            families
                .disconnects
                .get_or_create(&DisconnectLabel { reason })
                .inc();
        }
    }

    /// An approval was asked for (it is pending until
    /// [`Metrics::approval_decided`]).
    pub fn approval_requested(&self) {
        if let Some(families) = &self.families {
            families.approvals_pending.inc();
        }
    }

    /// A pending approval was decided (or expired).
    pub fn approval_decided(&self, decision: ApprovalDecision) {
        if let Some(families) = &self.families {
            families.approvals_pending.dec();
            families
                .approvals_decided
                .get_or_create(&DecisionLabel { decision })
                .inc();
        }
    }

    /// Pending approvals as counted in the store (at start, or at scrape
    /// time in shared mode where other relays decide too).
    pub fn set_approvals_pending(&self, count: usize) {
        if let Some(families) = &self.families {
            families
                .approvals_pending
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    pub fn auth_failure(&self, reason: AuthFailure) {
        if let Some(families) = &self.families {
            families
                .auth_failures
                .get_or_create(&ReasonLabel { reason })
                .inc();
        }
    }

    /// An API request answered.
    pub fn http_request(&self, method: &'static str, route: &'static str, status: u16) {
        if let Some(families) = &self.families {
            families
                .http_requests
                .get_or_create(&HttpLabels {
                    method,
                    route,
                    status,
                })
                .inc();
        }
    }

    /// A sandbox start ended with `outcome` (one of
    /// [`SANDBOX_START_OUTCOMES`]) after `took`.
    pub fn sandbox_start(&self, outcome: &'static str, took: Duration) {
        if let Some(families) = &self.families {
            families
                .sandbox_starts
                .get_or_create(&SandboxStartLabel { outcome })
                .inc();
            if outcome == "ready" {
                families.sandbox_start_duration.observe(took.as_secs_f64());
            }
        }
    }

    /// Sandboxes not ended, as counted in the store.
    pub fn set_sandboxes_live(&self, count: usize) {
        if let Some(families) = &self.families {
            families
                .sandboxes_live
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    /// The journal kept only the end of `count` results.
    pub fn journal_results_truncated(&self, count: usize) {
        if let Some(families) = &self.families {
            families
                .journal_results_truncated
                .inc_by(u64::try_from(count).unwrap_or(u64::MAX));
        }
    }

    /// The journal's size cap, in bytes.
    pub fn set_journal_max_bytes(&self, bytes: u64) {
        if let Some(families) = &self.families {
            families
                .journal_max_bytes
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Bytes of results the journal holds, as measured.
    pub fn set_journal_bytes(&self, bytes: u64) {
        if let Some(families) = &self.families {
            families
                .journal_bytes
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Whether the relay hears the store's change feed now.
    pub fn set_change_feed_listening(&self, listening: bool) {
        if let Some(families) = &self.families {
            families.change_feed_listening.set(i64::from(listening));
        }
    }

    /// One request over NATS, and how long it took.
    pub fn nats_request(&self, outcome: NatsOutcome, took: Duration) {
        if let Some(families) = &self.families {
            families
                .nats_requests
                .get_or_create(&NatsLabel { outcome })
                .inc();
            families.nats_duration.observe(took.as_secs_f64());
        }
    }

    /// A tool call whose request named `tool`, received at `started`;
    /// `offered`: the environment's connected runner offers the tool.
    /// Record how it ends on the returned value.
    pub fn call(&self, tool: &str, offered: bool, started: Instant) -> CallMetrics {
        CallMetrics {
            series: self
                .families
                .as_ref()
                .map(|families| (families.tools.series(tool, offered), families.clone())),
            started,
            relayed: false,
            done: false,
        }
    }
}

/// One tool call's metrics: its outcome is counted once, by
/// [`CallMetrics::finish`] or [`CallMetrics::refused`]; while relayed it
/// counts as in flight. Dropped while relayed and unfinished (the caller
/// went away), it counts as [`Outcome::Cancelled`].
#[derive(Debug)]
pub struct CallMetrics {
    series: Option<(Arc<ToolSeries>, Arc<Families>)>,
    started: Instant,
    relayed: bool,
    done: bool,
}

impl CallMetrics {
    /// The call went to the runner: in flight until it ends.
    pub fn relayed(&mut self) {
        if let Some((_, families)) = &self.series {
            if !self.relayed {
                families.in_flight.inc();
            }
        }
        self.relayed = true;
    }

    /// The call ended with `outcome` (its duration is kept for relayed
    /// calls only).
    pub fn finish(&mut self, outcome: Outcome) {
        if self.done {
            return;
        }
        self.done = true;
        let Some((series, families)) = &self.series else {
            return;
        };
        series.calls[outcome.index()].inc();
        if self.relayed {
            series
                .duration
                .observe(self.started.elapsed().as_secs_f64());
            families.in_flight.dec();
        }
    }

    /// The call ended with the error answer `error` (policy refusal, no
    /// runner, unknown tool...); gives the error back.
    pub fn refused<E: ErrorCode>(&mut self, error: E) -> E {
        self.finish(Outcome::of_error_code(error.code()));
        error
    }
}

impl Drop for CallMetrics {
    fn drop(&mut self) {
        if self.relayed && !self.done {
            self.finish(Outcome::Cancelled);
        }
    }
}

/// An error answer's stable code (implemented by the API's error type, so
/// this module need not know it).
pub trait ErrorCode {
    fn code(&self) -> &str;
}
