//! Shared mode: several relays on one PostgreSQL, calls carried over NATS
//! to the relay that holds the runner's socket.
//!
//! **Ownership.** A relay accepting a runner's socket increments the
//! environment's session epoch in the store (one statement) and becomes its
//! holder; it then serves `<prefix>.call.<env>.<epoch>` and broadcasts
//! "superseded" so an older holder closes its socket. Every
//! [`LEASE_REFRESH`] a relay refreshes the leases of all the sessions it
//! holds in one batched statement (with the heartbeats seen meanwhile, so
//! 10k runners cost one write per relay, not 10k); a session found taken
//! over is closed. A holder that died leaves a lease nobody refreshes: after
//! [`LEASE_TTL`] it no longer counts as connected.
//!
//! **Calls.** A call for a socket held here skips NATS. Otherwise it is a
//! request on the epoch's subject; the holder acknowledges and streams
//! output and the result to the caller's inbox for the call ([`replies`]:
//! one subscription per relay, not one per call). "No
//! responders" means the holder is gone or the runner moved: the caller
//! re-reads the session and retries briefly, then reports "not connected".
//! While it waits, the caller probes the holder every [`PROBE_INTERVAL`], so
//! a holder killed mid-call is noticed at once.
//!
//! **Large calls.** Any message, either way, larger than half the connected
//! server's `max_payload` travels in parts ([`parts`]): a 3 MiB `file_write`
//! or a 2 MiB `shell` result crosses relays like a small one. A call in
//! parts starts with a request (so a missing holder is noticed before the
//! rest is sent), continues with plain publishes, and ends with a request
//! the holder answers as it answers a whole call. Reassembly is capped:
//! calls at [`MAX_CALL_BYTES`] (the invoke body limit and room for the
//! envelope), replies at [`MAX_REPLY_BYTES`] (what a runner may send in one
//! frame, so a result that works on the holder works everywhere).
//!
//! **Control.** Revocation, deletion, policy changes and cancels are
//! broadcast on `<prefix>.ctl.<env>`; whichever relay holds the socket acts.
//! So are the changes to call-timeout streaks (SPEC §6 degraded fallback):
//! every relay counts every relay's timeouts, whichever relay a caller hit.
//!
//! **Versions.** Every message carries the version of the relay-to-relay
//! messages it was sent in ([`version`]); a caller speaks the lower of its
//! own and the holder's (stored in the holder's announcement), so relays of
//! two builds exchange calls during a rolling upgrade. Control broadcasts
//! reach relays of every version: they only ever grow by fields and types
//! an older relay skips.

mod copies;
mod parts;
mod replies;
mod version;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use async_nats::{Client, HeaderMap, Message, RequestErrorKind, Subscriber};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use runner_proto::api::RunnerInfo;
use runner_proto::ws::{
    Call, CallResult, Heartbeat, HostFacts, Output, OutputFrame, Policy, ToolSpec,
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{
    CallHandle, CallRouter, JournalWriter, LocalRouter, OutputChunk, Presence, RouteError,
};
use crate::clock::{from_unix, Clock};
use crate::metrics::labels::NatsOutcome;
use crate::metrics::Metrics;
use crate::status::{CallHealth, StreakChange};
use crate::store::{LeaseRefresh, Store};
use copies::{RemoteSession, SessionCopies};
use parts::{PartError, Reassembly, PART_TIMEOUT};
use replies::{Inbox, Replies};
pub use version::{OLDEST_RELAY_PROTOCOL, RELAY_PROTOCOL};

/// Default first token of every subject.
pub const DEFAULT_SUBJECT_PREFIX: &str = "runner";
/// Time to connect to NATS at start.
pub const NATS_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a caller waits for the holder to acknowledge a call.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller keeps retrying while nobody serves the session's
/// subject (holder gone, runner reconnecting elsewhere).
pub const NO_RESPONDERS_RETRY: Duration = Duration::from_secs(3);
/// Pause between those retries.
pub const RETRY_DELAY: Duration = Duration::from_millis(100);
/// How often a caller checks that the holder still has its call.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// Time for a result already on its way when a probe says "unknown call".
pub const PROBE_GRACE: Duration = Duration::from_millis(500);
/// How often a relay refreshes the leases of the sessions it holds.
pub const LEASE_REFRESH: Duration = Duration::from_secs(5);
/// A lease not refreshed for this long belongs to a dead relay.
pub const LEASE_TTL: time::Duration = time::Duration::seconds(20);
/// A session closed no longer ago than this (counted from its last lease
/// refresh) means the runner is probably reconnecting through another
/// relay: lookups wait for it (up to [`NO_RESPONDERS_RETRY`]).
pub const MOVING_WINDOW: time::Duration = time::Duration::seconds(8);
/// Bound on one publish or flush.
pub const PUBLISH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a holder waits for a call's result before acknowledging it,
/// so that a short call's result is the answer itself (version 2).
pub const QUICK_ANSWER: Duration = Duration::from_millis(20);
/// Bound on one store operation in the routing path.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(5);
/// Room for the call's envelope (ids, tool name, inbox) around arguments
/// that filled the invoke body.
const CALL_ENVELOPE_BYTES: usize = 64 * 1024;
/// Largest call a holder reassembles: the relay's invoke body limit, and
/// room for the envelope.
pub const MAX_CALL_BYTES: usize = runner_proto::api::MAX_BODY_BYTES + CALL_ENVELOPE_BYTES;
/// Largest reply (output chunk or result) a caller reassembles: a runner's
/// largest frame, and room for the envelope.
pub const MAX_REPLY_BYTES: usize = runner_proto::MAX_FRAME_BYTES + CALL_ENVELOPE_BYTES;
/// Output chunks buffered per remote call for its reader.
const OUTPUT_QUEUE: usize = 32;
/// Output bytes the relay holding the socket may send ahead of what the
/// caller's relay has handed to its reader ([`SessionRequest::Credit`]).
/// Without it a slow reader made the caller's relay buffer the whole
/// output in its NATS client. The size trades memory per streamed call on
/// the caller's relay for rate: 192 MiB across relays to a fast reader
/// (release) ran at 239–256 MB/s with 8 MiB, 233–261 with 16 MiB, 267–290
/// with 32 MiB, 276–295 without credit (two to four runs each).
const CREDIT_WINDOW: u64 = 16 * 1024 * 1024;
/// Bounds on a window asked for by another relay.
const CREDIT_WINDOW_RANGE: std::ops::RangeInclusive<u64> = 64 * 1024..=256 * 1024 * 1024;

/// Settings of shared mode.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `nats://host:port`.
    pub nats_url: String,
    /// First token of every subject, so deployments (or tests) sharing one
    /// NATS do not cross.
    pub subject_prefix: String,
    /// This relay instance's id (unique per process).
    pub relay_id: String,
    /// The newest relay-to-relay version this relay speaks
    /// ([`RELAY_PROTOCOL`], or older to stand in for an older build).
    pub protocol: u32,
}

/// Requests on a session's call subject.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SessionRequest {
    /// Run this call; stream output and the result to `reply`. With a
    /// `window`, send no more output than the caller has granted
    /// (answered [`SessionAnswer::Flowing`]); relays that predate it
    /// ignore the field and answer [`SessionAnswer::Accepted`].
    Call {
        call: Call,
        reply: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        window: Option<u64>,
    },
    /// The caller's relay has handed a call's reader output up to
    /// `granted` − window bytes: output may now go up to `granted` bytes
    /// in all. Published without a reply subject.
    Credit { call_id: String, granted: u64 },
    /// Is this call still waiting for its result here?
    Probe { call_id: String },
    /// A request of a newer relay this build does not know.
    #[serde(other)]
    Unknown,
}

