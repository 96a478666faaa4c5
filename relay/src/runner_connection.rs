//! One runner's WebSocket session: handshake (`hello` → `welcome`), then
//! heartbeats, call results and outbound frames until either side ends it.
//!
//! Everything a runner sends is untrusted: a frame that does not decode
//! closes *this* connection with a reason, and nothing else is affected.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use runner_proto::api::RunnerInfo;
use runner_proto::audit::{AuditAction, AuditActor};
use runner_proto::close;
use runner_proto::ws::{
    FrameError, Heartbeat, HeartbeatAck, Hello, RelayMessage, RunnerMessage, Welcome,
};
use runner_proto::PROTOCOL_VERSION;
use time::OffsetDateTime;
use tracing::Instrument;
use tungstenite::error::ProtocolError;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Message};
use tungstenite::Utf8Bytes;

use crate::admission::Admitted;
use crate::audit::AuditRecord;
use crate::environment::{name_from_hostname, EnvironmentRecord};
use crate::http::websocket::WebSocket;
use crate::metrics::labels::{ConnectOutcome, DisconnectReason};
use crate::registration::{self, TOKEN_TOUCH_INTERVAL};
use crate::routing::{
    announcement_json, Attachment, Delivery, Kick, OutputChunk, Presence, ServingGuard,
    RELAY_PROTOCOL,
};
use crate::state::AppState;
use crate::status::Degraded;

/// How long a new connection has to send `hello`. A runner sends it as
/// soon as the upgrade is answered; the connection holds a handshake slot
/// meanwhile, so a silent one is let go soon: sooner than a connect
/// waiting for that slot gives up ([`crate::admission::ADMISSION_WAIT`]).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(3);
const _: () = assert!(HELLO_TIMEOUT.as_secs() < crate::admission::ADMISSION_WAIT.as_secs());
/// Heartbeats a runner may miss before its connection is dropped: the
/// relay sends no WebSocket pings, so a runner that is stopped (SIGSTOP,
/// a frozen VM) with its socket still open is noticed only by its silence.
/// At the default interval ([`crate::state::DEFAULT_HEARTBEAT_INTERVAL_S`]):
/// 90 s.
pub const MISSED_HEARTBEATS: u32 = 6;
/// How long one frame may take to write before the runner counts as gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on the store writes of the handshake and of the session's end.
const STORE_TIMEOUT: Duration = Duration::from_secs(10);
/// RFC 6455 limit of a close reason, in bytes.
const MAX_CLOSE_REASON_BYTES: usize = 123;

type Sink = SplitSink<WebSocket, Message>;
type Stream = SplitStream<WebSocket>;

/// What a connection needs besides its socket.
#[derive(Debug, Clone)]
pub struct ConnectionContext {
    pub state: AppState,
    /// The environment as read when the token was checked (the handshake
    /// does not read it again).
    pub environment: EnvironmentRecord,
    /// Hash of the token it connected with, rechecked as time passes.
    pub token_hash: String,
}

/// Why a session ends, when the relay ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ending {
    /// Send this close frame.
    Close(u16, String),
    /// Just drop the socket (the peer is gone or replaced by itself).
    Drop,
}

/// Runs a runner session to its end. `admission` is this connection's
/// place among the handshakes in progress; it is given back once the
/// runner is welcomed (or turned away).
///
/// The socket, the context and the admission come boxed: every async layer
/// keeps its own copy of its arguments for the whole session, and an idle
/// relay holds thousands of these futures (a pointer instead of hundreds
/// of bytes per layer).
pub async fn run(
    socket: Box<WebSocket>,
    context: Box<ConnectionContext>,
    admission: Box<Admitted>,
) {
    let session_id = uuid::Uuid::new_v4().to_string();
    let span = tracing::info_span!(
        "runner",
        environment_id = %context.environment.id,
        session_id = %session_id,
        epoch = tracing::field::Empty,
    );
    session(socket, context, session_id, admission)
        .instrument(span)
        .await;
}

