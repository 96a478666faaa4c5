//! One runner's WebSocket session: handshake (`hello` → `welcome`), then
//! heartbeats, call results and outbound frames until either side ends it.
//!
//! Everything a runner sends is untrusted: a frame that does not decode
//! closes *this* connection with a reason, and nothing else is affected.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use runner_proto::api::RunnerInfo;
use runner_proto::close;
use runner_proto::ws::{CallResult, HeartbeatAck, Hello, RelayMessage, RunnerMessage, Welcome};
use runner_proto::PROTOCOL_VERSION;
use time::OffsetDateTime;
use tracing::Instrument;

use crate::environment::name_from_hostname;
use crate::registration;
use crate::routing::{announcement_json, Kick, Presence};
use crate::state::AppState;

/// How long a new connection has to send `hello`.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Heartbeat interval the relay asks for in `welcome`.
pub const HEARTBEAT_INTERVAL_S: u64 = 15;
/// A connection silent for this long (six missed heartbeats) is dropped.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How long one frame may take to write before the runner counts as gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a long-lived connection refreshes its token's last use, so
/// that a runner connected for months keeps a token that is in use.
const TOKEN_TOUCH_INTERVAL: time::Duration = time::Duration::hours(1);
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
    pub environment_id: String,
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

/// Runs a runner session to its end.
pub async fn run(socket: WebSocket, context: ConnectionContext) {
    let session_id = uuid::Uuid::new_v4().to_string();
    let span = tracing::info_span!(
        "runner",
        environment_id = %context.environment_id,
        session_id = %session_id,
        epoch = tracing::field::Empty,
    );
    session(socket, context, session_id).instrument(span).await;
}