/// Answers on a session's call subject.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SessionAnswer {
    Accepted,
    /// Accepted, and output waits for [`SessionRequest::Credit`].
    Flowing,
    NotConnected,
    Known {
        known: bool,
    },
    /// The first part of a call in parts arrived: send the rest.
    Receiving,
    /// Version 2: the call ended within [`QUICK_ANSWER`]; this is its
    /// result, in place of the acknowledgement.
    Done {
        result: CallResult,
    },
    /// A call in parts was refused (over the cap, parts lost or
    /// reordered), or a request this relay cannot read.
    Refused {
        reason: String,
    },
    /// An answer of a newer relay this build does not know.
    #[serde(other)]
    Unknown,
}

/// [`SessionAnswer::Done`] borrowing its result, to encode it without a
/// copy (the same JSON).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Done<'a> {
    Done { result: &'a CallResult },
}

/// JSON messages to a caller's inbox (each may travel in parts). Output
/// travels as binary [`OutputFrame`]s instead; the JSON form is still read
/// from relays that predate them.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Reply {
    Output(Output),
    Result(CallResult),
    /// The runner's socket closed before the result.
    Disconnected,
    /// A reply of a newer relay this build does not know.
    #[serde(other)]
    Unknown,
}

/// Broadcasts on `<prefix>.ctl.<env>`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Control {
    /// A session with this epoch started: older ones close.
    Superseded {
        epoch: u64,
        instance_id: String,
    },
    Disconnect {
        code: u16,
        reason: String,
    },
    Policy {
        policy: Policy,
        /// Absent from relays older than the setting.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        install_browser_tools: Option<bool>,
    },
    Cancel {
        call_id: String,
    },
    /// A relay recorded a change to the environment's timeout streak.
    Streak {
        /// The relay that recorded it (which has counted it already).
        origin: String,
        /// Unix time of a slow timeout; `None`: a call succeeded.
        timed_out_at: Option<i64>,
    },
    /// A broadcast of a newer relay this build does not know: skipped.
    #[serde(other)]
    Unknown,
}

/// What is stored of a presence besides the heartbeat.
#[derive(Debug, Serialize, Deserialize)]
struct Announcement {
    session_id: String,
    instance_id: String,
    runner_version: String,
    host: HostFacts,
    tools: Vec<ToolSpec>,
    connected_at: i64,
    /// Absent in announcements of older relays.
    #[serde(default)]
    token_hash: String,
    /// A sandbox host's capacity from its hello, so that other relays can
    /// place sandboxes on it before its first heartbeat is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sandbox_capacity: Option<runner_proto::sandbox::Capacity>,
    /// The relay-to-relay version the holder speaks; absent (as older
    /// builds wrote it): 1.
    #[serde(
        default = "oldest_protocol",
        skip_serializing_if = "is_oldest_protocol"
    )]
    relay_protocol: u32,
}

fn oldest_protocol() -> u32 {
    OLDEST_RELAY_PROTOCOL
}

fn is_oldest_protocol(version: &u32) -> bool {
    *version <= OLDEST_RELAY_PROTOCOL
}

impl Announcement {
    fn of(presence: &Presence, relay_protocol: u32) -> Self {
        Self {
            session_id: presence.session_id.clone(),
            instance_id: presence.instance_id.clone(),
            runner_version: presence.runner_version.clone(),
            host: presence.host.clone(),
            tools: presence.tools.to_vec(),
            connected_at: presence.connected_at.unix_timestamp(),
            token_hash: presence.token_hash.clone(),
            sandbox_capacity: presence.heartbeat.sandbox_capacity,
            relay_protocol,
        }
    }
}

/// Serialises one of our own wire values; they have string keys only.
fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// JSON of a presence's announcement, as [`Store::claim_session`] takes it,
/// by a relay speaking `relay_protocol` ([`ClusterConfig::protocol`]).
pub fn announcement_json(presence: &Presence, relay_protocol: u32) -> String {
    serde_json::to_string(&Announcement::of(presence, relay_protocol)).unwrap_or_default()
}

/// The tools of a stored announcement (the catalogue a runner announced
/// last), `None` if it cannot be read.
pub fn announced_tools(announcement: &str) -> Option<Vec<ToolSpec>> {
    serde_json::from_str::<Announcement>(announcement)
        .ok()
        .map(|announcement| announcement.tools)
}

/// A session as looked up in the store.
enum Lookup {
    /// Held by another relay with a fresh lease.
    Live(RemoteSession),
    /// Closed a moment ago: the runner is probably reconnecting elsewhere.
    Moving,
    /// No runner (never connected, gone for a while, or its relay died).
    Gone,
}

/// What came of a request on a session subject.
enum Asked {
    Answer(SessionAnswer),
    /// Nobody serves the subject (holder gone, runner moving).
    NoResponders,
    /// Timed out, failed, or answered with something unreadable.
    Failed,
}

/// Keeps a session's call subject served; dropping it unsubscribes.
#[derive(Debug)]
pub struct ServingGuard {
    _stop: DropGuard,
}

#[derive(Debug, Default)]
struct Pending {
    /// Heartbeats since the last lease refresh: when, and who.
    seen: HashMap<String, (OffsetDateTime, RunnerInfo)>,
    /// Environments whose catalogue changed since the last refresh.
    catalogue_changed: Vec<String>,
}

/// Routes calls across relays over NATS, around this relay's sockets.
#[derive(Debug)]
pub struct NatsRouter {
    client: Client,
    local: Arc<LocalRouter>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: ClusterConfig,
    pending: Mutex<Pending>,
    /// Output credit of the calls this relay forwards for callers on other
    /// relays, by `environment/call id`.
    credits: Mutex<HashMap<String, tokio::sync::watch::Sender<u64>>>,
    /// The calls this relay forwards for callers on other relays, by
    /// `environment/call id`, until their result has left: the local
    /// router forgets a call when its result comes in, and a large result
    /// leaves in parts, so a probe in between must still find it.
    answering: Mutex<HashSet<String>>,
    /// The relay's metrics (round trips), once the state is built.
    metrics: OnceLock<Metrics>,
    /// The relay's journal writer, once the state is built: a call whose
    /// holder lost it is journalled here.
    journal: OnceLock<Arc<JournalWriter>>,
    /// Sessions held elsewhere, as last read from the store.
    copies: SessionCopies,
    /// The inboxes of the calls this relay sends to others.
    replies: Arc<Replies>,
}

/// Holds a forwarded call in [`NatsRouter::answering`] while it lives.
struct Answering {
    router: Arc<NatsRouter>,
    key: String,
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.router.answering().remove(&self.key);
    }
}