/// A welcomed session: what the loop needs of the handshake.
struct Welcomed {
    epoch: u64,
    attachment: Attachment,
    serving: Option<ServingGuard>,
    runner_info: Arc<RunnerInfo>,
}

async fn session(
    socket: Box<WebSocket>,
    context: Box<ConnectionContext>,
    session_id: String,
    admission: Box<Admitted>,
) {
    let (mut sink, mut stream) = (*socket).split();
    // Boxed: the handshake's state is large and short-lived, and would
    // otherwise stay part of this task's allocation for the whole session.
    let welcomed = Box::pin(handshake(&context, &session_id, &mut sink, &mut stream)).await;
    drop(admission);
    let Welcomed {
        epoch,
        mut attachment,
        mut serving,
        runner_info,
    } = match welcomed {
        Ok(welcomed) => welcomed,
        Err(ending) => {
            context.state.metrics.runner_connect(ConnectOutcome::Failed);
            return finish(&mut sink, ending).await;
        }
    };
    context
        .state
        .metrics
        .runner_connect(ConnectOutcome::Welcomed);
    audit_runner(
        &context.state,
        &context.environment.id,
        &runner_info,
        AuditAction::RunnerConnect,
        None,
    );
    // Only the id of the environment record is kept for the session.
    let ConnectionContext {
        state,
        environment,
        token_hash,
    } = *context;
    let (state, token_hash) = (&state, token_hash.as_str());
    let environment_id = id_only(environment);
    let environment_id = environment_id.as_str();
    let mut token_touched_at = state.clock.now();
    let idle_timeout = Duration::from_secs(state.heartbeat_interval_s) * MISSED_HEARTBEATS;
    let mut idle_deadline = tokio::time::Instant::now() + idle_timeout;
    let mut draining = false;
    let mut drain_deadline = tokio::time::Instant::now();
    // Calls written to this session and not answered on it: they fail in
    // the journal if the runner leaves (see `fail_unanswered`).
    let mut unanswered: HashSet<String> = HashSet::new();
    // Whether the runner is still there when the session ends: the same
    // runner process took a newer session, or this relay is going away.
    // Its calls then go on, and it reports them on its next session.
    let mut runner_stays = false;
    // Whether the last heartbeat said degraded, for the history's
    // degraded periods.
    let mut degraded = false;

    let ending = loop {
        if draining
            && (state.local.pending_calls(environment_id, &session_id) == 0
                || tokio::time::Instant::now() >= drain_deadline)
        {
            runner_stays = true;
            let go_away = RelayMessage::GoAway {
                reason: "relay draining; reconnect at once".to_owned(),
            };
            if let Err(ending) = send(&mut sink, &go_away).await {
                break ending;
            }
            break Ending::Close(close::GOING_AWAY, "relay shutting down".to_owned());
        }
        tokio::select! {
            // Kicks first: a replaced or revoked runner must get its close
            // code even if frames are waiting.
            biased;
            kick = &mut attachment.kick => {
                break match kick {
                    Ok(Kick { close: Some((code, reason)) }) => Ending::Close(code, reason),
                    // The same runner process took a newer session (or
                    // this one lost its lease), or the router forgot us.
                    Ok(Kick { close: None }) | Err(_) => {
                        runner_stays = true;
                        Ending::Drop
                    }
                };
            }
            () = state.shutdown.cancelled(), if !draining => {
                // Drain: no new calls here (callers retry and find the
                // runner's next session), the ones in flight may finish,
                // then `go_away` sends the runner elsewhere.
                draining = true;
                drain_deadline = tokio::time::Instant::now() + state.drain_grace;
                state.local.drain(environment_id, &session_id);
                serving = None;
                tracing::info!(in_flight = state.local.pending_calls(environment_id, &session_id), "draining the runner session");
            }
            () = tokio::time::sleep_until(drain_deadline), if draining => {
                tracing::warn!("calls still in flight after the drain grace period");
            }
            outbound = attachment.outbound.recv() => {
                let Some(frame) = outbound else { break Ending::Drop };
                if let RelayMessage::Call(call) = &*frame {
                    // Before the write: a write that fails may still have
                    // reached the runner.
                    unanswered.insert(call.call_id.clone());
                }
                if let Err(ending) = send(&mut sink, &frame).await {
                    break ending;
                }
                if let RelayMessage::Call(call) = &*frame {
                    state.journal.dispatched(environment_id, call, epoch, state.clock.now()).await;
                }
            }
            () = tokio::time::sleep_until(idle_deadline) => {
                tracing::info!("no frame from the runner within the idle timeout");
                break Ending::Drop;
            }
            incoming = stream.next() => {
                idle_deadline = tokio::time::Instant::now() + idle_timeout;
                let message = match incoming {
                    None => break Ending::Drop,
                    Some(Err(error)) => break read_error(&error),
                    Some(Ok(message)) => message,
                };
                let frame = match decode(message) {
                    Decoded::Frame(frame) => frame,
                    Decoded::Chunk(chunk) => {
                        if let Err(ending) = forward_output(state, environment_id, &session_id, &mut sink, chunk).await {
                            break ending;
                        }
                        continue;
                    }
                    Decoded::Skip => continue,
                    Decoded::End(ending) => break ending,
                };
                match frame {
                    RunnerMessage::Heartbeat(heartbeat) => {
                        let now = state.clock.now();
                        let now_degraded = Degraded::by(&heartbeat);
                        if now_degraded.is_some() != degraded {
                            degraded = now_degraded.is_some();
                            let (action, code) = match now_degraded {
                                Some(why) => (AuditAction::RunnerDegraded, Some(why.code())),
                                None => (AuditAction::RunnerRecovered, None),
                            };
                            audit_runner(state, environment_id, &runner_info, action, code);
                        }
                        state.local.heartbeat(environment_id, &session_id, heartbeat);
                        match &state.cluster {
                            // Batched with the next lease refresh.
                            Some(cluster) => cluster.heartbeat_seen(environment_id, now, RunnerInfo::clone(&runner_info)),
                            // Batched with the next last-seen flush.
                            None => state.seen.note(environment_id, now, &runner_info),
                        }
                        if now - token_touched_at >= TOKEN_TOUCH_INTERVAL {
                            match registration::still_valid(state.store.as_ref(), token_hash, now).await {
                                Ok(true) => {
                                    token_touched_at = now;
                                    touch_token(state, token_hash, now).await;
                                }
                                Ok(false) => break Ending::Close(
                                    close::REVOKED,
                                    "registration token expired or replaced".to_owned(),
                                ),
                                Err(error) => tracing::warn!(%error, "could not recheck the token"),
                            }
                        }
                        let ack = RelayMessage::HeartbeatAck(HeartbeatAck {
                            server_time: now.unix_timestamp(),
                            latest_version: state
                                .releases
                                .as_ref()
                                .and_then(|releases| releases.offer(&runner_info.version)),
                        });
                        if let Err(ending) = send(&mut sink, &ack).await {
                            break ending;
                        }
                    }
                    RunnerMessage::Output(output) => {
                        // From a runner that predates binary output frames.
                        if let Err(ending) = forward_output(state, environment_id, &session_id, &mut sink, output.into()).await {
                            break ending;
                        }
                    }
                    RunnerMessage::Result(result) => {
                        // Journalled whoever waits (maybe nobody: a result
                        // of a call sent on an earlier session).
                        let journalled = result.clone();
                        unanswered.remove(&result.call_id);
                        let known = state.local.deliver_result(environment_id, &session_id, result);
                        state.journal.done(environment_id, journalled, epoch, state.clock.now(), known).await;
                    }
                    RunnerMessage::Catalogue { tools } => {
                        tracing::info!(tools = tools.len(), "runner announced a new catalogue");
                        state.local.catalogue(environment_id, &session_id, tools);
                        if let Some(cluster) = &state.cluster {
                            cluster.catalogue_changed(environment_id);
                        }
                    }
                    RunnerMessage::Hello(_) => {
                        break Ending::Close(close::BAD_FRAME, "hello sent twice".to_owned());
                    }
                    RunnerMessage::Unknown => {
                        tracing::debug!("ignoring a frame type from a newer runner");
                    }
                }
            }
        }
    };
    // Detach first: calls in flight fail now, not after the close handshake.
    drop(serving);
    state.local.detach(environment_id, &session_id);
    if runner_stays {
        unanswered.clear();
    }
    fail_unanswered(
        state,
        environment_id,
        epoch,
        unanswered,
        &mut attachment.outbound,
    )
    .await;
    release(state, environment_id, epoch).await;
    let reason = match &ending {
        Ending::Close(code, _) => DisconnectReason::of_close_code(*code),
        Ending::Drop => DisconnectReason::ConnectionLost,
    };
    state.metrics.runner_disconnect(reason);
    audit_runner(
        state,
        environment_id,
        &runner_info,
        AuditAction::RunnerDisconnect,
        Some(reason.as_str()),
    );
    finish(&mut sink, ending).await;
    tracing::info!("runner disconnected");
}

