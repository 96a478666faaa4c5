//! One WebSocket session with the relay: handshake, heartbeats, calls.
//!
//! The session owns the socket. Calls run as their own tasks and send their
//! results through a channel to the single writer, so a slow call never
//! blocks heartbeats or other calls. When the session ends, for whatever
//! reason, every call still running is cancelled: its process group is
//! stopped, not orphaned.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use runner_proto::ws::{
    Call, CallResult, Heartbeat, Hello, Output, OutputFrame, RelayMessage, RunnerMessage, Welcome,
};
use runner_proto::{close, MAX_FRAME_BYTES, PROTOCOL_VERSION, RUNNER_CONNECT_PATH};
use tokio::sync::{mpsc, Semaphore};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_util::sync::CancellationToken;

use super::autoupdate::AutoUpdate;
use super::health::Health;
use super::metrics::Outcome;
use crate::gate::{self, Boundary};
use crate::secret::Secret;
use crate::tools::browser::install::Installer;
use crate::tools::{self, CallScope, Outbound, OutboundQueue, Queued, ToolContext, Toolbox};

/// Time to open the socket (TCP, TLS, upgrade).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Time for the relay to answer `hello` with `welcome`.
pub const WELCOME_TIMEOUT: Duration = Duration::from_secs(15);
/// Silence from the relay (no frame at all) after which the socket is
/// considered dead, in heartbeat intervals.
pub const SILENCE_INTERVALS: u32 = 3;
/// Time in-flight calls get to send their (cancelled) results at shutdown.
pub const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The tracing target of the per-call log: the "call finished" line, at
/// info, unless `runner run --call-log false`.
pub const CALL_LOG: &str = "runner_cli::calls";

/// The filter directive that turns the per-call log on or off.
pub fn call_log_directive(on: bool) -> tracing_subscriber::filter::Directive {
    let level = if on { "info" } else { "off" };
    // A constant target and level: the directive always parses.
    format!("{CALL_LOG}={level}")
        .parse()
        .expect("a constant filter directive parses")
}

/// What the session needs from the runner.
pub struct SessionConfig {
    pub url: String,
    pub token: Secret,
    pub hello: Hello,
    pub workspace: Boundary,
    pub permissions: Option<Arc<runner_policy::PermissionSet>>,
    pub max_concurrent_calls: usize,
    /// The machine's tools; `hello` announces its catalogue of the moment,
    /// and changes are announced while connected.
    pub toolbox: Arc<Toolbox>,
    /// How each call's processes are kept together (`--call-cgroups`).
    pub isolation: crate::exec::Isolation,
    /// What `runner status --local` and the health endpoint report.
    pub health: Arc<Health>,
    /// Self-update on the relay's word (`None`: off).
    pub auto_update: Option<Arc<AutoUpdate>>,
    /// Installs Chromium on the relay's word (`None`: a runner that never
    /// does, such as a sandbox host).
    pub browser_install: Option<Arc<Installer>>,
}

/// How a session ended.
#[derive(Debug)]
pub enum SessionEnd {
    /// Stop for good: the relay replaced, revoked or deleted us.
    Terminal { code: u16, reason: String },
    /// The token was refused at connect.
    Unauthorized(String),
    /// Shut down on request (signal).
    Shutdown,
    /// Connection lost or failed; reconnect.
    Retry {
        welcomed: bool,
        reason: String,
        /// The relay's `Retry-After` on a 503 or 429 at connect: the next
        /// attempt waits at least this long (capped at the backoff's
        /// ceiling, so a relay cannot park a runner for hours).
        retry_after: Option<Duration>,
    },
    /// The relay is draining (`go_away`): reconnect at once, no backoff.
    GoAway { reason: String },
    /// A verified update was installed and no call is running: restart
    /// into it.
    Restart { version: String },
}