impl NatsRouter {
    /// Connects to NATS. [`NatsRouter::start`] then runs its background
    /// tasks.
    pub async fn connect(
        config: ClusterConfig,
        local: Arc<LocalRouter>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, async_nats::Error> {
        let options = async_nats::ConnectOptions::new()
            .name(format!("runner-relay {}", config.relay_id))
            .connection_timeout(NATS_CONNECT_TIMEOUT)
            .request_timeout(Some(ACK_TIMEOUT));
        let client = tokio::time::timeout(
            NATS_CONNECT_TIMEOUT,
            options.connect(config.nats_url.as_str()),
        )
        .await
        .map_err(|_elapsed| format!("connecting to NATS at {} timed out", config.nats_url))??;
        let replies = Replies::start(&client, &config.subject_prefix).await?;
        Ok(Arc::new(Self {
            client,
            local,
            store,
            clock,
            config,
            pending: Mutex::new(Pending::default()),
            credits: Mutex::default(),
            answering: Mutex::default(),
            metrics: OnceLock::new(),
            journal: OnceLock::new(),
            copies: SessionCopies::default(),
            replies,
        }))
    }

    /// Counts this router's NATS round trips in `metrics` (the first
    /// call wins: one relay, one set of metrics).
    pub fn use_metrics(&self, metrics: Metrics) {
        let _ = self.metrics.set(metrics);
    }

    /// Journals the calls whose holder lost them in `journal` (the first
    /// call wins: one relay, one journal).
    pub fn use_journal(&self, journal: Arc<JournalWriter>) {
        let _ = self.journal.set(journal);
    }

    /// This relay's instance id.
    pub fn relay_id(&self) -> &str {
        &self.config.relay_id
    }

    /// The relay-to-relay version this relay speaks.
    pub fn protocol(&self) -> u32 {
        self.config.protocol
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        // Single map operations: a poisoned lock still holds a usable map.
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn answering(&self) -> MutexGuard<'_, HashSet<String>> {
        // As above: single set operations.
        self.answering
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn credits(&self) -> MutexGuard<'_, HashMap<String, tokio::sync::watch::Sender<u64>>> {
        // As above: single map operations.
        self.credits
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn call_subject(&self, environment_id: &str, epoch: u64) -> String {
        format!(
            "{}.call.{environment_id}.{epoch}",
            self.config.subject_prefix
        )
    }

    fn control_subject(&self, environment_id: &str) -> String {
        format!("{}.ctl.{environment_id}", self.config.subject_prefix)
    }

    /// Subscribes to control broadcasts, starts the lease refresh, and
    /// shares `health`'s timeout streaks with the other relays; all stop
    /// with `shutdown`.
    pub async fn start(
        self: &Arc<Self>,
        shutdown: CancellationToken,
        health: Arc<CallHealth>,
    ) -> anyhow::Result<()> {
        let subject = format!("{}.ctl.*", self.config.subject_prefix);
        let control = self.client.subscribe(subject.clone()).await?;
        tokio::time::timeout(PUBLISH_TIMEOUT, self.client.flush())
            .await
            .map_err(|_elapsed| {
                anyhow::anyhow!("NATS did not confirm the subscription to {subject}")
            })??;
        if let Some(changes) = health.share() {
            let router = self.clone();
            let stop = shutdown.clone();
            tokio::spawn(async move { router.share_streaks(changes, stop).await });
        }
        let router = self.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move { router.serve_control(control, health, stop).await });
        let router = self.clone();
        tokio::spawn(async move { router.refresh_leases(shutdown).await });
        Ok(())
    }

    /// Broadcasts this relay's timeout-streak changes to the others.
    async fn share_streaks(
        self: Arc<Self>,
        mut changes: mpsc::UnboundedReceiver<(String, StreakChange)>,
        shutdown: CancellationToken,
    ) {
        loop {
            let (environment_id, change) = tokio::select! {
                () = shutdown.cancelled() => return,
                change = changes.recv() => match change {
                    Some(change) => change,
                    None => return,
                },
            };
            let timed_out_at = match change {
                StreakChange::SlowTimeout { at } => Some(at.unix_timestamp()),
                StreakChange::Ended => None,
            };
            let control = Control::Streak {
                origin: self.config.relay_id.clone(),
                timed_out_at,
            };
            self.broadcast(&environment_id, &control).await;
        }
    }

    async fn serve_control(
        self: Arc<Self>,
        mut control: Subscriber,
        health: Arc<CallHealth>,
        shutdown: CancellationToken,
    ) {
        loop {
            let message = tokio::select! {
                () = shutdown.cancelled() => return,
                message = control.next() => match message {
                    Some(message) => message,
                    None => {
                        tracing::error!("NATS control subscription ended");
                        return;
                    }
                },
            };
            let Some(environment_id) = message.subject.rsplit('.').next() else {
                continue;
            };
            let control: Control = match serde_json::from_slice(&message.payload) {
                Ok(control) => control,
                Err(error) => {
                    tracing::warn!(%error, subject = %message.subject, "malformed control message");
                    continue;
                }
            };
            match control {
                Control::Superseded { epoch, instance_id } => {
                    self.copies.forget(environment_id);
                    self.local.supersede(environment_id, epoch, &instance_id);
                }
                Control::Disconnect { code, reason } => {
                    self.copies.forget(environment_id);
                    if self.local.disconnect(environment_id, code, &reason).await {
                        tracing::info!(environment_id, code, %reason, "runner disconnected at another relay's request");
                    }
                }
                Control::Policy {
                    policy,
                    install_browser_tools,
                } => {
                    self.local
                        .push_policy(environment_id, policy, install_browser_tools)
                        .await;
                }
                Control::Cancel { call_id } => {
                    if self.local.has_call(environment_id, &call_id) {
                        self.local.cancel(environment_id, &call_id).await;
                    }
                }
                // Our own changes come back too: they are counted already.
                Control::Streak { origin, .. } if origin == self.config.relay_id => {}
                Control::Unknown => {
                    tracing::debug!(subject = %message.subject, "a broadcast of a newer relay; skipped");
                }
                Control::Streak { timed_out_at, .. } => {
                    let change = match timed_out_at {
                        Some(at) => StreakChange::SlowTimeout { at: from_unix(at) },
                        None => StreakChange::Ended,
                    };
                    health.apply(environment_id, change);
                }
            }
        }
    }

    /// Every [`LEASE_REFRESH`]: one batched write for all sessions held
    /// here; closes the ones taken over.
    async fn refresh_leases(self: Arc<Self>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(LEASE_REFRESH);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            self.refresh_once().await;
        }
    }

    /// One lease refresh (public for tests and the drain).
    pub async fn refresh_once(&self) {
        let sessions = self.local.sessions();
        if sessions.is_empty() {
            return;
        }
        let (mut seen, changed) = {
            let mut pending = self.pending();
            (
                std::mem::take(&mut pending.seen),
                std::mem::take(&mut pending.catalogue_changed),
            )
        };
        let refreshes: Vec<LeaseRefresh> = sessions
            .iter()
            .map(|(environment_id, presence)| LeaseRefresh {
                environment_id: environment_id.clone(),
                epoch: presence.epoch,
                heartbeat: serde_json::to_string(&presence.heartbeat).unwrap_or_default(),
                presence: changed
                    .contains(environment_id)
                    .then(|| announcement_json(presence, self.config.protocol)),
                seen: seen.remove(environment_id),
            })
            .collect();
        let now = self.clock.now();
        let refreshed = tokio::time::timeout(
            STORE_TIMEOUT,
            self.store
                .refresh_sessions(&self.config.relay_id, &refreshes, now),
        )
        .await;
        match refreshed {
            Ok(Ok(lost)) => {
                for environment_id in lost {
                    let epoch = sessions
                        .iter()
                        .find(|(id, _)| *id == environment_id)
                        .map(|(_, presence)| presence.epoch)
                        .unwrap_or_default();
                    if self.local.drop_epoch(&environment_id, epoch) {
                        tracing::info!(%environment_id, epoch, "session taken over by a newer epoch; socket closed");
                    }
                }
            }
            Ok(Err(error)) => tracing::warn!(%error, "lease refresh failed"),
            Err(_elapsed) => tracing::warn!("lease refresh timed out"),
        }
    }