/// A runner's connect or disconnect in the audit log (the environment's
/// history): the runner's host is the actor.
fn audit_runner(
    state: &AppState,
    environment_id: &str,
    runner: &RunnerInfo,
    action: AuditAction,
    reason: Option<&str>,
) {
    if !state.audit.enabled() {
        return;
    }
    let actor = AuditActor {
        name: Some(runner.hostname.clone()),
        kind: Some("runner".to_owned()),
        client: Some(format!("runner/{}", runner.version)),
        ..AuditActor::default()
    };
    let mut record = AuditRecord::new(state.clock.now(), actor, action)
        .environment(environment_id)
        .target(&runner.hostname);
    record.code = reason.map(str::to_owned);
    state.audit.record(record);
}

/// `hello` → `welcome`: claims the session (its epoch), attaches it to the
/// local router (and NATS in shared mode) and sends `welcome`.
async fn handshake(
    context: &ConnectionContext,
    session_id: &str,
    sink: &mut Sink,
    stream: &mut Stream,
) -> Result<Welcomed, Ending> {
    let hello = receive_hello(stream).await?;
    tracing::info!(
        runner_version = %hello.runner_version,
        hostname = %hello.host.hostname,
        instance_id = %hello.instance_id,
        tools = hello.tools.len(),
        "runner connected"
    );
    let state = &context.state;
    let environment_id = context.environment.id.as_str();
    let Hello {
        runner_version,
        instance_id,
        host,
        tools,
        sandbox_capacity,
        ..
    } = hello;
    let runner_info = Arc::new(RunnerInfo {
        version: runner_version.clone(),
        hostname: host.hostname.clone(),
        os: host.os.clone(),
        arch: host.arch.clone(),
    });
    let mut welcome = welcome(context, &runner_info, session_id).await?;
    let now = state.clock.now();
    let mut presence = Presence {
        session_id: session_id.to_owned(),
        instance_id,
        runner_version,
        host,
        // The hello's own copy is moved into the shared one (or dropped
        // when an equal catalogue is already held).
        tools: state.local.intern_catalogue(tools),
        connected_at: now,
        // A sandbox host's capacity counts from its hello, not its first
        // heartbeat: sessions may be placed on it at once.
        heartbeat: Heartbeat {
            sandbox_capacity,
            ..Heartbeat::default()
        },
        epoch: 0,
        token_hash: context.token_hash.clone(),
    };
    // Ownership: the epoch goes up in the store before anything is routed
    // here, so a call can only ever reach the newest session.
    let claimed = tokio::time::timeout(
        STORE_TIMEOUT,
        state.store.claim_session(
            environment_id,
            &state.relay_id,
            session_id,
            &announcement_json(
                &presence,
                state
                    .cluster
                    .as_ref()
                    .map_or(RELAY_PROTOCOL, |cluster| cluster.protocol()),
            ),
            now,
        ),
    )
    .await;
    let epoch = match claimed {
        Ok(Ok(epoch)) => epoch,
        Ok(Err(error)) => {
            tracing::error!(%error, "could not claim the runner session");
            return Err(Ending::Close(
                close::GOING_AWAY,
                "relay store unavailable".to_owned(),
            ));
        }
        Err(_elapsed) => {
            tracing::error!("claiming the runner session timed out");
            return Err(Ending::Close(
                close::GOING_AWAY,
                "relay store unavailable".to_owned(),
            ));
        }
    };
    tracing::Span::current().record("epoch", epoch);
    presence.epoch = epoch;
    welcome.epoch = epoch;
    let instance_id = presence.instance_id.clone();
    let attachment = state.local.attach(environment_id, presence);
    let mut serving = None;
    if let Some(cluster) = &state.cluster {
        match cluster
            .serve_session(environment_id, epoch, &instance_id)
            .await
        {
            Ok(guard) => serving = Some(guard),
            Err(error) => {
                tracing::error!(%error, "could not serve the session over NATS");
                state.local.detach(environment_id, session_id);
                release(state, environment_id, epoch).await;
                return Err(Ending::Close(
                    close::GOING_AWAY,
                    "relay cannot reach NATS".to_owned(),
                ));
            }
        }
    }
    if let Err(ending) = send(sink, &RelayMessage::Welcome(welcome)).await {
        state.local.detach(environment_id, session_id);
        release(state, environment_id, epoch).await;
        return Err(ending);
    }
    Ok(Welcomed {
        epoch,
        attachment,
        serving,
        runner_info,
    })
}

