//! Simulated runners: many in one process, each on its own socket, speaking
//! the real protocol (`runner_proto::ws`): `hello` → `welcome`, a heartbeat
//! every `heartbeat_interval_s` (the first at once, as the real runner's
//! `tokio::time::interval` does), `ping` calls answered, terminal close
//! codes obeyed, and reconnection with the real runner's backoff.
//!
//! Reconnection uses the runner's own backoff (`runner_cli::agent::backoff`:
//! base 500 ms, cap 60 s, equal jitter in [d/2, d], reset after a 30 s
//! session) and its connect and welcome timeouts, imported from the CLI
//! crate so the simulation can never drift from the real runner.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use runner_proto::ws::{
    CallResult, Heartbeat, Hello, HostFacts, RelayMessage, RunnerMessage, ToolSpec,
};
use runner_proto::{close, MAX_FRAME_BYTES, PROTOCOL_VERSION, RUNNER_CONNECT_PATH};
use serde_json::json;
use tokio::net::TcpSocket;
use tokio::sync::{watch, Semaphore};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

pub use runner_cli::agent::backoff::{Backoff, BASE as BACKOFF_BASE, HEALTHY_SESSION};
use runner_cli::agent::session::{retry_after, CONNECT_TIMEOUT, WELCOME_TIMEOUT};
/// Socket buffers of the load generator itself: small, so that its own
/// memory does not limit the fleet (it is not what is measured).
const LOADGEN_BUFFER_BYTES: usize = 4 * 1024;

/// What happened to a simulated runner, with its time since [`Fleet::epoch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A connection attempt starts.
    Attempt,
    /// `welcome` received: online.
    Welcome,
    /// A welcomed session ended.
    Lost,
}

#[derive(Debug, Clone, Copy)]
pub struct Event {
    pub runner: u32,
    pub kind: EventKind,
    pub at_us: u64,
}

/// State shared by every simulated runner of a fleet.
pub struct Fleet {
    pub relay: SocketAddr,
    pub epoch: Instant,
    pub connected: AtomicUsize,
    pub attempts: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub welcomes: AtomicU64,
    pub heartbeats_sent: AtomicU64,
    pub heartbeat_acks: AtomicU64,
    pub calls_answered: AtomicU64,
    /// Sessions closed with `REPLACED`: the relay saw two sessions for one
    /// environment (a duplicate).
    pub replaced: AtomicU64,
    /// Sessions ended by another terminal code, or a refused token.
    pub stopped: AtomicU64,
    pub events: Mutex<Vec<Event>>,
    /// While set, connection attempts queue on `gate` (a paced ramp-up;
    /// real fleets do not arrive in one millisecond). Off for the storm.
    pub gated: AtomicBool,
    pub gate: Semaphore,
    pub first_error: Mutex<Option<String>>,
    shutdown: watch::Sender<bool>,
}

impl Fleet {
    pub fn new(relay: SocketAddr, gate: usize) -> Arc<Fleet> {
        Arc::new(Fleet {
            relay,
            epoch: Instant::now(),
            connected: AtomicUsize::new(0),
            attempts: AtomicU64::new(0),
            failed_attempts: AtomicU64::new(0),
            welcomes: AtomicU64::new(0),
            heartbeats_sent: AtomicU64::new(0),
            heartbeat_acks: AtomicU64::new(0),
            calls_answered: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
            stopped: AtomicU64::new(0),
            events: Mutex::new(Vec::new()),
            gated: AtomicBool::new(true),
            gate: Semaphore::new(gate.max(1)),
            first_error: Mutex::new(None),
            shutdown: watch::channel(false).0,
        })
    }

    pub fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    fn record(&self, runner: u32, kind: EventKind) {
        let event = Event {
            runner,
            kind,
            at_us: self.now_us(),
        };
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }

    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn error(&self, message: String) {
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if first.is_none() {
            *first = Some(message);
        }
    }

    /// Stops every simulated runner (their sockets close).
    pub fn shutdown(&self) {
        let _ = self.shutdown.send(true);
    }
}

