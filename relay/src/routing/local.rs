//! In-process routing: a map from environment id to its live socket.
//!
//! The map sits behind a `std::sync::Mutex` held only for map operations,
//! never across an await; the socket itself is owned by its connection task
//! ([`crate::runner_connection`]), which this map reaches through a bounded
//! queue of frames and a one-shot "kick".
//!
//! Each presence is an `Arc`, handed out on every call without copying; a
//! heartbeat replaces it copy-on-write (the catalogue inside is shared).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use runner_proto::ws::{Call, CallResult, Heartbeat, Policy, RelayMessage, ToolSpec};
use tokio::sync::mpsc::error::{SendTimeoutError, TrySendError};
use tokio::sync::{mpsc, oneshot};

use super::{CallHandle, CallRouter, CatalogueInterner, OutputChunk, Presence, RouteError};

/// Frames waiting to be written to one runner. Bounded so a runner that
/// stops reading cannot make the relay buffer without limit.
const OUTBOUND_QUEUE: usize = 64;
/// How long a sender waits for room in a runner's outbound queue before
/// treating the runner as gone.
const ENQUEUE_TIMEOUT: Duration = Duration::from_secs(10);
/// Output chunks buffered per call for its reader.
const OUTPUT_QUEUE: usize = 32;

/// What became of an output chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Queued for the reader, or dropped because nobody reads it (unknown
    /// or non-streamed call, reader gone).
    Done,
    /// The reader stalled past [`LocalRouter::output_stall`]: the call was
    /// failed towards its waiter and forgotten; the connection must tell
    /// the runner to cancel it.
    Stalled { call_id: String },
}

/// Tells a connection task to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kick {
    /// Close frame to send (code, reason); `None` drops the socket quietly.
    pub close: Option<(u16, String)>,
}

/// What a connection task gets when it attaches: its frame queue and kick.
/// Frames are boxed: an idle connection's queue allocates its first block
/// of slots up front, and a slot is then a pointer, not a whole frame.
#[derive(Debug)]
pub struct Attachment {
    pub outbound: mpsc::Receiver<Box<RelayMessage>>,
    pub kick: oneshot::Receiver<Kick>,
}

#[derive(Debug)]
struct PendingCall {
    output: mpsc::Sender<OutputChunk>,
    result: oneshot::Sender<CallResult>,
    /// The caller reads output (a streamed call); otherwise chunks are
    /// dropped at once, since nobody would ever take them.
    streamed: bool,
}

#[derive(Debug)]
struct LiveRunner {
    presence: Arc<Presence>,
    outbound: mpsc::Sender<Box<RelayMessage>>,
    kick: Option<oneshot::Sender<Kick>>,
    /// Calls sent and not answered; dropping one tells its waiter the runner
    /// went away.
    calls: HashMap<String, PendingCall>,
    /// The relay is draining: no new calls for this socket.
    draining: bool,
}

impl LiveRunner {
    fn kick(&mut self, kick: Kick) {
        if let Some(sender) = self.kick.take() {
            // The task may already have ended; then there is nobody to tell.
            let _ = sender.send(kick);
        }
    }
}

/// Live runner sockets of this process.
#[derive(Debug)]
pub struct LocalRouter {
    runners: Mutex<HashMap<String, LiveRunner>>,
    catalogues: CatalogueInterner,
    /// How long a streamed call's output may wait for room in its queue.
    /// The wait holds up the runner's socket reader (that is the
    /// backpressure: the runner's writes stall too), so it is bounded: a
    /// reader that takes no chunk for this long is treated as stuck and
    /// its call is cancelled.
    output_stall: Duration,
}

impl Default for LocalRouter {
    fn default() -> Self {
        Self::with_output_stall(crate::state::StreamTimings::default().output_stall)
    }
}

impl LocalRouter {
    /// An empty router with the default output stall timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty router whose streamed calls are cancelled once their
    /// reader takes no output for `output_stall`.
    pub fn with_output_stall(output_stall: Duration) -> Self {
        Self {
            runners: Mutex::default(),
            catalogues: CatalogueInterner::default(),
            output_stall,
        }
    }