/// Journals as failed (`runner_disconnected`, SPEC §6: calls in flight
/// when a runner drops fail) the calls of a session that ended without
/// their answers: those written to it (`unanswered`, empty when the runner
/// stays: see `session`), and those still queued for it, which never left
/// this relay. Their callers were told "runner disconnected" as the
/// session was detached; a repeated `call_id` now gets the same answer at
/// once. A runner that outlived the drop and reports a result on its next
/// session still has the last word: the journal takes an answer over a
/// failure (`routing::journal`).
async fn fail_unanswered(
    state: &AppState,
    environment_id: &str,
    epoch: u64,
    unanswered: HashSet<String>,
    queued: &mut tokio::sync::mpsc::Receiver<Box<RelayMessage>>,
) {
    let now = state.clock.now();
    let mut failed = 0usize;
    // Detached: nothing more is queued, so this ends.
    while let Ok(frame) = queued.try_recv() {
        if let RelayMessage::Call(call) = *frame {
            if !unanswered.contains(&call.call_id) {
                state
                    .journal
                    .failed(environment_id, &call.call_id, &call.tool, epoch, now)
                    .await;
                failed += 1;
            }
        }
    }
    for call_id in &unanswered {
        // The tool name was journalled with the dispatch.
        state
            .journal
            .failed(environment_id, call_id, "", epoch, now)
            .await;
    }
    failed += unanswered.len();
    if failed > 0 {
        tracing::info!(
            calls = failed,
            "calls left unanswered by the runner journalled as failed"
        );
    }
}