/// The catalogue a real runner announces (names, descriptions and schemas
/// of similar size), so that the relay keeps what it keeps for a real one.
fn catalogue() -> Vec<ToolSpec> {
    let tool = |name: &str, description: &str, schema: serde_json::Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
    };
    vec![
        tool("ping", "Echo the arguments back without running anything (health probe).", json!({"type": "object"})),
        tool(
            "shell",
            "Run a command with bash -c in the workspace; returns stdout, stderr and the exit code.",
            json!({"type": "object", "required": ["command"], "properties": {
                "command": {"type": "string", "description": "Bash script to run"},
                "workdir": {"type": "string", "description": "Working directory (relative: inside the workspace)"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        ),
        tool(
            "file_read",
            "Read a file (binary-safe: non-UTF-8 content comes back base64-encoded).",
            json!({"type": "object", "required": ["path"], "properties": {
                "path": {"type": "string"}, "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 0}}}),
        ),
        tool(
            "file_write",
            "Write a file atomically (create, overwrite or append).",
            json!({"type": "object", "required": ["path", "content"], "properties": {
                "path": {"type": "string"}, "content": {"type": "string"},
                "encoding": {"enum": ["utf-8", "base64"]}, "mode": {"enum": ["overwrite", "create", "append"]}}}),
        ),
    ]
}

enum Ended {
    /// Stop for good (terminal close code or refused token).
    Stop,
    /// Reconnect after the backoff (no sooner than the relay's
    /// `Retry-After`, as the runner does).
    Retry {
        welcomed: bool,
        retry_after: Option<Duration>,
    },
    /// The harness is done with this runner.
    Shutdown,
}

impl Ended {
    /// A welcomed session that ended: reconnect after the backoff.
    const LOST: Ended = Ended::Retry {
        welcomed: true,
        retry_after: None,
    };
}

/// One simulated runner, until the fleet shuts down or the relay tells it to
/// stop.
pub async fn run(fleet: Arc<Fleet>, index: u32, token: String, source: Ipv4Addr) {
    let mut shutdown = fleet.shutdown.subscribe();
    let mut backoff = Backoff::default();
    let hello = Hello {
        protocol_version: PROTOCOL_VERSION,
        runner_version: "0.1.0-bench".into(),
        instance_id: uuid::Uuid::new_v4().to_string(),
        host: HostFacts {
            hostname: format!("sim-{index}"),
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            workspace: format!("/srv/sim-{index}"),
        },
        tools: catalogue(),
        sandbox_capacity: None,
    };
    let hello = match serde_json::to_string(&RunnerMessage::Hello(hello)) {
        Ok(text) => text,
        Err(error) => return fleet.error(format!("encoding hello: {error}")),
    };
    loop {
        if *shutdown.borrow() {
            return;
        }
        let started = Instant::now();
        let ended = tokio::select! {
            ended = session(&fleet, index, &token, source, &hello) => ended,
            _ = shutdown.changed() => Ended::Shutdown,
        };
        match ended {
            Ended::Stop | Ended::Shutdown => return,
            Ended::Retry {
                welcomed,
                retry_after,
            } => {
                if welcomed && started.elapsed() >= HEALTHY_SESSION {
                    backoff.reset();
                }
                let delay = match retry_after {
                    Some(floor) => backoff.next_delay_at_least(floor),
                    None => backoff.next_delay(),
                };
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }
}

async fn session(fleet: &Fleet, index: u32, token: &str, source: Ipv4Addr, hello: &str) -> Ended {
    fleet.record(index, EventKind::Attempt);
    fleet.attempts.fetch_add(1, Ordering::Relaxed);
    let permit = if fleet.gated.load(Ordering::Relaxed) {
        fleet.gate.acquire().await.ok()
    } else {
        None
    };
    let socket = match tokio::time::timeout(
        CONNECT_TIMEOUT + WELCOME_TIMEOUT,
        handshake(fleet, token, source, hello),
    )
    .await
    {
        Ok(Ok(socket)) => socket,
        Ok(Err(HandshakeError::Stop(message))) => {
            fleet.stopped.fetch_add(1, Ordering::Relaxed);
            fleet.error(message);
            return Ended::Stop;
        }
        Ok(Err(HandshakeError::Retry(message, retry_after))) => {
            fleet.failed_attempts.fetch_add(1, Ordering::Relaxed);
            fleet.error(message);
            return Ended::Retry {
                welcomed: false,
                retry_after,
            };
        }
        Err(_) => {
            fleet.failed_attempts.fetch_add(1, Ordering::Relaxed);
            fleet.error("handshake timed out".into());
            return Ended::Retry {
                welcomed: false,
                retry_after: None,
            };
        }
    };
    drop(permit);
    let (socket, interval) = socket;
    fleet.record(index, EventKind::Welcome);
    fleet.welcomes.fetch_add(1, Ordering::Relaxed);
    fleet.connected.fetch_add(1, Ordering::Relaxed);
    let ended = welcomed(fleet, socket, interval).await;
    fleet.connected.fetch_sub(1, Ordering::Relaxed);
    fleet.record(index, EventKind::Lost);
    ended
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

enum HandshakeError {
    Stop(String),
    /// With the relay's `Retry-After`, when it gave one.
    Retry(String, Option<Duration>),
}

async fn handshake(
    fleet: &Fleet,
    token: &str,
    source: Ipv4Addr,
    hello: &str,
) -> Result<(Socket, Duration), HandshakeError> {
    let retry = |what: &str, error: &dyn std::fmt::Display| {
        HandshakeError::Retry(format!("{what}: {error}"), None)
    };
    let socket = TcpSocket::new_v4().map_err(|e| retry("socket", &e))?;
    socket
        .bind(SocketAddr::from((source, 0)))
        .map_err(|e| retry(&format!("binding {source}"), &e))?;
    let stream = socket
        .connect(fleet.relay)
        .await
        .map_err(|e| retry(&format!("connecting to {}", fleet.relay), &e))?;
    let _ = stream.set_nodelay(true);
    let url = format!("ws://{}{RUNNER_CONNECT_PATH}", fleet.relay);
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| retry("request", &e))?;
    let bearer = format!("Bearer {token}")
        .parse()
        .map_err(|_| HandshakeError::Stop("token is not header text".into()))?;
    request.headers_mut().insert("authorization", bearer);
    let config = WebSocketConfig::default()
        .read_buffer_size(LOADGEN_BUFFER_BYTES)
        .write_buffer_size(LOADGEN_BUFFER_BYTES)
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    let (mut socket, _) =
        match tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await {
            Ok(done) => done,
            Err(tokio_tungstenite::tungstenite::Error::Http(response))
                if response.status() == 401 =>
            {
                return Err(HandshakeError::Stop(
                    "the relay refused the token (401)".into(),
                ))
            }
            Err(tokio_tungstenite::tungstenite::Error::Http(response))
                if matches!(response.status().as_u16(), 429 | 503) =>
            {
                return Err(HandshakeError::Retry(
                    format!("turned away ({})", response.status()),
                    retry_after(response.headers()),
                ))
            }
            Err(error) => return Err(retry("upgrade", &error)),
        };
    socket
        .send(Message::Text(hello.to_owned().into()))
        .await
        .map_err(|e| retry("sending hello", &e))?;
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => match serde_json::from_str::<RelayMessage>(&text) {
                Ok(RelayMessage::Welcome(welcome)) => {
                    let interval = Duration::from_secs(welcome.heartbeat_interval_s.clamp(1, 300));
                    return Ok((socket, interval));
                }
                Ok(_) => continue,
                Err(error) => return Err(retry("bad welcome", &error)),
            },
            Some(Ok(Message::Close(frame))) => {
                let code = frame.as_ref().map(|f| u16::from(f.code)).unwrap_or(1005);
                if close::is_terminal(code) {
                    if code == close::REPLACED {
                        fleet.replaced.fetch_add(1, Ordering::Relaxed);
                    }
                    return Err(HandshakeError::Stop(format!(
                        "closed with terminal code {code}"
                    )));
                }
                return Err(HandshakeError::Retry(
                    format!("closed during handshake ({code})"),
                    None,
                ));
            }
            Some(Ok(_)) => continue,
            Some(Err(error)) => return Err(retry("reading welcome", &error)),
            None => return Err(HandshakeError::Retry("closed before welcome".into(), None)),
        }
    }
}

async fn welcomed(fleet: &Fleet, socket: Socket, interval: Duration) -> Ended {
    let (mut sink, mut stream) = socket.split();
    let mut heartbeat = tokio::time::interval(interval);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let beat = match serde_json::to_string(&RunnerMessage::Heartbeat(Heartbeat {
        in_flight: 0,
        backlog: 0,
        executor_healthy: Some(true),
        sandbox_capacity: None,
    })) {
        Ok(text) => text,
        Err(_) => return Ended::Stop,
    };
    loop {
        tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => match serde_json::from_str::<RelayMessage>(&text) {
                    Ok(RelayMessage::HeartbeatAck(_)) => {
                        fleet.heartbeat_acks.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(RelayMessage::Call(call)) => {
                        let result = if call.tool == "ping" {
                            CallResult { call_id: call.call_id, result: call.args, exit_code: None, error: None, error_code: None }
                        } else {
                            CallResult { call_id: call.call_id, error: Some("simulated runner: only ping".into()), ..Default::default() }
                        };
                        let Ok(text) = serde_json::to_string(&RunnerMessage::Result(result)) else { continue };
                        if sink.send(Message::Text(text.into())).await.is_err() {
                            return Ended::LOST;
                        }
                        fleet.calls_answered.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {}
                },
                Some(Ok(Message::Close(frame))) => {
                    let code = frame.as_ref().map(|f| u16::from(f.code)).unwrap_or(1005);
                    if close::is_terminal(code) {
                        if code == close::REPLACED {
                            fleet.replaced.fetch_add(1, Ordering::Relaxed);
                        } else {
                            fleet.stopped.fetch_add(1, Ordering::Relaxed);
                        }
                        return Ended::Stop;
                    }
                    return Ended::LOST;
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return Ended::LOST,
            },
            _ = heartbeat.tick() => {
                if sink.send(Message::Text(beat.clone().into())).await.is_err() {
                    return Ended::LOST;
                }
                fleet.heartbeats_sent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