    /// Records a heartbeat, written with the next lease refresh.
    pub fn heartbeat_seen(&self, environment_id: &str, at: OffsetDateTime, runner: RunnerInfo) {
        self.pending()
            .seen
            .insert(environment_id.to_owned(), (at, runner));
    }

    /// The catalogue changed: stored with the next lease refresh.
    pub fn catalogue_changed(&self, environment_id: &str) {
        let mut pending = self.pending();
        if !pending
            .catalogue_changed
            .iter()
            .any(|id| id == environment_id)
        {
            pending.catalogue_changed.push(environment_id.to_owned());
        }
    }

    /// Starts serving a session just attached here: subscribes to its call
    /// subject (confirmed by the server before this returns, so callers
    /// never see "no responders" for a live session), then tells every
    /// relay that older sessions are superseded.
    pub async fn serve_session(
        self: &Arc<Self>,
        environment_id: &str,
        epoch: u64,
        instance_id: &str,
    ) -> anyhow::Result<ServingGuard> {
        let subject = self.call_subject(environment_id, epoch);
        let subscriber = self.client.subscribe(subject.clone()).await?;
        tokio::time::timeout(PUBLISH_TIMEOUT, self.client.flush())
            .await
            .map_err(|_elapsed| {
                anyhow::anyhow!("NATS did not confirm the subscription to {subject}")
            })??;
        let stop = CancellationToken::new();
        let router = self.clone();
        let environment_id = environment_id.to_owned();
        let serving = stop.clone();
        let env = environment_id.clone();
        tokio::spawn(async move { router.serve_calls(subscriber, env, epoch, serving).await });
        self.broadcast(
            &environment_id,
            &Control::Superseded {
                epoch,
                instance_id: instance_id.to_owned(),
            },
        )
        .await;
        Ok(ServingGuard {
            _stop: stop.drop_guard(),
        })
    }