/// Marks the session closed in the store (unless a newer one replaced it).
async fn release(state: &AppState, environment_id: &str, epoch: u64) {
    match tokio::time::timeout(
        STORE_TIMEOUT,
        state.store.release_session(environment_id, epoch),
    )
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "could not release the runner session"),
        Err(_elapsed) => tracing::warn!("releasing the runner session timed out"),
    }
}

/// Waits for the first frame, which must be a `hello` this relay can serve.
async fn receive_hello(stream: &mut Stream) -> Result<Hello, Ending> {
    let first = tokio::time::timeout(HELLO_TIMEOUT, async {
        loop {
            match stream.next().await {
                None => return Err(Ending::Drop),
                Some(Err(error)) => return Err(read_error(&error)),
                Some(Ok(message)) => match decode(message) {
                    Decoded::Frame(frame) => return Ok(frame),
                    Decoded::Chunk(_) => {
                        return Err(Ending::Close(
                            close::HANDSHAKE,
                            "the first frame must be hello".to_owned(),
                        ))
                    }
                    Decoded::Skip => continue,
                    Decoded::End(ending) => return Err(ending),
                },
            }
        }
    })
    .await
    .map_err(|_elapsed| {
        Ending::Close(
            close::HANDSHAKE,
            format!("no hello within {} s", HELLO_TIMEOUT.as_secs()),
        )
    })??;
    let RunnerMessage::Hello(hello) = first else {
        return Err(Ending::Close(
            close::HANDSHAKE,
            "the first frame must be hello".to_owned(),
        ));
    };
    if hello.protocol_version > PROTOCOL_VERSION {
        return Err(Ending::Close(
            close::UNSUPPORTED_VERSION,
            format!(
                "runner speaks protocol version {}, this relay speaks version {PROTOCOL_VERSION}; upgrade the relay",
                hello.protocol_version
            ),
        ));
    }
    Ok(hello)
}