/// How many recent call ids a runner remembers so as never to run a call
/// twice, across reconnects (a relay retrying through another route).
pub const RECENT_CALL_IDS: usize = 4096;
/// Bytes read from the socket at a time. tungstenite zero-fills this much
/// of its buffer before every read, and its default (128 KiB) made that
/// `memset` show in a profile of every `ping`; call frames are small, and a
/// large one (a `file_write`) is read in more pieces.
const READ_BUFFER_BYTES: usize = 16 * 1024;
/// Frames queued for the socket (results, streamed output) across all calls.
const OUTBOUND_FRAMES: usize = 256;
/// Of those, frames of streamed output (each at most 256 KiB, one read of
/// a pipe), across all calls: at most 1 MiB of output waits for the socket
/// (`OutboundQueue`).
const OUTBOUND_OUTPUT_FRAMES: usize = 4;
/// How often the shutdown flush looks whether calls are still running.
const FLUSH_POLL: Duration = Duration::from_millis(50);

/// What outlives one session: calls still running when a connection drops
/// keep running, and their results go out on the next session (the relay
/// journals them, so a caller can fetch a result that came late); and the
/// ids of recent calls.
pub struct Carry {
    calls: Calls,
    out_tx: OutboundQueue,
    out_rx: tokio::sync::Mutex<mpsc::Receiver<Queued>>,
    recent: Mutex<RecentIds>,
}

/// The last [`RECENT_CALL_IDS`] call ids, oldest first out. A set beside
/// the queue: a linear scan of 4,096 ids showed in a profile of every
/// `shell` call.
#[derive(Default)]
struct RecentIds {
    order: std::collections::VecDeque<String>,
    set: std::collections::HashSet<String>,
}

impl RecentIds {
    fn contains(&self, id: &str) -> bool {
        self.set.contains(id)
    }

