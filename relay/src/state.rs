//! The shared state every handler and connection task sees.

use std::sync::Arc;
use std::time::Duration;

use runner_proto::api::EnvironmentStatus;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admission::Admission;
use crate::approvals::ApprovalWaiters;
use crate::audit_writer::{AuditLog, AuditSettings};
use crate::ratelimit::FailureLimiter;
use crate::read_cache::ReadCache;
use crate::releases::LatestVersion;

use crate::clock::{rfc3339, Clock, SystemClock};
use crate::environment::EnvironmentRecord;
use crate::metrics::Metrics;
use crate::registration;
use crate::routing::{CallRouter, JournalWriter, JournaledRouter, LocalRouter, NatsRouter};
use crate::seen::SeenTracker;
use crate::session_usage::SessionUsage;
use crate::sessions::DEFAULT_IDLE_TIMEOUT_S;
use crate::sign_in_links::SignInLinks;
use crate::status::{self, CallHealth};
use crate::store::{Store, StoreError};
use crate::webhook::Webhook;

/// What a relay is built from. Tests pass a manual clock.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub streams: StreamTimings,
}

/// How long a streamed call tolerates a quiet side (`serve
/// --stream-keep-alive`, `--output-stall-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTimings {
    /// Silence after which a streamed call's body carries a keep-alive,
    /// kept under the idle timeouts of common proxies (nginx: 60 s).
    pub keep_alive: Duration,
    /// How long a streamed call's output may wait for its reader to take a
    /// chunk. The wait holds up the runner's socket (that is the
    /// backpressure), so it is bounded: past it the call is cancelled.
    pub output_stall: Duration,
}

impl Default for StreamTimings {
    fn default() -> Self {
        Self {
            keep_alive: Duration::from_secs(15),
            output_stall: Duration::from_secs(5),
        }
    }
}

impl RelayConfig {
    /// A relay on this store with the system clock.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
            streams: StreamTimings::default(),
        }
    }
}

/// How `/mcp` is served (`serve --mcp-*`, docs/mcp.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// Off with `--no-mcp`.
    pub enabled: bool,
    /// Environments a member may use above which `/mcp` lists the compact
    /// `list_tools`/`run_tool` instead of every environment's tools.
    pub max_environments: usize,
    /// `Host` values accepted; empty: any (the API key is the credential).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted; empty: requests from browser pages are
    /// refused.
    pub allowed_origins: Vec<String>,
    /// Plain `tools/call`s answered without the SDK's per-request service
    /// (`http::mcp::fast_call`); off with `--mcp-no-fast-path`.
    pub fast_call: bool,
}

/// How the console is served (`serve --no-console`, docs/console.md).
#[derive(Debug)]
pub struct ConsoleSettings {
    /// Off with `--no-console`.
    pub enabled: bool,
    /// The sign-in cookie is `Secure`: the relay serves TLS, or its
    /// `--public-url` is `https` (TLS ends at a proxy).
    pub secure_cookie: bool,
    /// One-time sign-in links this relay printed.
    pub links: SignInLinks,
    /// The image the setup guide's Docker tab runs.
    pub docker_image: String,
}

/// Default of [`ConsoleSettings::docker_image`]: the image
/// `installers/Dockerfile` builds, tagged with this relay's version.
pub fn default_docker_image() -> String {
    format!("runner:{}", env!("CARGO_PKG_VERSION"))
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            secure_cookie: false,
            links: SignInLinks::default(),
            docker_image: default_docker_image(),
        }
    }
}

/// Default of [`McpSettings::max_environments`]: a model still chooses
/// well among that many machines' tools.
pub const DEFAULT_MCP_MAX_ENVIRONMENTS: usize = 10;

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_environments: DEFAULT_MCP_MAX_ENVIRONMENTS,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            fast_call: true,
        }
    }
}

/// Default time a draining relay gives calls in flight on its sockets
/// before it tells their runners to go elsewhere anyway.
pub const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(8);
/// Default heartbeat interval the relay asks runners for in `welcome`
/// (`serve --heartbeat-interval`).
pub const DEFAULT_HEARTBEAT_INTERVAL_S: u64 = 15;
/// Default bound on runner handshakes in progress (`serve
/// --max-handshakes`): enough to keep both cores busy with handshakes,
/// few enough that each finishes long before the runner's timeouts.
pub const DEFAULT_MAX_HANDSHAKES: usize = 256;

