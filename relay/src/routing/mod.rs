//! Reaching a runner: the one interface ([`CallRouter`]) through which
//! handlers send calls, cancel them, push policy and disconnect runners.
//!
//! Three layers, outermost first:
//!
//! * [`JournaledRouter`]: makes a client's `call_id` an idempotency key
//!   (journalled before the call is sent) and hands every other journal
//!   entry (pending → dispatched → done, or failed) to the batched
//!   [`JournalWriter`];
//! * [`NatsRouter`] (shared mode only): sends a call by NATS request-reply
//!   to the relay holding the runner's socket, fenced by session epoch, and
//!   broadcasts revocation, deletion, policy and cancel to every relay;
//! * [`LocalRouter`]: the sockets this process holds.
//!
//! Nothing outside this module may assume the socket is here.

mod catalogue;
mod journal;
mod local;
mod nats;
pub mod stored_result;

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use runner_proto::ws::{
    Call, CallResult, FrameError, Heartbeat, HostFacts, Output, OutputFrame, Policy, Stream,
};
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};

pub use catalogue::{Catalogue, CatalogueInterner};
pub use journal::{
    shrink_journal, JournalShrink, JournalWriter, JournaledRouter, DISCONNECTED_MESSAGE,
};
pub use local::{Attachment, Delivery, Kick, LocalRouter};
pub use nats::{
    announced_tools, announcement_json, ClusterConfig, NatsRouter, ServingGuard,
    DEFAULT_SUBJECT_PREFIX, OLDEST_RELAY_PROTOCOL, RELAY_PROTOCOL,
};

/// What the relay knows about a connected runner.
#[derive(Debug, Clone, PartialEq)]
pub struct Presence {
    /// Id of the WebSocket session (sent in `welcome`).
    pub session_id: String,
    /// The runner process's random id.
    pub instance_id: String,
    pub runner_version: String,
    pub host: HostFacts,
    /// The announced tool catalogue; fleets announce identical ones, which
    /// share one allocation (see [`CatalogueInterner`]).
    pub tools: Catalogue,
    pub connected_at: OffsetDateTime,
    /// The latest heartbeat (default until the first one).
    pub heartbeat: Heartbeat,
    /// Fencing epoch of the session ([`runner_proto::ws::Welcome::epoch`]).
    pub epoch: u64,
    /// Hash of the registration token the runner connected with, to tell
    /// which token it uses after a rotation (never shown; empty when a
    /// relay of an older version announced the session).
    pub token_hash: String,
}

/// A call on its way: output chunks while it runs, then exactly one result.
/// The result channel closing without a value means the runner went away.
#[derive(Debug)]
pub struct CallHandle {
    pub call_id: String,
    /// Output chunks, in order. From a socket on this relay they are
    /// complete: a reader that falls behind slows the runner down, and one
    /// stalled for longer than a bound gets the call cancelled with an
    /// error result (see [`LocalRouter::deliver_output`]). Relayed over
    /// NATS they are still best effort.
    pub output: mpsc::Receiver<OutputChunk>,
    /// The final result.
    pub result: oneshot::Receiver<CallResult>,
}

/// One chunk of a streamed call's output, the bytes as the tool wrote
/// them. It arrives as a binary [`OutputFrame`] (or, from runners that
/// predate them, a JSON [`Output`]) and `data` is a slice of that frame:
/// no copy between the runner's socket and the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    pub call_id: String,
    pub stream: Stream,
    pub data: Bytes,
}

impl OutputChunk {
    /// Reads a binary output frame.
    pub fn from_frame(frame: Bytes) -> Result<OutputChunk, FrameError> {
        let header = OutputFrame::decode(&frame)?;
        let call_id = header.call_id.to_owned();
        let stream = header.stream;
        let data = frame.slice(header.data_offset..);
        Ok(OutputChunk {
            call_id,
            stream,
            data,
        })
    }

    /// The chunk as a binary output frame (to relay it to another relay).
    pub fn to_frame(&self) -> Result<Vec<u8>, FrameError> {
        OutputFrame::encode(&self.call_id, self.stream, &self.data)
    }
}

impl From<Output> for OutputChunk {
    fn from(output: Output) -> OutputChunk {
        OutputChunk {
            call_id: output.call_id,
            stream: output.stream,
            data: Bytes::from(output.data.into_bytes()),
        }
    }
}

/// Why a call could not be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No runner serves this environment.
    #[error("no runner is connected to environment {0:?}")]
    NotConnected(String),
    /// The runner's connection closed or stalled while the call was sent.
    #[error("the runner of environment {0:?} disconnected")]
    Disconnected(String),
    /// The caller's `call_id` was already used for another environment.
    #[error("call id {0:?} was already used for another environment")]
    CallIdTaken(String),
}

/// Sends work to runners, wherever their sockets live.
#[async_trait]
pub trait CallRouter: Send + Sync + std::fmt::Debug {
    /// The connected runner of an environment, if any. Shared, not copied:
    /// this is read on every call.
    async fn presence(&self, environment_id: &str) -> Option<Arc<Presence>>;
    /// Sends a call to the environment's runner.
    async fn start_call(&self, environment_id: &str, call: Call) -> Result<CallHandle, RouteError>;
    /// Tells the runner to stop a call and forgets it; its result, if it
    /// still comes, is dropped.
    async fn cancel(&self, environment_id: &str, call_id: &str);
    /// Closes the environment's runner connection with this close code and
    /// reason. Calls in flight fail at once. Returns whether one was open.
    async fn disconnect(&self, environment_id: &str, code: u16, reason: &str) -> bool;
    /// Sends a new policy, and the environment's browser tools setting
    /// (`None`: not known, from an older relay of the cluster), to the
    /// connected runner. Returns whether one was connected.
    async fn push_policy(
        &self,
        environment_id: &str,
        policy: Policy,
        install_browser_tools: Option<bool>,
    ) -> bool;
}