    async fn serve_calls(
        self: Arc<Self>,
        mut subscriber: Subscriber,
        environment_id: String,
        epoch: u64,
        stop: CancellationToken,
    ) {
        let mut incoming = Reassembly::new(MAX_CALL_BYTES);
        let mut sweep = tokio::time::interval(PART_TIMEOUT);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => break,
                _ = sweep.tick() => {
                    for transfer in incoming.expire(tokio::time::Instant::now()) {
                        tracing::warn!(%transfer, "a call in parts stalled; dropped");
                    }
                    continue;
                }
                message = subscriber.next() => match message {
                    Some(message) => message,
                    None => break,
                },
            };
            let reply_to = message.reply.as_ref().map(|reply| reply.to_string());
            // Answers go in the version the request came in, which this
            // relay speaks (or the request is refused).
            let speak = match version::of(message.headers.as_ref()) {
                Ok(version) if version <= self.config.protocol => version,
                unspoken => {
                    let reason = match unspoken {
                        Ok(version) => format!(
                            "relay-to-relay version {version} is newer than this relay's {}",
                            self.config.protocol
                        ),
                        Err(error) => error,
                    };
                    tracing::warn!(%reason, subject = %message.subject, "session request refused");
                    if let Some(reply_to) = reply_to {
                        let refused = SessionAnswer::Refused { reason };
                        self.publish_in(self.config.protocol, reply_to, None, encode(&refused))
                            .await;
                    }
                    continue;
                }
            };
            let payload = match reassemble(&mut incoming, &message) {
                Ok(Some(payload)) => payload,
                Ok(None) => {
                    // The first part: tell the caller to send the rest.
                    if let Some(reply_to) = reply_to {
                        let receiving = encode(&SessionAnswer::Receiving);
                        self.publish_in(speak, reply_to, None, receiving).await;
                    }
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "call in parts refused");
                    if let Some(reply_to) = reply_to {
                        let refused = SessionAnswer::Refused {
                            reason: error.to_string(),
                        };
                        self.publish_in(speak, reply_to, None, encode(&refused))
                            .await;
                    }
                    continue;
                }
            };
            let request: SessionRequest = match serde_json::from_slice(&payload) {
                Ok(request) => request,
                Err(error) => {
                    tracing::warn!(%error, "malformed call request");
                    if let Some(reply_to) = reply_to {
                        let refused = SessionAnswer::Refused {
                            reason: format!("unreadable request: {error}"),
                        };
                        self.publish_in(speak, reply_to, None, encode(&refused))
                            .await;
                    }
                    continue;
                }
            };
            if let SessionRequest::Credit { call_id, granted } = &request {
                self.grant(&environment_id, call_id, *granted);
                continue;
            }
            let Some(reply_to) = reply_to else {
                continue;
            };
            let answer = match request {
                SessionRequest::Probe { call_id } => SessionAnswer::Known {
                    // A forwarded call stays known from its start until its
                    // result has left: after the result is in, it may still
                    // be forwarding output the caller has not granted
                    // credit for yet, or sending its result in parts.
                    known: self
                        .answering()
                        .contains(&format!("{environment_id}/{call_id}"))
                        || self.local.has_call(&environment_id, &call_id),
                },
                SessionRequest::Call {
                    mut call,
                    reply,
                    window,
                } => {
                    call.epoch = epoch;
                    match self.local.start_call(&environment_id, call).await {
                        Ok(mut handle) => {
                            // Registered before the answer, so no credit
                            // can arrive for a call not known here yet.
                            let gate = window.map(|window| {
                                self.open_credit(&environment_id, &handle.call_id, window)
                            });
                            // A caller of version 2 takes a call that ends
                            // at once as the answer itself (`done`): the
                            // task below answers it.
                            let answers_itself = gate.is_none() && speak >= 2;
                            let answer = match &gate {
                                Some(_) => Some(SessionAnswer::Flowing),
                                None if answers_itself => None,
                                None => Some(SessionAnswer::Accepted),
                            };
                            let key = format!("{environment_id}/{}", handle.call_id);
                            self.answering().insert(key.clone());
                            let answering = Answering {
                                router: self.clone(),
                                key,
                            };
                            let router = self.clone();
                            let quick = answers_itself.then(|| reply_to.clone());
                            tokio::spawn(async move {
                                let forward = match quick {
                                    Some(answer_to) => {
                                        router
                                            .answer_quickly(&mut handle, &reply, answer_to, speak)
                                            .await
                                    }
                                    None => true,
                                };
                                if forward {
                                    router.forward(handle, reply, gate, speak).await;
                                }
                                drop(answering);
                            });
                            match answer {
                                Some(answer) => answer,
                                None => continue,
                            }
                        }
                        Err(_) => SessionAnswer::NotConnected,
                    }
                }
                SessionRequest::Credit { .. } => continue,
                SessionRequest::Unknown => SessionAnswer::Refused {
                    reason: "a request this relay does not know".to_owned(),
                },
            };
            self.publish_in(speak, reply_to, None, encode(&answer))
                .await;
        }
        if let Err(error) = subscriber.unsubscribe().await {
            tracing::debug!(%error, "unsubscribing a session's call subject");
        }
    }

    /// Holder side, to a caller of version 2, for a call without streamed
    /// output: waits up to [`QUICK_ANSWER`] for the result and, if it fits
    /// in one message, answers the call's request with it (`done`: the
    /// caller needs no inbox, no acknowledgement, no second message);
    /// otherwise acknowledges as version 1 does. Returns whether the call
    /// still has to be forwarded to the inbox.
    async fn answer_quickly(
        &self,
        handle: &mut CallHandle,
        reply: &str,
        answer_to: String,
        speak: u32,
    ) -> bool {
        match tokio::time::timeout(QUICK_ANSWER, &mut handle.result).await {
            Ok(Ok(result)) => {
                let done = encode(&Done::Done { result: &result });
                if done.len() <= self.part_size() {
                    self.publish_in(speak, answer_to, None, done).await;
                } else {
                    // Too large for one message: acknowledged, and the
                    // result goes to the inbox in parts.
                    let accepted = encode(&SessionAnswer::Accepted);
                    self.publish_in(speak, answer_to, None, accepted).await;
                    self.send_payload(speak, reply, encode(&Reply::Result(result)))
                        .await;
                }
                false
            }
            Ok(Err(_runner_gone)) => {
                let accepted = encode(&SessionAnswer::Accepted);
                self.publish_in(speak, answer_to, None, accepted).await;
                self.send_payload(speak, reply, encode(&Reply::Disconnected))
                    .await;
                false
            }
            Err(_still_running) => {
                let accepted = encode(&SessionAnswer::Accepted);
                self.publish_in(speak, answer_to, None, accepted).await;
                true
            }
        }
    }

    /// Holder side: streams a local call's output and result to the
    /// caller's inbox; with a credit gate, no further ahead of the caller's
    /// reader than it granted. While the gate is shut the call's output
    /// queue here fills and the runner's socket is read no faster (the
    /// local router's backpressure), and a caller that grants nothing for
    /// [`LocalRouter::output_stall`] gets the call cancelled, as on one
    /// relay.
    async fn forward(
        self: Arc<Self>,
        mut handle: CallHandle,
        reply: String,
        mut gate: Option<CreditGate>,
        speak: u32,
    ) {
        let mut output_open = true;
        let mut sent: u64 = 0;
        let outcome = loop {
            let open = gate
                .as_ref()
                .is_none_or(|gate| sent < *gate.granted.borrow());
            tokio::select! {
                // Output first: the runner sends every chunk before its
                // result.
                biased;
                chunk = handle.output.recv(), if output_open && open => match chunk {
                    // Output goes as the runner's binary frame, bytes as
                    // they are; results and the rest as JSON.
                    Some(chunk) => {
                        sent += chunk.data.len() as u64;
                        match chunk.to_frame() {
                            Ok(frame) => self.send_payload(speak, &reply, frame).await,
                            Err(error) => tracing::warn!(%error, "output chunk not relayed"),
                        }
                    }
                    None => output_open = false,
                },
                changed = async {
                    match gate.as_mut() {
                        Some(gate) => gate.granted.changed().await,
                        None => std::future::pending().await,
                    }
                }, if !open => {
                    if changed.is_err() {
                        // The sender lives in `credits` until below.
                        gate = None;
                    }
                }
                result = &mut handle.result => break result.ok(),
            }
        };
        // What is still queued (the gate was shut when the result came)
        // was sent by the runner before its result: it goes first.
        while let Ok(chunk) = handle.output.try_recv() {
            let stall = self.local.output_stall();
            if !credit_for(gate.as_mut(), sent, stall).await {
                tracing::warn!(call_id = %handle.call_id, "the caller granted no output credit for {} s; the rest of the output is dropped, the result still goes", stall.as_secs());
                break;
            }
            sent += chunk.data.len() as u64;
            match chunk.to_frame() {
                Ok(frame) => self.send_payload(speak, &reply, frame).await,
                Err(error) => tracing::warn!(%error, "output chunk not relayed"),
            }
        }
        if let Some(gate) = &gate {
            self.credits().remove(&gate.key);
        }
        match outcome {
            Some(result) => {
                self.send_payload(speak, &reply, encode(&Reply::Result(result)))
                    .await
            }
            None => {
                self.send_payload(speak, &reply, encode(&Reply::Disconnected))
                    .await
            }
        }
    }

    /// Holder side: the credit gate of a call forwarded to another relay.
    fn open_credit(&self, environment_id: &str, call_id: &str, window: u64) -> CreditGate {
        let window = window.clamp(*CREDIT_WINDOW_RANGE.start(), *CREDIT_WINDOW_RANGE.end());
        let (sender, granted) = tokio::sync::watch::channel(window);
        let key = format!("{environment_id}/{call_id}");
        self.credits().insert(key.clone(), sender);
        CreditGate { key, granted }
    }

    /// Holder side: more credit for a forwarded call (never less: credits
    /// may arrive out of order).
    fn grant(&self, environment_id: &str, call_id: &str, granted: u64) {
        let credits = self.credits();
        if let Some(sender) = credits.get(&format!("{environment_id}/{call_id}")) {
            sender.send_if_modified(|current| {
                let more = granted > *current;
                if more {
                    *current = granted;
                }
                more
            });
        }
    }

    /// Largest payload of one message to the connected server.
    fn part_size(&self) -> usize {
        parts::part_size(self.client.server_info().max_payload)
    }

    /// Publishes an encoded reply in version `speak`, whole, or in parts
    /// when it is larger than one message may be.
    async fn send_payload(&self, speak: u32, subject: &str, payload: Vec<u8>) {
        let size = self.part_size();
        if payload.len() <= size {
            self.publish_in(speak, subject.to_owned(), None, payload)
                .await;
            return;
        }
        for part in parts::split(&payload, size) {
            if !self
                .publish_in(speak, subject.to_owned(), Some(part.headers), part.payload)
                .await
            {
                // The rest would be refused as out of order anyway.
                return;
            }
        }
    }

    /// Publishes one message in version `speak`; returns whether NATS
    /// took it.
    async fn publish_in(
        &self,
        speak: u32,
        subject: String,
        headers: Option<HeaderMap>,
        payload: Vec<u8>,
    ) -> bool {
        let publish = publish_stamped(&self.client, speak, subject.clone(), headers, payload);
        match tokio::time::timeout(PUBLISH_TIMEOUT, publish).await {
            Ok(Ok(())) => true,
            Ok(Err(error)) => {
                tracing::warn!(%error, %subject, "NATS publish failed");
                false
            }
            Err(_elapsed) => {
                tracing::warn!(%subject, "NATS publish timed out");
                false
            }
        }
    }

    async fn broadcast(&self, environment_id: &str, control: &Control) {
        let subject = self.control_subject(environment_id);
        self.publish_in(self.config.protocol, subject, None, encode(control))
            .await;
        // Control messages must leave now, not with the next batch.
        if tokio::time::timeout(PUBLISH_TIMEOUT, self.client.flush())
            .await
            .is_err()
        {
            tracing::warn!(environment_id, "flushing a control broadcast timed out");
        }
    }

    /// The environment's session if some relay holds it with a fresh
    /// lease: a copy kept from an earlier read ([`copies`]), or the
    /// store's. A runner that was connected a moment ago is probably
    /// moving to another relay (drain, or its relay died): wait briefly
    /// for it.
    async fn live_session(&self, environment_id: &str) -> Option<RemoteSession> {
        if let Some(session) = self.copies.get(environment_id) {
            return Some(session);
        }
        self.read_session(environment_id).await
    }

    /// [`Self::live_session`] from the store, keeping a copy.
    async fn read_session(&self, environment_id: &str) -> Option<RemoteSession> {
        let deadline = tokio::time::Instant::now() + NO_RESPONDERS_RETRY;
        loop {
            let generation = self.copies.generation();
            match self.lookup(environment_id).await {
                Lookup::Live(session) => {
                    self.copies.keep(generation, environment_id, &session);
                    return Some(session);
                }
                Lookup::Gone => return None,
                Lookup::Moving if tokio::time::Instant::now() + RETRY_DELAY >= deadline => {
                    return None
                }
                Lookup::Moving => tokio::time::sleep(RETRY_DELAY).await,
            }
        }
    }

    /// The environment's session as the store has it now.
    async fn lookup(&self, environment_id: &str) -> Lookup {
        let record =
            match tokio::time::timeout(STORE_TIMEOUT, self.store.session(environment_id)).await {
                Ok(Ok(Some(record))) => record,
                Ok(Ok(None)) => return Lookup::Gone,
                Ok(Err(error)) => {
                    tracing::warn!(%error, environment_id, "could not read the runner session");
                    return Lookup::Gone;
                }
                Err(_elapsed) => {
                    tracing::warn!(environment_id, "reading the runner session timed out");
                    return Lookup::Gone;
                }
            };
        let age = self.clock.now() - record.refreshed_at;
        let fresh = age <= LEASE_TTL;
        if record.holder.is_none() {
            return if age <= MOVING_WINDOW {
                Lookup::Moving
            } else {
                Lookup::Gone
            };
        }
        if !fresh {
            return Lookup::Gone;
        }
        let Ok(announcement) = serde_json::from_str::<Announcement>(&record.presence) else {
            tracing::warn!(environment_id, "corrupt stored presence");
            return Lookup::Gone;
        };
        let mut heartbeat: Heartbeat = serde_json::from_str(&record.heartbeat).unwrap_or_default();
        if heartbeat.sandbox_capacity.is_none() {
            heartbeat.sandbox_capacity = announcement.sandbox_capacity;
        }
        let protocol = announcement.relay_protocol;
        let presence = Arc::new(Presence {
            session_id: announcement.session_id,
            instance_id: announcement.instance_id,
            runner_version: announcement.runner_version,
            host: announcement.host,
            tools: announcement.tools.into(),
            connected_at: from_unix(announcement.connected_at),
            heartbeat,
            epoch: record.epoch,
            token_hash: announcement.token_hash,
        });
        Lookup::Live(RemoteSession {
            protocol,
            epoch: record.epoch,
            presence,
        })
    }

    /// Caller side: sends a call to the holder and waits for its answer.
    async fn remote_call(
        &self,
        environment_id: &str,
        mut call: Call,
    ) -> Result<CallHandle, RouteError> {
        let deadline = tokio::time::Instant::now() + NO_RESPONDERS_RETRY;
        let not_connected = || RouteError::NotConnected(environment_id.to_owned());
        let disconnected = || RouteError::Disconnected(environment_id.to_owned());
        // The first try may use a kept copy of the session; a copy found
        // out of date is forgotten and the store read at once.
        let mut copied = self.copies.get(environment_id);
        loop {
            let from_copy = copied.is_some();
            let session = match copied.take() {
                Some(session) => Some(session),
                None => self.read_session(environment_id).await,
            };
            let (epoch, speak) = match session {
                Some(session) => (session.epoch, session.protocol.min(self.config.protocol)),
                None => return Err(not_connected()),
            };
            call.epoch = epoch;
            let inbox = self.replies.inbox();
            let subject = self.call_subject(environment_id, epoch);
            let request = SessionRequest::Call {
                call: call.clone(),
                reply: inbox.subject.clone(),
                // Only streamed calls send output along the way.
                window: call.stream.then_some(CREDIT_WINDOW),
            };
            match self.ask(speak, &subject, encode(&request)).await {
                Asked::Answer(SessionAnswer::Done { result }) => {
                    return Ok(answered(result));
                }
                Asked::Answer(SessionAnswer::Accepted) => {
                    let call_id = call.call_id;
                    let tool = call.tool;
                    let route = Route { epoch, speak, tool };
                    return Ok(self.follow(environment_id, route, call_id, inbox, None));
                }
                Asked::Answer(SessionAnswer::Flowing) => {
                    let call_id = call.call_id;
                    let window = Some(CREDIT_WINDOW);
                    let tool = call.tool;
                    let route = Route { epoch, speak, tool };
                    return Ok(self.follow(environment_id, route, call_id, inbox, window));
                }
                // The holder lost the socket: a newer session is coming.
                Asked::Answer(SessionAnswer::NotConnected) | Asked::NoResponders => {}
                Asked::Answer(SessionAnswer::Refused { reason }) => {
                    tracing::warn!(environment_id, %reason, "the holder refused the call");
                    return Err(disconnected());
                }
                Asked::Answer(_) | Asked::Failed => {
                    self.copies.forget(environment_id);
                    return Err(disconnected());
                }
            }
            self.copies.forget(environment_id);
            if from_copy {
                tracing::debug!(
                    environment_id,
                    epoch,
                    "the kept session is out of date; reading the store"
                );
                continue;
            }
            if tokio::time::Instant::now() + RETRY_DELAY < deadline {
                tracing::debug!(environment_id, epoch, "nobody serves the session; retrying");
                tokio::time::sleep(RETRY_DELAY).await;
                continue;
            }
            return Err(not_connected());
        }
    }

    /// Caller side: sends a session request (whole, or in parts when it is
    /// larger than one message may be) and returns the holder's answer to
    /// its last message.
    async fn ask(&self, speak: u32, subject: &str, payload: Vec<u8>) -> Asked {
        let size = self.part_size();
        if payload.len() <= size {
            return self
                .request(subject, version::stamp(None, speak), payload)
                .await;
        }
        for (index, part) in parts::split(&payload, size).into_iter().enumerate() {
            if index == 0 {
                // Only a live holder answers: nothing more is sent to nobody.
                let headers = version::stamp(Some(part.headers), speak);
                match self.request(subject, headers, part.payload).await {
                    Asked::Answer(SessionAnswer::Receiving) => continue,
                    other => return other,
                }
            }
            if part.last {
                let headers = version::stamp(Some(part.headers), speak);
                return self.request(subject, headers, part.payload).await;
            }
            if !self
                .publish_in(speak, subject.to_owned(), Some(part.headers), part.payload)
                .await
            {
                return Asked::Failed;
            }
        }
        // `split` of more than one part's worth always ends with a last part.
        Asked::Failed
    }

    /// One request on a session subject, bounded by [`ACK_TIMEOUT`].
    async fn request(&self, subject: &str, headers: Option<HeaderMap>, payload: Vec<u8>) -> Asked {
        let mut request = async_nats::Request::new().payload(payload.into());
        if let Some(headers) = headers {
            request = request.headers(headers);
        }
        let sent = Instant::now();
        let answer = tokio::time::timeout(
            ACK_TIMEOUT,
            self.client.send_request(subject.to_owned(), request),
        )
        .await;
        let asked = match answer {
            Ok(Ok(message)) => match serde_json::from_slice::<SessionAnswer>(&message.payload) {
                Ok(answer) => Asked::Answer(answer),
                Err(error) => {
                    tracing::warn!(%error, %subject, "malformed answer from the holder");
                    Asked::Failed
                }
            },
            Ok(Err(error)) if error.kind() == RequestErrorKind::NoResponders => Asked::NoResponders,
            Ok(Err(error)) => {
                tracing::warn!(%error, %subject, "call request over NATS failed");
                Asked::Failed
            }
            Err(_elapsed) => Asked::Failed,
        };
        if let Some(metrics) = self.metrics.get() {
            let outcome = match asked {
                Asked::Answer(_) => NatsOutcome::Answered,
                Asked::NoResponders => NatsOutcome::NoResponders,
                Asked::Failed => NatsOutcome::Failed,
            };
            metrics.nats_request(outcome, sent.elapsed());
        }
        asked
    }

    /// Caller side: turns the inbox into a [`CallHandle`], probing the
    /// holder while the call runs, and granting it output credit (with a
    /// `window`) as the reader takes chunks.
    fn follow(
        &self,
        environment_id: &str,
        route: Route,
        call_id: String,
        mut inbox: Inbox,
        window: Option<u64>,
    ) -> CallHandle {
        let (output_tx, output) = mpsc::channel(OUTPUT_QUEUE);
        let (mut result_tx, result) = oneshot::channel();
        let Route { epoch, speak, tool } = route;
        let client = self.client.clone();
        let journal = self.journal.get().cloned();
        let clock = self.clock.clone();
        let environment = environment_id.to_owned();
        let subject = self.call_subject(environment_id, epoch);
        let probe = encode(&SessionRequest::Probe {
            call_id: call_id.clone(),
        });
        let mut credit = window.map(|window| Credit {
            call_id: call_id.clone(),
            window,
            handed: 0,
            granted: window,
        });
        let stall = self.local.output_stall();
        let span = tracing::info_span!("remote_call", environment_id, epoch, %call_id);
        let call_id_of_task = call_id.clone();
        let task = async move {
            let mut incoming = Reassembly::new(MAX_REPLY_BYTES);
            let mut probes = tokio::time::interval(PROBE_INTERVAL);
            probes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            probes.tick().await;
            let mut lost_at: Option<tokio::time::Instant> = None;
            let mut reader_stalled = false;
            loop {
                let grace = async {
                    match lost_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = result_tx.closed() => break,
                    () = grace => {
                        // The holder forgets a call as its result leaves, so
                        // a large result may still be arriving in parts.
                        if incoming.in_progress() > 0 {
                            lost_at = Some(tokio::time::Instant::now() + PROBE_GRACE);
                            continue;
                        }
                        tracing::warn!("the relay holding the runner's socket lost the call");
                        // Nobody else will say so: the holder is gone, or
                        // no longer knows the call. A result that still
                        // comes (the runner kept it) replaces this entry.
                        if let Some(journal) = &journal {
                            journal.lost(&environment, &call_id_of_task, &tool, clock.now()).await;
                        }
                        break;
                    }
                    message = inbox.next() => {
                        let Some(message) = message else { break };
                        let payload = match reassemble(&mut incoming, &message) {
                            Ok(Some(payload)) => payload,
                            Ok(None) => continue,
                            Err(error) => {
                                tracing::warn!(%error, "reply in parts refused");
                                continue;
                            }
                        };
                        match decode_reply(payload) {
                            Ok(Incoming::Chunk(chunk)) => {
                                // In order and without loss while the reader
                                // keeps taking chunks (replies wait in the
                                // inbox meanwhile, as many as the credit
                                // granted allows); a reader stalled
                                // past the local stall timeout loses the
                                // rest of the output, never the result.
                                if !reader_stalled {
                                    let len = chunk.data.len() as u64;
                                    let sent = output_tx.send_timeout(chunk, stall).await;
                                    if let (Ok(()), Some(credit)) = (&sent, credit.as_mut()) {
                                        if let Some(grant) = credit.handed(len) {
                                            // At most once; repeated each
                                            // probe tick below.
                                            publish_to(&client, speak, &subject, encode(&grant)).await;
                                        }
                                    }
                                    if let Err(error) = sent {
                                        if matches!(error, tokio::sync::mpsc::error::SendTimeoutError::Timeout(_)) {
                                            tracing::warn!("the caller read no output for {}s; dropping the rest of it", stall.as_secs());
                                        }
                                        reader_stalled = true;
                                    }
                                }
                            }
                            Ok(Incoming::Result(answer)) => {
                                let _ = result_tx.send(answer);
                                break;
                            }
                            Ok(Incoming::Disconnected) => break,
                            Err(error) => tracing::warn!(%error, "malformed reply from the holder"),
                        }
                    }
                    _ = probes.tick(), if lost_at.is_none() => {
                        // Grants are published at most once: repeat the
                        // latest, so a lost one cannot leave the holder
                        // waiting until its stall rule cancels the call.
                        if let Some(credit) = credit.as_ref().filter(|_| !reader_stalled) {
                            publish_to(&client, speak, &subject, encode(&credit.grant())).await;
                        }
                        for transfer in incoming.expire(tokio::time::Instant::now()) {
                            tracing::warn!(%transfer, "a reply in parts stalled; dropped");
                        }
                        let answer = tokio::time::timeout(
                            ACK_TIMEOUT,
                            client.send_request(subject.clone(), request_in(speak, probe.clone())),
                        )
                        .await;
                        let known = match answer {
                            Ok(Ok(message)) => !matches!(
                                serde_json::from_slice::<SessionAnswer>(&message.payload),
                                Ok(SessionAnswer::Known { known: false })
                            ),
                            Ok(Err(error)) => error.kind() != RequestErrorKind::NoResponders,
                            // A slow holder is not a dead one.
                            Err(_elapsed) => true,
                        };
                        if !known {
                            lost_at = Some(tokio::time::Instant::now() + PROBE_GRACE);
                        }
                    }
                }
            }
            drop(inbox);
        };
        tokio::spawn(tracing::Instrument::instrument(task, span));
        CallHandle {
            call_id,
            output,
            result,
        }
    }
}