    fn insert(&mut self, id: &str) {
        if !self.set.insert(id.to_owned()) {
            return;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > RECENT_CALL_IDS {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
    }
}

impl Carry {
    pub fn new(max_concurrent_calls: usize, health: &Health) -> Carry {
        let (out_tx, out_rx) = OutboundQueue::new(OUTBOUND_FRAMES, OUTBOUND_OUTPUT_FRAMES);
        Carry {
            calls: Calls::new(max_concurrent_calls, health),
            out_tx,
            out_rx: tokio::sync::Mutex::new(out_rx),
            recent: Mutex::default(),
        }
    }

    /// Whether a call may start: `None` if so (and its id is remembered),
    /// else the answer to send instead. A call still running is ignored
    /// (its result will come); one run before, or one from a session older
    /// than this one (`epoch`), is refused.
    fn admit(&self, call: &Call, epoch: u64) -> Option<Option<RunnerMessage>> {
        let refuse = |why: &str| {
            tracing::warn!(call_id = %call.call_id, call_epoch = call.epoch, epoch, "{why}");
            Some(Some(RunnerMessage::Result(CallResult {
                call_id: call.call_id.clone(),
                error: Some(why.to_owned()),
                ..CallResult::default()
            })))
        };
        if call.epoch != 0 && call.epoch < epoch {
            return refuse("call from an older session refused");
        }
        // Poisoning needs a panic while holding the lock; the queue stays
        // consistent either way (push/pop are single operations).
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.contains(&call.call_id) {
            if self.calls.lock().contains_key(&call.call_id) {
                tracing::warn!(call_id = %call.call_id, "call already running; not starting it twice");
                return Some(None);
            }
            return refuse("call id already executed by this runner; not running it twice");
        }
        recent.insert(&call.call_id);
        None
    }
}

/// Runs one session until it ends.
pub async fn run(
    config: &SessionConfig,
    carry: &Carry,
    shutdown: &CancellationToken,
) -> SessionEnd {
    let socket = tokio::select! {
        socket = connect(config) => socket,
        () = shutdown.cancelled() => return SessionEnd::Shutdown,
    };
    let socket = match socket {
        Ok(socket) => socket,
        Err(end) => return end,
    };
    let (mut sink, mut stream) = socket.split();

    // Handshake, announcing the catalogue as it is now.
    config.toolbox.refresh();
    let mut hello = config.hello.clone();
    hello.tools = config.toolbox.catalogue();
    hello.sandbox_capacity = sandbox_capacity(config);
    let mut announced = hello.tools.clone();
    let hello = RunnerMessage::Hello(hello);
    if let Err(error) = send(&mut sink, &hello).await {
        return retry(false, format!("sending hello: {error}"));
    }
    let welcome = match tokio::time::timeout(WELCOME_TIMEOUT, next_welcome(&mut stream)).await {
        Ok(Ok(welcome)) => welcome,
        Ok(Err(end)) => return end,
        Err(_) => return retry(false, "the relay did not answer hello in time".to_owned()),
    };
    tracing::info!(
        environment = %welcome.environment.id,
        name = %welcome.environment.name,
        session = %welcome.session_id,
        "connected to the relay"
    );
    config.health.connected(
        &welcome.environment.id,
        &welcome.environment.name,
        &welcome.session_id,
    );
    if let Some(auto_update) = &config.auto_update {
        auto_update.welcomed();
    }
    if let Some(installer) = &config.browser_install {
        installer.want(welcome.install_browser_tools);
    }
    super::notify::notify(&format!(
        "READY=1\nSTATUS=connected to {} as environment {}",
        config.url, welcome.environment.id
    ));

    let calls = &carry.calls;
    let mut context = ToolContext {
        boundary: config
            .workspace
            .with_allowed(gate::file_paths(&welcome.policy, welcome.tier)),
        permissions: config.permissions.clone(),
        policy: Arc::new(welcome.policy.clone()),
        toolbox: Arc::clone(&config.toolbox),
        isolation: config.isolation,
    };
    let mut catalogue_refresh = tokio::time::interval(tools::toolbox::REFRESH_INTERVAL);
    catalogue_refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let catalogue_changed = config.toolbox.changed();
    let out_tx = carry.out_tx.clone();
    let mut out_rx = carry.out_rx.lock().await;
    let interval = Duration::from_secs(welcome.heartbeat_interval_s.clamp(1, 300));
    let mut heartbeat = tokio::time::interval(interval);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let silence_limit = interval * SILENCE_INTERVALS;
    let mut last_heard = Instant::now();

    let end = loop {
        tokio::select! {
            frame = stream.next() => {
                last_heard = Instant::now();
                match frame {
                    Some(Ok(Message::Text(text))) => match serde_json::from_str::<RelayMessage>(&text) {
                        Ok(RelayMessage::Call(call)) => match carry.admit(&call, welcome.epoch) {
                            None => calls.start(call, &context, out_tx.clone(), welcome.binary_output),
                            Some(answer) => {
                                if let Some(answer) = answer {
                                    // Full queue: the relay's own timeout answers.
                                    let _ = out_tx.try_send(Outbound::Message(answer));
                                }
                            }
                        },
                        Ok(RelayMessage::GoAway { reason }) => break SessionEnd::GoAway { reason },
                        Ok(RelayMessage::Cancel { call_id }) => calls.cancel(&call_id),
                        Ok(RelayMessage::Policy { policy, install_browser_tools }) => {
                            tracing::info!("policy updated by the relay");
                            if let (Some(installer), Some(on)) = (&config.browser_install, install_browser_tools) {
                                installer.want(on);
                            }
                            // The tier is the welcome's: a tier change reaches
                            // this runner at its next connection.
                            context.boundary = context.boundary.with_allowed(gate::file_paths(&policy, welcome.tier));
                            context.policy = Arc::new(policy);
                        }
                        Ok(RelayMessage::HeartbeatAck(ack)) => {
                            // Also rewrites the status file: once per heartbeat.
                            config.health.latest_version(ack.latest_version.as_deref());
                            if let (Some(latest), Some(auto_update)) = (&ack.latest_version, &config.auto_update) {
                                auto_update.offer(latest);
                            }
                        }
                        Ok(RelayMessage::Welcome(_)) | Ok(RelayMessage::Unknown) => {}
                        Err(error) => tracing::warn!(%error, "ignoring a frame this runner cannot decode"),
                    },
                    Some(Ok(Message::Close(frame))) => break closed(frame, true),
                    Some(Ok(_)) => {}
                    Some(Err(error)) => break retry(true, format!("connection lost: {error}")),
                    None => break retry(true, "the relay closed the connection".to_owned()),
                }
            }
            Some(Queued { outbound, room }) = out_rx.recv() => {
                let is_result = matches!(outbound, Outbound::Message(RunnerMessage::Result(_)));
                let sent = send_outbound(&mut sink, outbound, welcome.binary_output).await;
                // Written (or lost with the connection): a place for more output.
                drop(room);
                if let Err(error) = sent {
                    break retry(true, format!("sending to the relay: {error}"));
                }
                if is_result {
                    if let Some(version) = update_to_restart_into(config, calls) {
                        break restart_for_update(&mut sink, version).await;
                    }
                }
            }
            () = async {
                match &config.auto_update {
                    Some(auto_update) => auto_update.ready_notify.notified().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(version) = update_to_restart_into(config, calls) {
                    break restart_for_update(&mut sink, version).await;
                }
            }
            refreshed = async {
                tokio::select! {
                    _ = catalogue_refresh.tick() => config.toolbox.refresh(),
                    () = catalogue_changed.notified() => true,
                }
            } => {
                // A binary appeared on PATH or an MCP server came or went:
                // announce the new catalogue on this connection.
                let tools = if refreshed { config.toolbox.catalogue() } else { continue };
                if tools != announced {
                    tracing::info!(tools = tools.len(), "announcing a changed tool catalogue");
                    let frame = RunnerMessage::Catalogue { tools: tools.clone() };
                    if let Err(error) = send(&mut sink, &frame).await {
                        break retry(true, format!("sending the catalogue: {error}"));
                    }
                    announced = tools;
                }
            }
            _ = heartbeat.tick() => {
                if let Some(version) = update_to_restart_into(config, calls) {
                    break restart_for_update(&mut sink, version).await;
                }
                if last_heard.elapsed() > silence_limit {
                    break retry(true, format!("no word from the relay for {}s", silence_limit.as_secs()));
                }
                let beat = RunnerMessage::Heartbeat(Heartbeat {
                    sandbox_capacity: sandbox_capacity(config),
                    ..calls.heartbeat()
                });
                if let Err(error) = send(&mut sink, &beat).await {
                    break retry(true, format!("sending heartbeat: {error}"));
                }
            }
            () = shutdown.cancelled() => {
                // Cancel every call and give their results a moment to go out,
                // so callers get an answer instead of a dropped connection.
                calls.cancel_all();
                let flush = async {
                    loop {
                        match tokio::time::timeout(FLUSH_POLL, out_rx.recv()).await {
                            Ok(Some(Queued { outbound, room: _room })) => {
                                if send_outbound(&mut sink, outbound, welcome.binary_output).await.is_err() {
                                    break;
                                }
                            }
                            Ok(None) => break,
                            Err(_) if calls.lock().is_empty() => break,
                            Err(_) => {}
                        }
                    }
                };
                let _ = tokio::time::timeout(SHUTDOWN_FLUSH_TIMEOUT, flush).await;
                let _ = sink
                    .send(Message::Close(Some(CloseFrame {
                        code: CloseCode::Normal,
                        reason: "runner shutting down".into(),
                    })))
                    .await;
                return SessionEnd::Shutdown;
            }
        }
    };
    // Calls outlive a lost connection (their results go out on the next
    // session); only a stop for good cancels them.
    if matches!(
        end,
        SessionEnd::Terminal { .. } | SessionEnd::Unauthorized(_)
    ) {
        calls.cancel_all();
    }
    end
}

/// A sandbox host's capacity now (`None` for any other runner).
fn sandbox_capacity(config: &SessionConfig) -> Option<runner_proto::sandbox::Capacity> {
    config
        .toolbox
        .hosted()
        .and_then(|hosted| hosted.sandbox_capacity())
}

/// The version to restart into: an update is ready and no call is running
/// or queued (a call is never cut short for an update).
fn update_to_restart_into(config: &SessionConfig, calls: &Calls) -> Option<String> {
    let ready = config.auto_update.as_ref()?.ready()?;
    calls.lock().is_empty().then(|| ready.version().to_owned())
}

/// Closes the socket cleanly (the relay shows the runner offline for the
/// moment of the restart, not "lost") and ends the session.
async fn restart_for_update(sink: &mut Sink, version: String) -> SessionEnd {
    tracing::info!(%version, "no call running: restarting into the update");
    let _ = sink
        .send(Message::Close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "runner restarting for an update".into(),
        })))
        .await;
    SessionEnd::Restart { version }
}