/// Handles shared by handlers and connection tasks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub streams: StreamTimings,
    /// How handlers reach runners (wherever their sockets are): the call
    /// journal around NATS routing (shared mode) or the local sockets.
    pub router: Arc<JournaledRouter>,
    /// The batched writer of journal steps (shared with `router`).
    pub journal: Arc<JournalWriter>,
    /// Last-seen times not yet in the store (single-relay mode).
    pub seen: Arc<SeenTracker>,
    /// Runner handshakes in progress, and connects waiting for a slot.
    pub admission: Arc<Admission>,
    /// Copies of the store reads of the invoke path (single relay only).
    pub reads: Arc<ReadCache>,
    /// The sockets held by this process.
    pub local: Arc<LocalRouter>,
    /// Shared mode (PostgreSQL + NATS): routing between relays.
    pub cluster: Option<Arc<NatsRouter>>,
    /// This relay instance's id, recorded as the holder of its sessions.
    pub relay_id: Arc<str>,
    /// How long a draining relay waits for calls in flight on its sockets.
    pub drain_grace: Duration,
    /// Seconds between a runner's heartbeats (`serve --heartbeat-interval`);
    /// six missed ones drop the session.
    pub heartbeat_interval_s: u64,
    pub health: Arc<CallHealth>,
    /// Cancelled when the relay shuts down; connection tasks watch it.
    /// Set by [`crate::serve`].
    pub shutdown: CancellationToken,
    /// Runner connection tasks, awaited at shutdown.
    pub connections: TaskTracker,
    /// The release mirror served with `--releases-dir`, whose latest version
    /// heartbeat answers offer to older runners.
    pub releases: Option<Arc<LatestVersion>>,
    /// Failed registration-token attempts, per source and environment.
    pub failures: Arc<FailureLimiter>,
    /// Work sessions' last uses (and, single relay, copies).
    pub sessions: Arc<SessionUsage>,
    /// Seconds a new work session may stay unused before it expires
    /// (`serve --session-idle-timeout`).
    pub session_idle_timeout_s: u64,
    /// Wakes requests waiting on an approval.
    pub approvals: Arc<ApprovalWaiters>,
    /// How long an approval stays open (`serve --approval-ttl`).
    pub approval_ttl: time::Duration,
    /// Where new approvals are announced (`serve --approval-webhook`).
    pub webhook: Option<Arc<Webhook>>,
    /// The URL people reach this relay at (`serve --public-url`), for links.
    pub public_url: Option<Arc<str>>,
    /// What `/metrics` shows (docs/metrics.md); off with `--no-metrics`.
    pub metrics: Metrics,
    /// The audit log's batched writer (`state.audit.record(entry)`).
    pub audit: Arc<AuditLog>,
    /// How `/mcp` is served.
    pub mcp: Arc<McpSettings>,
    /// How `/console` is served.
    pub console: Arc<ConsoleSettings>,
}

impl AppState {
    /// State for a relay; [`crate::serve`] ties it to its shutdown token.
    pub fn new(config: RelayConfig) -> Self {
        let local = Arc::new(LocalRouter::with_output_stall(config.streams.output_stall));
        let metrics = Metrics::new();
        let journal = Arc::new(JournalWriter::new(config.store.clone()));
        journal.use_metrics(metrics.clone());
        let reads = Arc::new(ReadCache::new(!config.store.shared()));
        let sessions = Arc::new(SessionUsage::new(!config.store.shared()));
        let approvals = Arc::new(ApprovalWaiters::new(config.store.shared()));
        let audit = Arc::new(AuditLog::new(
            config.store.clone(),
            AuditSettings::default(),
        ));
        let router = Arc::new(JournaledRouter::new(
            local.clone(),
            config.store.clone(),
            config.clock.clone(),
            journal.clone(),
        ));
        Self {
            store: config.store,
            clock: config.clock,
            streams: config.streams,
            router,
            journal,
            seen: Arc::new(SeenTracker::default()),
            admission: Arc::new(Admission::new(DEFAULT_MAX_HANDSHAKES)),
            reads,
            local,
            cluster: None,
            relay_id: format!("relay-{}", uuid::Uuid::new_v4().simple()).into(),
            drain_grace: DEFAULT_DRAIN_GRACE,
            heartbeat_interval_s: DEFAULT_HEARTBEAT_INTERVAL_S,
            health: Arc::new(CallHealth::default()),
            shutdown: CancellationToken::new(),
            connections: TaskTracker::new(),
            releases: None,
            failures: Arc::new(FailureLimiter::default()),
            sessions,
            session_idle_timeout_s: DEFAULT_IDLE_TIMEOUT_S,
            approvals,
            approval_ttl: time::Duration::seconds(
                runner_proto::approvals::DEFAULT_APPROVAL_TTL_S as i64,
            ),
            webhook: None,
            public_url: None,
            metrics,
            audit,
            mcp: Arc::default(),
            console: Arc::default(),
        }
    }