/// A handle for a call whose result came with its answer.
fn answered(result: CallResult) -> CallHandle {
    let (_no_output, output) = mpsc::channel(1);
    let (result_tx, result_rx) = oneshot::channel();
    let call_id = result.call_id.clone();
    // The receiver is in the handle returned: it is alive.
    let _ = result_tx.send(result);
    CallHandle {
        call_id,
        output,
        result: result_rx,
    }
}

/// Where a forwarded call went: the holder's session and the version the
/// caller speaks with it, and the call's tool (for the journal).
#[derive(Debug, Clone)]
struct Route {
    epoch: u64,
    speak: u32,
    tool: String,
}

/// A request in version `speak`.
fn request_in(speak: u32, payload: Vec<u8>) -> async_nats::Request {
    let request = async_nats::Request::new().payload(payload.into());
    match version::stamp(None, speak) {
        Some(headers) => request.headers(headers),
        None => request,
    }
}

/// Publishes a best-effort message (a credit grant) in version `speak`.
async fn publish_to(client: &Client, speak: u32, subject: &str, payload: Vec<u8>) {
    let sent = publish_stamped(client, speak, subject.to_owned(), None, payload).await;
    if let Err(error) = sent {
        tracing::debug!(%error, %subject, "a credit grant was not published");
    }
}