type Socket = super::dial::Socket;
type Sink = futures_util::stream::SplitSink<Socket, Message>;
type Stream = futures_util::stream::SplitStream<Socket>;

/// `http(s)://host` → `ws(s)://host/runner/connect`.
pub fn connect_url(base: &str) -> Result<String, String> {
    let rest = if let Some(rest) = base.strip_prefix("https://") {
        format!("wss://{rest}")
    } else if let Some(rest) = base.strip_prefix("http://") {
        format!("ws://{rest}")
    } else {
        return Err(format!(
            "relay URL {base:?} must start with http:// or https://"
        ));
    };
    Ok(format!(
        "{}{RUNNER_CONNECT_PATH}",
        rest.trim_end_matches('/')
    ))
}

async fn connect(config: &SessionConfig) -> Result<Socket, SessionEnd> {
    let url = connect_url(&config.url).map_err(SessionEnd::Unauthorized)?;
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|error| retry(false, format!("bad relay URL {url}: {error}")))?;
    let bearer = format!("Bearer {}", config.token.expose());
    let value = bearer.parse().map_err(|_| {
        SessionEnd::Unauthorized("the stored token is not valid header text".to_owned())
    })?;
    request.headers_mut().insert("authorization", value);
    let ws_config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    let attempt = super::dial::dial(request, ws_config);
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok(socket)) => Ok(socket),
        Ok(Err(tungstenite::Error::Http(response))) if response.status() == 401 => {
            let body = response
                .body()
                .as_ref()
                .and_then(|b| serde_json::from_slice::<runner_proto::api::ErrorBody>(b).ok())
                .map(|b| b.error.message)
                .unwrap_or_else(|| "the relay refused the registration token".to_owned());
            Err(SessionEnd::Unauthorized(body))
        }
        Ok(Err(tungstenite::Error::Http(response)))
            if matches!(response.status().as_u16(), 429 | 503) =>
        {
            Err(turned_away(url.as_str(), &response))
        }
        Ok(Err(error)) => Err(retry(false, format!("cannot connect to {url}: {error}"))),
        Err(_) => Err(retry(false, format!("connecting to {url} timed out"))),
    }
}