    /// How long a streamed call's output waits for its reader.
    pub fn output_stall(&self) -> Duration {
        self.output_stall
    }

    fn runners(&self) -> MutexGuard<'_, HashMap<String, LiveRunner>> {
        // A panic while holding this lock cannot leave the map half-updated
        // (every operation is a single insert/remove/field write), so a
        // poisoned lock is still usable.
        self.runners
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The shared copy of an announced catalogue.
    pub fn intern_catalogue(&self, tools: Vec<ToolSpec>) -> super::Catalogue {
        self.catalogues.intern(tools)
    }

    /// Registers a connection as its environment's runner. An older
    /// connection is kicked: with `REPLACED` when it is another process
    /// (different `instance_id`), quietly when the same process reconnected.
    pub fn attach(&self, environment_id: &str, presence: Presence) -> Attachment {
        let (outbound_tx, outbound) = mpsc::channel(OUTBOUND_QUEUE);
        let (kick_tx, kick) = oneshot::channel();
        let hostname = presence.host.hostname.clone();
        let instance_id = presence.instance_id.clone();
        let new = LiveRunner {
            presence: Arc::new(presence),
            outbound: outbound_tx,
            kick: Some(kick_tx),
            calls: HashMap::new(),
            draining: false,
        };
        let old = self.runners().insert(environment_id.to_owned(), new);
        if let Some(mut old) = old {
            let close = if old.presence.instance_id == instance_id {
                tracing::info!(
                    environment_id,
                    "runner reconnected; dropping its previous socket"
                );
                None
            } else {
                tracing::info!(environment_id, %hostname, "runner replaced by a newer connection");
                Some((
                    runner_proto::close::REPLACED,
                    format!("replaced by a newer connection from {hostname}"),
                ))
            };
            old.kick(Kick { close });
        }
        Attachment { outbound, kick }
    }

    /// Removes a connection that ended by itself, unless a newer one has
    /// already taken its place.
    pub fn detach(&self, environment_id: &str, session_id: &str) {
        let mut runners = self.runners();
        if runners
            .get(environment_id)
            .is_some_and(|live| live.presence.session_id == session_id)
        {
            runners.remove(environment_id);
        }
    }

    fn with_session<T>(
        &self,
        environment_id: &str,
        session_id: &str,
        f: impl FnOnce(&mut LiveRunner) -> T,
    ) -> Option<T> {
        let mut runners = self.runners();
        runners
            .get_mut(environment_id)
            .filter(|live| live.presence.session_id == session_id)
            .map(f)
    }

    /// Records a heartbeat's report. Unchanged reports (the usual case)
    /// cost no copy; a changed one replaces the presence copy-on-write.
    pub fn heartbeat(&self, environment_id: &str, session_id: &str, heartbeat: Heartbeat) {
        self.with_session(environment_id, session_id, |live| {
            if live.presence.heartbeat != heartbeat {
                Arc::make_mut(&mut live.presence).heartbeat = heartbeat;
            }
        });
    }

    /// Replaces the announced catalogue.
    pub fn catalogue(&self, environment_id: &str, session_id: &str, tools: Vec<ToolSpec>) {
        let tools = self.catalogues.intern(tools);
        self.with_session(environment_id, session_id, |live| {
            Arc::make_mut(&mut live.presence).tools = tools;
        });
    }