    /// Records what `settings` say (`serve --no-audit`, `--audit-arguments`).
    pub fn with_audit(mut self, settings: AuditSettings) -> Self {
        self.audit = Arc::new(AuditLog::new(self.store.clone(), settings));
        self
    }

    /// Records into `metrics` (its scrape token, or off) instead.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        if let Some(cluster) = &self.cluster {
            cluster.use_metrics(metrics.clone());
        }
        self.journal.use_metrics(metrics.clone());
        self.metrics = metrics;
        self
    }

    /// Serve `/mcp` as `settings` say.
    pub fn with_mcp(mut self, settings: McpSettings) -> Self {
        self.mcp = Arc::new(settings);
        self
    }

    /// Serve the console as `settings` say.
    pub fn with_console(mut self, settings: ConsoleSettings) -> Self {
        self.console = Arc::new(settings);
        self
    }

    /// Approvals expire `ttl` after they are asked for.
    pub fn with_approval_ttl(mut self, ttl: Duration) -> Self {
        self.approval_ttl = time::Duration::try_from(ttl).unwrap_or(time::Duration::MAX);
        self
    }

    /// Announce new approvals to `webhook`.
    pub fn with_approval_webhook(mut self, webhook: Arc<Webhook>) -> Self {
        self.webhook = Some(webhook);
        self
    }

    /// The call journal keeps at most `max_bytes` of each result
    /// (`serve --journal-result-max-kb`).
    pub fn with_journal_result_max_bytes(self, max_bytes: usize) -> Self {
        self.journal.set_result_max_bytes(max_bytes);
        self
    }

    /// Links (webhook payloads) point at `url`.
    pub fn with_public_url(mut self, url: &str) -> Self {
        self.public_url = Some(url.trim_end_matches('/').into());
        self
    }

    /// Where a person reads and decides an approval: its console page,
    /// or its API path when the console is off.
    pub fn approval_link(&self, id: &str) -> String {
        let base = self.public_url.as_deref().unwrap_or("");
        let base = base.trim_end_matches('/');
        if self.console.enabled {
            format!("{base}/console/approvals/{id}")
        } else {
            format!("{base}/approvals/{id}")
        }
    }

    /// New work sessions expire after `seconds` unused.
    pub fn with_session_idle_timeout(mut self, seconds: u64) -> Self {
        self.session_idle_timeout_s = seconds;
        self
    }

    /// Serve the release mirror in `dir` and offer its latest version.
    pub fn with_releases(mut self, dir: std::path::PathBuf) -> Self {
        self.releases = Some(Arc::new(LatestVersion::new(dir)));
        self
    }

    /// Shared mode: calls go through `cluster` (which holds the same
    /// [`LocalRouter`] as `self.local`) to whichever relay holds a socket.
    pub fn with_cluster(mut self, cluster: Arc<NatsRouter>) -> Self {
        self.relay_id = cluster.relay_id().into();
        cluster.use_metrics(self.metrics.clone());
        cluster.use_journal(self.journal.clone());
        // Other relays change the store: reads are kept only while its
        // change feed is listened to (`read_cache::follow_changes`).
        self.reads = Arc::new(ReadCache::new(false));
        self.sessions = Arc::new(SessionUsage::new(false));
        self.router = Arc::new(JournaledRouter::new(
            cluster.clone(),
            self.store.clone(),
            self.clock.clone(),
            self.journal.clone(),
        ));
        self.cluster = Some(cluster);
        self
    }

    /// Bounds runner handshakes in progress to `limit` (at least one).
    pub fn with_max_handshakes(mut self, limit: usize) -> Self {
        self.admission = Arc::new(Admission::new(limit));
        self
    }

    /// The live status of an environment (SPEC §6).
    pub async fn environment_status(
        &self,
        environment: &EnvironmentRecord,
    ) -> Result<EnvironmentStatus, StoreError> {
        let mut environment = environment.clone();
        self.seen.apply(&mut environment);
        let environment = &environment;
        let presence = self.router.presence(&environment.id).await;
        let now = self.clock.now();
        let (status, reason) = status::compute(environment, presence.as_deref(), &self.health, now);
        let token = self.store.current_token(&environment.id).await?;
        let runner_token = registration::runner_token(
            self.store.as_ref(),
            presence
                .as_ref()
                .map(|presence| presence.token_hash.as_str()),
            token.as_ref(),
        )
        .await?;
        Ok(EnvironmentStatus {
            id: environment.id.clone(),
            name: environment.name.clone(),
            status,
            reason,
            connected: presence.is_some(),
            last_seen: environment.last_seen.map(rfc3339),
            runner: environment.runner.clone(),
            token: token.as_ref().map(registration::hint),
            runner_token,
        })
    }
}