async fn next_welcome(stream: &mut Stream) -> Result<Welcome, SessionEnd> {
    loop {
        match stream.next().await {
            Some(Ok(Message::Text(text))) => match serde_json::from_str::<RelayMessage>(&text) {
                Ok(RelayMessage::Welcome(welcome)) => {
                    if welcome.protocol_version > PROTOCOL_VERSION {
                        tracing::warn!(
                            relay = welcome.protocol_version,
                            ours = PROTOCOL_VERSION,
                            "the relay speaks a newer protocol; consider updating the runner"
                        );
                    }
                    return Ok(welcome);
                }
                Ok(_) => continue,
                Err(error) => return Err(retry(false, format!("bad welcome frame: {error}"))),
            },
            Some(Ok(Message::Close(frame))) => return Err(closed(frame, false)),
            Some(Ok(_)) => continue,
            Some(Err(error)) => return Err(retry(false, format!("connection lost: {error}"))),
            None => return Err(retry(false, "the relay closed the connection".to_owned())),
        }
    }
}

fn closed(frame: Option<CloseFrame>, welcomed: bool) -> SessionEnd {
    match frame {
        Some(frame) => {
            let code = u16::from(frame.code);
            let reason = frame.reason.to_string();
            if close::is_terminal(code) {
                SessionEnd::Terminal { code, reason }
            } else {
                retry(
                    welcomed,
                    format!("the relay closed the connection ({code}: {reason})"),
                )
            }
        }
        None => retry(welcomed, "the relay closed the connection".to_owned()),
    }
}

fn retry(welcomed: bool, reason: String) -> SessionEnd {
    SessionEnd::Retry {
        welcomed,
        reason,
        retry_after: None,
    }
}

/// A connect the relay turned away for now (503 busy, 429 rate-limited):
/// retried, no sooner than its `Retry-After` says.
fn turned_away(url: &str, response: &tungstenite::handshake::client::Response) -> SessionEnd {
    let retry_after = retry_after(response.headers());
    let status = response.status();
    let reason = match retry_after {
        Some(after) => format!(
            "the relay at {url} answered {status} (retry after {} s)",
            after.as_secs()
        ),
        None => format!("the relay at {url} answered {status}"),
    };
    SessionEnd::Retry {
        welcomed: false,
        reason,
        retry_after,
    }
}