/// Publishes `payload` with `headers` in version `speak` (stamped with
/// it, except version 1: `version::stamp`).
async fn publish_stamped(
    client: &Client,
    speak: u32,
    subject: String,
    headers: Option<HeaderMap>,
    payload: Vec<u8>,
) -> Result<(), async_nats::PublishError> {
    match version::stamp(headers, speak) {
        Some(headers) => {
            client
                .publish_with_headers(subject, headers, payload.into())
                .await
        }
        None => client.publish(subject, payload.into()).await,
    }
}

/// Holder side: how far a forwarded call's output may go.
#[derive(Debug)]
struct CreditGate {
    /// Its entry in [`NatsRouter::credits`].
    key: String,
    /// Output bytes the caller allows in all.
    granted: tokio::sync::watch::Receiver<u64>,
}

/// Whether output past `sent` bytes may go: at once without a gate, else
/// once the caller grants it, waiting at most
/// `stall`.
async fn credit_for(gate: Option<&mut CreditGate>, sent: u64, stall: Duration) -> bool {
    let Some(gate) = gate else { return true };
    let granted = gate.granted.wait_for(|granted| sent < *granted);
    match tokio::time::timeout(stall, granted).await {
        Ok(Ok(_)) => true,
        // The sender is kept in `credits` until the forwarding ends.
        Ok(Err(_closed)) => true,
        Err(_elapsed) => false,
    }
}