    /// Hands an output chunk to the call's waiter, in order and without
    /// loss: when the reader's queue is full this waits (so the runner's
    /// socket is read no faster than the caller reads), at most
    /// [`LocalRouter::output_stall`]; past that the call fails towards its
    /// waiter and the caller of this must cancel it on the runner. Chunks
    /// of unknown or non-streamed calls are dropped.
    pub async fn deliver_output(
        &self,
        environment_id: &str,
        session_id: &str,
        output: OutputChunk,
    ) -> Delivery {
        let queue = self
            .with_session(environment_id, session_id, |live| {
                live.calls
                    .get(&output.call_id)
                    .filter(|call| call.streamed)
                    .map(|call| call.output.clone())
            })
            .flatten();
        let Some(queue) = queue else {
            return Delivery::Done;
        };
        let output = match queue.try_send(output) {
            Ok(()) | Err(TrySendError::Closed(_)) => return Delivery::Done,
            Err(TrySendError::Full(output)) => output,
        };
        let call_id = output.call_id.clone();
        match queue.send_timeout(output, self.output_stall).await {
            Ok(()) | Err(SendTimeoutError::Closed(_)) => Delivery::Done,
            Err(SendTimeoutError::Timeout(_)) => {
                let pending = self
                    .with_session(environment_id, session_id, |live| {
                        live.calls.remove(&call_id)
                    })
                    .flatten();
                let Some(pending) = pending else {
                    // Answered or cancelled meanwhile.
                    return Delivery::Done;
                };
                tracing::warn!(
                    environment_id,
                    %call_id,
                    "the caller stopped reading a streamed call's output; cancelling the call"
                );
                let error = format!(
                    "call cancelled: the caller read none of its output for {} s",
                    self.output_stall.as_secs()
                );
                // The waiter may be gone too; then nobody is told.
                let _ = pending.result.send(CallResult {
                    call_id: call_id.clone(),
                    error: Some(error),
                    ..CallResult::default()
                });
                Delivery::Stalled { call_id }
            }
        }
    }

    /// Hands a result to the call's waiter and forgets the call. Returns
    /// whether the call was waiting on this session.
    pub fn deliver_result(
        &self,
        environment_id: &str,
        session_id: &str,
        result: CallResult,
    ) -> bool {
        let pending = self
            .with_session(environment_id, session_id, |live| {
                live.calls.remove(&result.call_id)
            })
            .flatten();
        match pending {
            Some(call) => {
                // The waiter may have given up (client gone) a moment ago.
                let _ = call.result.send(result);
                true
            }
            None => {
                tracing::debug!(
                    environment_id,
                    call_id = %result.call_id,
                    "result for a call nobody waits for"
                );
                false
            }
        }
    }

    /// Number of connected runners.
    pub fn connected(&self) -> usize {
        self.runners().len()
    }

    /// The runner here that may take new calls (not draining).
    pub fn routable(&self, environment_id: &str) -> Option<Arc<Presence>> {
        self.runners()
            .get(environment_id)
            .filter(|live| !live.draining)
            .map(|live| live.presence.clone())
    }

    /// Whether a call is waiting for its result on this relay's socket.
    pub fn has_call(&self, environment_id: &str, call_id: &str) -> bool {
        self.runners()
            .get(environment_id)
            .is_some_and(|live| live.calls.contains_key(call_id))
    }

    /// Calls waiting for a result on one session.
    pub fn pending_calls(&self, environment_id: &str, session_id: &str) -> usize {
        self.with_session(environment_id, session_id, |live| live.calls.len())
            .unwrap_or(0)
    }

    /// Stops routing new calls to a session (the relay drains).
    pub fn drain(&self, environment_id: &str, session_id: &str) {
        self.with_session(environment_id, session_id, |live| live.draining = true);
    }

    /// Every held session, for the lease refresh.
    pub fn sessions(&self) -> Vec<(String, Arc<Presence>)> {
        self.runners()
            .iter()
            .map(|(id, live)| (id.clone(), live.presence.clone()))
            .collect()
    }

    /// Closes the session with exactly this epoch (its lease was lost).
    pub fn drop_epoch(&self, environment_id: &str, epoch: u64) -> bool {
        let mut runners = self.runners();
        if runners
            .get(environment_id)
            .is_none_or(|live| live.presence.epoch != epoch)
        {
            return false;
        }
        if let Some(mut live) = runners.remove(environment_id) {
            live.kick(Kick { close: None });
        }
        true
    }