/// Builds `welcome`: fills a blank name from the hostname and records the
/// connection as seen. Only a first connection, or one with new runner
/// facts, writes at once (so "never connected" stays durable); a usual
/// reconnection is batched like a heartbeat.
async fn welcome(
    context: &ConnectionContext,
    runner_info: &Arc<RunnerInfo>,
    session_id: &str,
) -> Result<Welcome, Ending> {
    let state = &context.state;
    let unavailable = |error: crate::store::StoreError| {
        tracing::error!(%error, "store failure during the handshake");
        Ending::Close(close::GOING_AWAY, "relay store unavailable".to_owned())
    };
    let mut environment = context.environment.clone();
    if environment.name.is_empty() {
        let name = name_from_hostname(&runner_info.hostname);
        if !name.is_empty() {
            let fallback = format!("{name}-{}", environment.id_suffix());
            environment.name = state
                .store
                .fill_blank_name(&environment.id, &name, &fallback)
                .await
                .map_err(unavailable)?;
            state.reads.forget_environment(&environment.id);
            tracing::info!(name = %environment.name, "environment named after the runner's host");
        }
    }
    let now = state.clock.now();
    let known = environment.last_seen.is_some()
        && environment.runner.as_ref() == Some(runner_info.as_ref());
    if !known {
        state
            .store
            .record_seen(&environment.id, now, runner_info)
            .await
            .map_err(unavailable)?;
    } else if let Some(cluster) = &state.cluster {
        cluster.heartbeat_seen(&environment.id, now, RunnerInfo::clone(runner_info));
    } else {
        state.seen.note(&environment.id, now, runner_info);
    }
    let tier = environment.tier;
    let install_browser_tools = environment.install_browser_tools;
    Ok(Welcome {
        protocol_version: PROTOCOL_VERSION,
        environment: runner_proto::ws::EnvironmentInfo {
            id: environment.id,
            name: environment.name,
            tags: environment.tags,
        },
        policy: environment.policy,
        heartbeat_interval_s: state.heartbeat_interval_s,
        session_id: session_id.to_owned(),
        epoch: 0,
        binary_output: true,
        tier: Some(tier),
        install_browser_tools,
    })
}

fn id_only(environment: EnvironmentRecord) -> String {
    environment.id
}

async fn touch_token(state: &AppState, token_hash: &str, now: OffsetDateTime) {
    let store = state.store.as_ref();
    let token = store.token_by_hash(token_hash).await;
    if let Ok(Some(token)) = token {
        if let Err(error) = store.touch_token(&token.id, now).await {
            tracing::warn!(%error, "could not record the token's use");
        }
    }
}

enum Decoded {
    Frame(RunnerMessage),
    /// A binary output frame.
    Chunk(OutputChunk),
    /// Control frames: nothing to do (axum answers pings itself).
    Skip,
    End(Ending),
}

/// Hands an output chunk to its call's reader; a reader stalled too long
/// gets the call cancelled on the runner.
async fn forward_output(
    state: &AppState,
    environment_id: &str,
    session_id: &str,
    sink: &mut Sink,
    chunk: OutputChunk,
) -> Result<(), Ending> {
    let delivery = state
        .local
        .deliver_output(environment_id, session_id, chunk)
        .await;
    if let Delivery::Stalled { call_id } = delivery {
        // Written here, not queued: this task is the one that drains the
        // queue.
        send(sink, &RelayMessage::Cancel { call_id }).await?;
    }
    Ok(())
}