/// Caller side: output handed to the reader, and credit granted for it.
#[derive(Debug)]
struct Credit {
    call_id: String,
    window: u64,
    handed: u64,
    granted: u64,
}

impl Credit {
    /// Counts `len` bytes handed to the reader; the grant to publish once
    /// half the window has been used, so the holder never waits on a
    /// reader that keeps up.
    fn handed(&mut self, len: u64) -> Option<SessionRequest> {
        self.handed += len;
        if self.handed + self.window / 2 < self.granted {
            return None;
        }
        self.granted = self.handed + self.window;
        Some(self.grant())
    }

    /// The latest grant.
    fn grant(&self) -> SessionRequest {
        SessionRequest::Credit {
            call_id: self.call_id.clone(),
            granted: self.granted,
        }
    }
}

/// A message in a caller's inbox, decoded.
enum Incoming {
    Chunk(OutputChunk),
    Result(CallResult),
    Disconnected,
}

/// Output chunks come as binary [`OutputFrame`]s (first byte `0x01`, never
/// `{`), everything else as a JSON [`Reply`].
fn decode_reply(payload: Cow<'_, [u8]>) -> Result<Incoming, String> {
    if payload.first() == Some(&OutputFrame::KIND) {
        return OutputChunk::from_frame(Bytes::from(payload.into_owned()))
            .map(Incoming::Chunk)
            .map_err(|error| error.to_string());
    }
    match serde_json::from_slice::<Reply>(&payload).map_err(|error| error.to_string())? {
        // From a relay that predates binary frames.
        Reply::Output(output) => Ok(Incoming::Chunk(output.into())),
        Reply::Result(result) => Ok(Incoming::Result(result)),
        Reply::Disconnected => Ok(Incoming::Disconnected),
        Reply::Unknown => Err("a reply of a newer relay this build does not know".to_owned()),
    }
}

/// The whole message that `message` completes: itself when it was sent
/// whole, the reassembled bytes when it is the last of its parts, `None`
/// while parts are missing.
fn reassemble<'m>(
    reassembly: &mut Reassembly,
    message: &'m Message,
) -> Result<Option<Cow<'m, [u8]>>, PartError> {
    match parts::info(message.headers.as_ref())? {
        None => Ok(Some(Cow::Borrowed(&message.payload))),
        Some(part) => Ok(reassembly
            .accept(&part, &message.payload, tokio::time::Instant::now())?
            .map(Cow::Owned)),
    }
}

#[async_trait]
impl CallRouter for NatsRouter {
    async fn presence(&self, environment_id: &str) -> Option<Arc<Presence>> {
        if let Some(presence) = self.local.routable(environment_id) {
            return Some(presence);
        }
        self.live_session(environment_id)
            .await
            .map(|session| session.presence)
    }

    async fn start_call(&self, environment_id: &str, call: Call) -> Result<CallHandle, RouteError> {
        if self.local.routable(environment_id).is_some() {
            match self.local.start_call(environment_id, call.clone()).await {
                // Detached a moment ago: the runner may be on another relay.
                Err(RouteError::NotConnected(_)) => {}
                other => return other,
            }
        }
        self.remote_call(environment_id, call).await
    }

    async fn cancel(&self, environment_id: &str, call_id: &str) {
        if self.local.has_call(environment_id, call_id) {
            self.local.cancel(environment_id, call_id).await;
        } else {
            self.broadcast(
                environment_id,
                &Control::Cancel {
                    call_id: call_id.to_owned(),
                },
            )
            .await;
        }
    }

    async fn disconnect(&self, environment_id: &str, code: u16, reason: &str) -> bool {
        let remote = matches!(self.lookup(environment_id).await, Lookup::Live(_));
        let here = self.local.disconnect(environment_id, code, reason).await;
        self.broadcast(
            environment_id,
            &Control::Disconnect {
                code,
                reason: reason.to_owned(),
            },
        )
        .await;
        here || remote
    }

    async fn push_policy(
        &self,
        environment_id: &str,
        policy: Policy,
        install_browser_tools: Option<bool>,
    ) -> bool {
        let remote = matches!(self.lookup(environment_id).await, Lookup::Live(_));
        let here = self
            .local
            .push_policy(environment_id, policy.clone(), install_browser_tools)
            .await;
        if !here {
            self.broadcast(
                environment_id,
                &Control::Policy {
                    policy,
                    install_browser_tools,
                },
            )
            .await;
        }
        here || remote
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_is_granted_once_half_the_window_is_used() {
        let mut credit = Credit {
            call_id: "c1".to_owned(),
            window: 1000,
            handed: 0,
            granted: 1000,
        };
        assert!(credit.handed(400).is_none(), "under half: no message");
        match credit.handed(100) {
            Some(SessionRequest::Credit { call_id, granted }) => {
                assert_eq!(call_id, "c1");
                assert_eq!(granted, 1500, "what was handed plus a window");
            }
            other => panic!("expected a grant, got {other:?}"),
        }
        assert!(credit.handed(10).is_none());
    }

    #[test]
    fn a_borrowed_done_answer_reads_as_the_owned_one() {
        let result = CallResult {
            call_id: "c1".to_owned(),
            result: serde_json::json!({"n": 1}),
            exit_code: Some(0),
            error: None,
            error_code: None,
        };
        let encoded = encode(&Done::Done { result: &result });
        match serde_json::from_slice::<SessionAnswer>(&encoded) {
            Ok(SessionAnswer::Done { result: read }) => assert_eq!(read, result),
            other => panic!("{other:?}"),
        }
        // What a newer relay might answer is read as unknown, not as an error.
        assert!(matches!(
            serde_json::from_str::<SessionAnswer>(r#"{"type":"later","x":1}"#),
            Ok(SessionAnswer::Unknown)
        ));
    }

    #[test]
    fn old_call_requests_still_parse_and_new_ones_carry_the_window() {
        let old = r#"{"type":"call","call":{"call_id":"c1","tool":"ping","args":{},"timeout_s":5},"reply":"_INBOX.x"}"#;
        match serde_json::from_str::<SessionRequest>(old) {
            Ok(SessionRequest::Call { window: None, .. }) => {}
            other => panic!("{other:?}"),
        }
        let grant = encode(&SessionRequest::Credit {
            call_id: "c1".to_owned(),
            granted: 42,
        });
        assert_eq!(
            String::from_utf8_lossy(&grant),
            r#"{"type":"credit","call_id":"c1","granted":42}"#
        );
    }
}