    /// A newer session (`epoch`) of this environment started on some relay:
    /// closes the one here if it is older; `REPLACED` when the newer one is
    /// another runner process, quietly when the same one reconnected.
    pub fn supersede(&self, environment_id: &str, epoch: u64, instance_id: &str) -> bool {
        let mut runners = self.runners();
        if runners
            .get(environment_id)
            .is_none_or(|live| live.presence.epoch >= epoch)
        {
            return false;
        }
        let Some(mut live) = runners.remove(environment_id) else {
            return false;
        };
        let close = (live.presence.instance_id != instance_id).then(|| {
            (
                runner_proto::close::REPLACED,
                "replaced by a newer connection".to_owned(),
            )
        });
        tracing::info!(
            environment_id,
            old_epoch = live.presence.epoch,
            epoch,
            "runner session superseded by a newer one"
        );
        live.kick(Kick { close });
        true
    }

    fn forget_call(
        &self,
        environment_id: &str,
        call_id: &str,
    ) -> Option<mpsc::Sender<Box<RelayMessage>>> {
        let mut runners = self.runners();
        let live = runners.get_mut(environment_id)?;
        live.calls.remove(call_id);
        Some(live.outbound.clone())
    }
}

#[async_trait]
impl CallRouter for LocalRouter {
    async fn presence(&self, environment_id: &str) -> Option<Arc<Presence>> {
        self.runners()
            .get(environment_id)
            .map(|live| live.presence.clone())
    }

    async fn start_call(
        &self,
        environment_id: &str,
        mut call: Call,
    ) -> Result<CallHandle, RouteError> {
        let call_id = call.call_id.clone();
        let (output_tx, output) = mpsc::channel(OUTPUT_QUEUE);
        let (result_tx, result) = oneshot::channel();
        let outbound = {
            let mut runners = self.runners();
            let live = runners
                .get_mut(environment_id)
                .filter(|live| call.epoch == 0 || call.epoch == live.presence.epoch)
                .ok_or_else(|| RouteError::NotConnected(environment_id.to_owned()))?;
            call.epoch = live.presence.epoch;
            // Registered before the frame leaves so that even an instant
            // answer finds its waiter.
            live.calls.insert(
                call_id.clone(),
                PendingCall {
                    output: output_tx,
                    result: result_tx,
                    streamed: call.stream,
                },
            );
            live.outbound.clone()
        };
        if outbound
            .send_timeout(Box::new(RelayMessage::Call(call)), ENQUEUE_TIMEOUT)
            .await
            .is_err()
        {
            self.forget_call(environment_id, &call_id);
            return Err(RouteError::Disconnected(environment_id.to_owned()));
        }
        Ok(CallHandle {
            call_id,
            output,
            result,
        })
    }

    async fn cancel(&self, environment_id: &str, call_id: &str) {
        if let Some(outbound) = self.forget_call(environment_id, call_id) {
            let cancel = Box::new(RelayMessage::Cancel {
                call_id: call_id.to_owned(),
            });
            if outbound
                .send_timeout(cancel, ENQUEUE_TIMEOUT)
                .await
                .is_err()
            {
                tracing::debug!(
                    environment_id,
                    call_id,
                    "could not send cancel: runner gone"
                );
            }
        }
    }

    async fn disconnect(&self, environment_id: &str, code: u16, reason: &str) -> bool {
        let removed = self.runners().remove(environment_id);
        match removed {
            Some(mut live) => {
                live.kick(Kick {
                    close: Some((code, reason.to_owned())),
                });
                true
            }
            None => false,
        }
    }

    async fn push_policy(
        &self,
        environment_id: &str,
        policy: Policy,
        install_browser_tools: Option<bool>,
    ) -> bool {
        let outbound = self
            .runners()
            .get(environment_id)
            .map(|live| live.outbound.clone());
        match outbound {
            Some(outbound) => outbound
                .send_timeout(
                    Box::new(RelayMessage::Policy {
                        policy,
                        install_browser_tools,
                    }),
                    ENQUEUE_TIMEOUT,
                )
                .await
                .is_ok(),
            None => false,
        }
    }
}