fn decode(message: Message) -> Decoded {
    match message {
        Message::Text(text) => match serde_json::from_str::<RunnerMessage>(text.as_str()) {
            Ok(frame) => Decoded::Frame(frame),
            Err(error) => {
                tracing::warn!(%error, "malformed frame from the runner");
                Decoded::End(Ending::Close(
                    close::BAD_FRAME,
                    format!("malformed frame: {error}"),
                ))
            }
        },
        Message::Binary(frame) => match OutputChunk::from_frame(frame) {
            Ok(chunk) => Decoded::Chunk(chunk),
            // A kind from a newer runner: ignored, as unknown JSON types are.
            Err(FrameError::UnknownKind(kind)) => {
                tracing::debug!(kind, "ignoring a binary frame kind from a newer runner");
                Decoded::Skip
            }
            Err(error @ FrameError::Malformed(_)) => {
                tracing::warn!(%error, "malformed binary frame from the runner");
                Decoded::End(Ending::Close(close::BAD_FRAME, error.to_string()))
            }
        },
        Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => Decoded::Skip,
        Message::Close(_) => Decoded::End(Ending::Drop),
    }
}

/// Ends a session after a read error. A frame that breaks RFC 6455 gets the
/// close code the RFC names before the socket is dropped (§7.4.1: 1002 for
/// a protocol error, 1007 for text that is not UTF-8), one too large gets
/// ours; a socket that failed underneath is just dropped.
fn read_error(error: &tungstenite::Error) -> Ending {
    match error {
        tungstenite::Error::Capacity(_) => {
            tracing::warn!(%error, "runner sent an oversized frame");
            Ending::Close(
                close::FRAME_TOO_LARGE,
                format!("frame larger than {} bytes", runner_proto::MAX_FRAME_BYTES),
            )
        }
        // A peer that went away without a close frame is not a violation
        // to answer: nobody is left to read it.
        tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
            tracing::debug!(%error, "runner socket read failed");
            Ending::Drop
        }
        tungstenite::Error::Protocol(violation) => {
            tracing::warn!(error = %violation, "runner broke the WebSocket protocol");
            Ending::Close(CloseCode::Protocol.into(), violation.to_string())
        }
        tungstenite::Error::Utf8(_) => {
            tracing::warn!(%error, "runner sent a text frame that is not UTF-8");
            Ending::Close(
                CloseCode::Invalid.into(),
                "text frame is not valid UTF-8".to_owned(),
            )
        }
        _ => {
            tracing::debug!(%error, "runner socket read failed");
            Ending::Drop
        }
    }
}

async fn send(sink: &mut Sink, frame: &RelayMessage) -> Result<(), Ending> {
    let text = serde_json::to_string(frame).map_err(|error| {
        // Our own frames always serialise; if one does not, drop the socket
        // rather than send garbage.
        tracing::error!(%error, "could not encode a frame");
        Ending::Drop
    })?;
    match tokio::time::timeout(WRITE_TIMEOUT, sink.send(Message::Text(text.into()))).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::debug!(%error, "runner socket write failed");
            Err(Ending::Drop)
        }
        Err(_elapsed) => {
            tracing::warn!("runner socket write timed out");
            Err(Ending::Drop)
        }
    }
}

async fn finish(sink: &mut Sink, ending: Ending) {
    let Ending::Close(code, reason) = ending else {
        return;
    };
    tracing::info!(code, %reason, "closing the runner connection");
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: Utf8Bytes::from(truncate(&reason, MAX_CLOSE_REASON_BYTES)),
    };
    // Best effort: the peer may already be gone.
    let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.send(Message::Close(Some(frame)))).await;
}

/// Cuts text to at most `max` bytes on a character boundary.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_reasons_fit_the_limit() {
        let long = "é".repeat(100);
        let cut = truncate(&long, MAX_CLOSE_REASON_BYTES);
        assert!(cut.len() <= MAX_CLOSE_REASON_BYTES);
        assert!(long.starts_with(&cut));
    }
}