async fn session(socket: WebSocket, context: ConnectionContext, session_id: String) {
    let (mut sink, mut stream) = socket.split();
    let hello = match receive_hello(&mut stream).await {
        Ok(hello) => hello,
        Err(ending) => return finish(&mut sink, ending).await,
    };
    tracing::info!(
        runner_version = %hello.runner_version,
        hostname = %hello.host.hostname,
        instance_id = %hello.instance_id,
        tools = hello.tools.len(),
        "runner connected"
    );
    let state = &context.state;
    let environment_id = context.environment_id.as_str();
    let mut welcome = match welcome(&context, &hello, &session_id).await {
        Ok(welcome) => welcome,
        Err(ending) => return finish(&mut sink, ending).await,
    };
    let now = state.clock.now();
    let mut presence = Presence {
        session_id: session_id.clone(),
        instance_id: hello.instance_id.clone(),
        runner_version: hello.runner_version.clone(),
        host: hello.host.clone(),
        tools: hello.tools.clone(),
        connected_at: now,
        heartbeat: Default::default(),
        epoch: 0,
    };
    // Ownership: the epoch goes up in the store before anything is routed
    // here, so a call can only ever reach the newest session.
    let claimed = tokio::time::timeout(
        STORE_TIMEOUT,
        state.store.claim_session(
            environment_id,
            &state.relay_id,
            &session_id,
            &announcement_json(&presence),
            now,
        ),
    )
    .await;
    let epoch = match claimed {
        Ok(Ok(epoch)) => epoch,
        Ok(Err(error)) => {
            tracing::error!(%error, "could not claim the runner session");
            let ending = Ending::Close(close::GOING_AWAY, "relay store unavailable".to_owned());
            return finish(&mut sink, ending).await;
        }
        Err(_elapsed) => {
            tracing::error!("claiming the runner session timed out");
            let ending = Ending::Close(close::GOING_AWAY, "relay store unavailable".to_owned());
            return finish(&mut sink, ending).await;
        }
    };
    tracing::Span::current().record("epoch", epoch);
    presence.epoch = epoch;
    welcome.epoch = epoch;
    let mut attachment = state.local.attach(environment_id, presence);
    let mut serving = None;
    if let Some(cluster) = &state.cluster {
        match cluster
            .serve_session(environment_id, epoch, &hello.instance_id)
            .await
        {
            Ok(guard) => serving = Some(guard),
            Err(error) => {
                tracing::error!(%error, "could not serve the session over NATS");
                state.local.detach(environment_id, &session_id);
                release(state, environment_id, epoch).await;
                let ending = Ending::Close(close::GOING_AWAY, "relay cannot reach NATS".to_owned());
                return finish(&mut sink, ending).await;
            }
        }
    }
    if let Err(ending) = send(&mut sink, &RelayMessage::Welcome(welcome)).await {
        state.local.detach(environment_id, &session_id);
        release(state, environment_id, epoch).await;
        return finish(&mut sink, ending).await;
    }
    let runner_info = runner_info(&hello);
    let mut token_touched_at = now;
    let mut idle_deadline = tokio::time::Instant::now() + IDLE_TIMEOUT;
    let mut draining = false;
    let mut drain_deadline = tokio::time::Instant::now();

    let ending = loop {
        if draining
            && (state.local.pending_calls(environment_id, &session_id) == 0
                || tokio::time::Instant::now() >= drain_deadline)
        {
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
                    // Dropped without a close, or the router forgot us.
                    Ok(Kick { close: None }) | Err(_) => Ending::Drop,
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
                if let Err(ending) = send(&mut sink, &frame).await {
                    break ending;
                }
                if let RelayMessage::Call(call) = &frame {
                    journal_dispatched(state, &call.call_id, epoch);
                }
            }
            () = tokio::time::sleep_until(idle_deadline) => {
                tracing::info!("no frame from the runner within the idle timeout");
                break Ending::Drop;
            }
            incoming = stream.next() => {
                idle_deadline = tokio::time::Instant::now() + IDLE_TIMEOUT;
                let message = match incoming {
                    None => break Ending::Drop,
                    Some(Err(error)) => break read_error(&error),
                    Some(Ok(message)) => message,
                };
                let frame = match decode(message) {
                    Decoded::Frame(frame) => frame,
                    Decoded::Skip => continue,
                    Decoded::End(ending) => break ending,
                };
                match frame {
                    RunnerMessage::Heartbeat(heartbeat) => {
                        let now = state.clock.now();
                        state.local.heartbeat(environment_id, &session_id, heartbeat);
                        match &state.cluster {
                            // Batched with the next lease refresh.
                            Some(cluster) => cluster.heartbeat_seen(environment_id, now, runner_info.clone()),
                            None => {
                                if let Err(error) = state.store.record_seen(environment_id, now, &runner_info).await {
                                    tracing::warn!(%error, "could not record the heartbeat");
                                }
                            }
                        }
                        if now - token_touched_at >= TOKEN_TOUCH_INTERVAL {
                            match registration::still_valid(state.store.as_ref(), &context.token_hash, now).await {
                                Ok(true) => {
                                    token_touched_at = now;
                                    touch_token(&context, now).await;
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
                        state.local.deliver_output(environment_id, &session_id, output);
                    }
                    RunnerMessage::Result(result) => {
                        // Journalled whoever waits (maybe nobody: a result
                        // of a call sent on an earlier session).
                        journal_done(state, &result, epoch);
                        state.local.deliver_result(environment_id, &session_id, result);
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
    release(state, environment_id, epoch).await;
    finish(&mut sink, ending).await;
    tracing::info!("runner disconnected");
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

/// Journals pending → dispatched(epoch), off the socket's path.
fn journal_dispatched(state: &AppState, call_id: &str, epoch: u64) {
    let store = state.store.clone();
    let call_id = call_id.to_owned();
    tokio::spawn(async move {
        match tokio::time::timeout(STORE_TIMEOUT, store.mark_dispatched(&call_id, epoch)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, %call_id, "could not journal the dispatch"),
            Err(_elapsed) => tracing::warn!(%call_id, "journalling the dispatch timed out"),
        }
    });
}

/// Journals → done, off the socket's path.
fn journal_done(state: &AppState, result: &CallResult, epoch: u64) {
    let store = state.store.clone();
    let result = result.clone();
    let at = state.clock.now();
    tokio::spawn(async move {
        match tokio::time::timeout(STORE_TIMEOUT, store.finish_invocation(&result, epoch, at)).await
        {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, call_id = %result.call_id, "could not journal the result")
            }
            Err(_elapsed) => {
                tracing::warn!(call_id = %result.call_id, "journalling the result timed out")
            }
        }
    });
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
/// connection as seen.
async fn welcome(
    context: &ConnectionContext,
    hello: &Hello,
    session_id: &str,
) -> Result<Welcome, Ending> {
    let state = &context.state;
    let gone = || Ending::Close(close::DELETED, "environment deleted".to_owned());
    let unavailable = |error: crate::store::StoreError| {
        tracing::error!(%error, "store failure during the handshake");
        Ending::Close(close::GOING_AWAY, "relay store unavailable".to_owned())
    };
    let mut environment = state
        .store
        .environment(&context.environment_id)
        .await
        .map_err(unavailable)?
        .ok_or_else(gone)?;
    if environment.name.is_empty() {
        let name = name_from_hostname(&hello.host.hostname);
        if !name.is_empty() {
            let fallback = format!("{name}-{}", environment.id_suffix());
            environment.name = state
                .store
                .fill_blank_name(&environment.id, &name, &fallback)
                .await
                .map_err(unavailable)?;
            tracing::info!(name = %environment.name, "environment named after the runner's host");
        }
    }
    state
        .store
        .record_seen(&environment.id, state.clock.now(), &runner_info(hello))
        .await
        .map_err(unavailable)?;
    Ok(Welcome {
        protocol_version: PROTOCOL_VERSION,
        environment: runner_proto::ws::EnvironmentInfo {
            id: environment.id,
            name: environment.name,
            tags: environment.tags,
        },
        policy: environment.policy,
        heartbeat_interval_s: HEARTBEAT_INTERVAL_S,
        session_id: session_id.to_owned(),
        epoch: 0,
    })
}

async fn touch_token(context: &ConnectionContext, now: OffsetDateTime) {
    let store = context.state.store.as_ref();
    let token = store.token_by_hash(&context.token_hash).await;
    if let Ok(Some(token)) = token {
        if let Err(error) = store.touch_token(&token.id, now).await {
            tracing::warn!(%error, "could not record the token's use");
        }
    }
}

fn runner_info(hello: &Hello) -> RunnerInfo {
    RunnerInfo {
        version: hello.runner_version.clone(),
        hostname: hello.host.hostname.clone(),
        os: hello.host.os.clone(),
        arch: hello.host.arch.clone(),
    }
}

enum Decoded {
    Frame(RunnerMessage),
    /// Control frames: nothing to do (axum answers pings itself).
    Skip,
    End(Ending),
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
        Message::Binary(_) => Decoded::End(Ending::Close(
            close::BAD_FRAME,
            "binary frames are not supported; send JSON text".to_owned(),
        )),
        Message::Ping(_) | Message::Pong(_) => Decoded::Skip,
        Message::Close(_) => Decoded::End(Ending::Drop),
    }
}

/// Ends a session after a read error, telling the runner when its frame was
/// too large.
fn read_error(error: &axum::Error) -> Ending {
    let too_large = std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<tungstenite::Error>())
        .is_some_and(|error| matches!(error, tungstenite::Error::Capacity(_)));
    if too_large {
        tracing::warn!(%error, "runner sent an oversized frame");
        Ending::Close(
            close::FRAME_TOO_LARGE,
            format!("frame larger than {} bytes", runner_proto::MAX_FRAME_BYTES),
        )
    } else {
        tracing::debug!(%error, "runner socket read failed");
        Ending::Drop
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
        code,
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