/// `Retry-After` in delay-seconds (what the relay sends; an HTTP date is
/// ignored and the backoff alone applies).
pub fn retry_after(headers: &tungstenite::http::HeaderMap) -> Option<Duration> {
    let value = headers.get(tungstenite::http::header::RETRY_AFTER)?;
    let seconds: u64 = value.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

/// Sends what a call produced. A binary frame of a call that started on an
/// earlier session goes as JSON when this relay does not read binary
/// frames (a cluster mid-upgrade): decoded lossily, chunk by chunk.
async fn send_outbound(
    sink: &mut Sink,
    outbound: Outbound,
    binary_output: bool,
) -> Result<(), tungstenite::Error> {
    match outbound {
        Outbound::Message(message) => send(sink, &message).await,
        Outbound::Frame(frame) if binary_output => sink.send(Message::Binary(frame.into())).await,
        Outbound::Frame(frame) => match OutputFrame::decode(&frame) {
            Ok(header) => {
                let output = RunnerMessage::Output(Output {
                    call_id: header.call_id.to_owned(),
                    stream: header.stream,
                    data: String::from_utf8_lossy(&frame[header.data_offset..]).into_owned(),
                });
                send(sink, &output).await
            }
            // We encoded it: cannot happen; nothing worth dropping the
            // connection for either.
            Err(_) => Ok(()),
        },
    }
}

async fn send(sink: &mut Sink, message: &RunnerMessage) -> Result<(), tungstenite::Error> {
    // Serialising our own types cannot fail (no maps with non-string keys,
    // no floats that are NaN): fall back to an empty frame rather than panic.
    let text = serde_json::to_string(message).unwrap_or_default();
    sink.send(Message::Text(text.into())).await
}

/// The calls of one session.
struct Calls {
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    slots: Arc<Semaphore>,
    in_flight: Arc<AtomicU32>,
    backlog: Arc<AtomicU32>,
    received: Arc<std::sync::atomic::AtomicU64>,
    executor: Arc<super::probe::Verdict>,
    metrics: Arc<super::metrics::RunnerMetrics>,
}

impl Calls {
    /// The counters are the health's own, so status readers see them live.
    fn new(max_concurrent: usize, health: &Health) -> Calls {
        Calls {
            running: Arc::default(),
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            in_flight: Arc::clone(&health.in_flight),
            backlog: Arc::clone(&health.backlog),
            received: Arc::clone(&health.received),
            executor: Arc::clone(&health.executor),
            metrics: Arc::clone(&health.metrics),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        // Poisoning needs a panic while holding the lock; the map stays
        // consistent either way (insert/remove are single operations).
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start(&self, call: Call, context: &ToolContext, out: OutboundQueue, binary_output: bool) {
        self.received.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        {
            let mut running = self.lock();
            if running.contains_key(&call.call_id) {
                tracing::warn!(call_id = %call.call_id, "duplicate call id ignored");
                return;
            }
            running.insert(call.call_id.clone(), cancel.clone());
        }
        let context = context.clone();
        let running = Arc::clone(&self.running);
        let slots = Arc::clone(&self.slots);
        let in_flight = Arc::clone(&self.in_flight);
        let backlog = Arc::clone(&self.backlog);
        let metrics = Arc::clone(&self.metrics);
        // At debug only: at info it cost the runner a third of what the line
        // below does (formatting its fields, entering it at every poll),
        // and the lines that matter name the call themselves.
        let span = tracing::debug_span!("call", call_id = %call.call_id, tool = %call.tool);
        let tool = call.tool.clone();
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let started = Instant::now();
                // Counted as waiting only when there is no free slot, and
                // as running before no longer waiting: a status read never
                // sees a call that is about to run as queued, nor a call
                // in neither count.
                let permit = match Arc::clone(&slots).try_acquire_owned() {
                    Ok(permit) => {
                        in_flight.fetch_add(1, Ordering::Relaxed);
                        Some(permit)
                    }
                    Err(_) => {
                        backlog.fetch_add(1, Ordering::Relaxed);
                        let permit = tokio::select! {
                            permit = slots.acquire_owned() => permit.ok(),
                            () = cancel.cancelled() => None,
                        };
                        if permit.is_some() {
                            in_flight.fetch_add(1, Ordering::Relaxed);
                        }
                        backlog.fetch_sub(1, Ordering::Relaxed);
                        permit
                    }
                };
                let timeout = Duration::from_secs(call.timeout_s.max(1));
                let started_call = permit.is_some();
                let outcome = match permit {
                    Some(_permit) => {
                        let scope = CallScope {
                            call_id: call.call_id.clone(),
                            cancel,
                            timeout: timeout.saturating_sub(started.elapsed()),
                            limit: crate::call::Limit::call(timeout.as_secs()),
                            output: call.stream.then(|| out.clone()),
                            binary_output,
                        };
                        let outcome = tools::dispatch(
                            &call.tool,
                            call.args,
                            call.approval_id.as_deref(),
                            &context,
                            &scope,
                        )
                        .await;
                        in_flight.fetch_sub(1, Ordering::Relaxed);
                        outcome
                    }
                    None => tools::ToolOutcome::error("cancelled before it started"),
                };
                running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&call.call_id);
                let elapsed_ms = started.elapsed().as_millis() as u64;
                metrics.call_finished(
                    &tool,
                    if started_call {
                        Outcome::of_error(outcome.error.as_deref())
                    } else {
                        Outcome::Cancelled
                    },
                );
                let (exit_code, error) = (outcome.exit_code, outcome.error.clone());
                let call_id = call.call_id.clone();
                let error_code = outcome.error.as_deref().and_then(|error| {
                    if crate::gate::is_denial(error) {
                        Some(runner_proto::ws::DENIED_BY_RUNNER_POLICY.to_owned())
                    } else if crate::call::is_timeout(error) {
                        Some(runner_proto::ws::TIMED_OUT.to_owned())
                    } else {
                        None
                    }
                });
                let result = RunnerMessage::Result(CallResult {
                    call_id: call.call_id,
                    result: outcome.result,
                    exit_code: outcome.exit_code,
                    error: outcome.error,
                    error_code,
                });
                // The session may be gone; the result then has nowhere to go.
                let _ = out.send(Outbound::Message(result)).await;
                // The writer (woken on this worker) puts the result on the
                // wire before this task writes the operator's log line: the
                // caller waits for the one, nobody for the other.
                tokio::task::yield_now().await;
                match error {
                    // Always: what the operator of this machine must see
                    // (a refusal by the permission file, above all).
                    Some(error) => {
                        tracing::info!(%call_id, %tool, %error, elapsed_ms, "call failed")
                    }
                    None => tracing::info!(
                        target: CALL_LOG,
                        %call_id,
                        %tool,
                        exit_code,
                        elapsed_ms,
                        "call finished"
                    ),
                }
            },
            span,
        ));
    }

    fn cancel(&self, call_id: &str) {
        if let Some(token) = self.lock().get(call_id) {
            token.cancel();
        }
    }

    fn cancel_all(&self) {
        for token in self.lock().values() {
            token.cancel();
        }
    }

    fn heartbeat(&self) -> Heartbeat {
        let backlog = self.backlog.load(Ordering::Relaxed);
        Heartbeat {
            in_flight: self.in_flight.load(Ordering::Relaxed),
            backlog,
            // The last probe's verdict (a process starts, the workspace
            // takes a file and has room); queued calls are the backlog,
            // reported apart (the relay names them in the degraded reason).
            executor_healthy: self.executor.get(),
            sandbox_capacity: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_urls_follow_the_scheme() {
        assert_eq!(
            connect_url("http://127.0.0.1:7700").as_deref(),
            Ok("ws://127.0.0.1:7700/runner/connect")
        );
        assert_eq!(
            connect_url("https://relay.example.com/").as_deref(),
            Ok("wss://relay.example.com/runner/connect")
        );
        assert!(connect_url("relay.example.com").is_err());
    }

    #[test]
    fn recent_ids_remember_the_last_ones_and_forget_the_oldest() {
        let mut recent = RecentIds::default();
        for n in 0..RECENT_CALL_IDS + 10 {
            recent.insert(&format!("call-{n}"));
        }
        // The same id again changes nothing.
        recent.insert(&format!("call-{}", RECENT_CALL_IDS + 9));
        assert_eq!(recent.order.len(), RECENT_CALL_IDS);
        assert_eq!(recent.set.len(), RECENT_CALL_IDS);
        assert!(!recent.contains("call-9"), "the oldest are forgotten");
        assert!(recent.contains("call-10"));
        assert!(recent.contains(&format!("call-{}", RECENT_CALL_IDS + 9)));
    }
}
