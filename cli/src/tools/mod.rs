//! The tools this runner offers, their catalogue, and the dispatch of a call.
//!
//! Every tool gets a [`ToolContext`] (workspace boundary, permission file,
//! the environment's policy, the [`Toolbox`] of what this machine has) and a
//! [`CallScope`] (call id, cancellation, deadline, and where streamed output
//! goes), and answers with a [`ToolOutcome`]; it never panics or returns
//! `Err` to its caller: failures are part of the answer, so one bad call
//! cannot take the runner down.

pub mod argv;
pub mod browser;
pub mod capture;
pub mod catalogue;
pub mod cgroup;
pub mod claude;
pub mod files;
pub mod http;
pub mod mcp;
pub mod mcp_http;
pub mod no_follow;
pub mod process;
pub mod search;
pub mod shell;
#[cfg(target_os = "linux")]
pub mod spawn_in_cgroup;
pub mod workspace;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use runner_policy::PermissionSet;
use runner_proto::ws::{
    utf8_boundary, Output, OutputFrame, Policy, RunnerMessage, Stream, ToolAccess,
};
use serde_json::Value;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub use catalogue::Toolbox;
use workspace::Boundary;

/// What every tool call can see.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub boundary: Boundary,
    /// The local permission file; `None`: every command allowed (SPEC §5).
    pub permissions: Option<Arc<PermissionSet>>,
    /// The environment's policy as the relay sent it.
    pub policy: Arc<Policy>,
    /// What this machine offers (binaries found on PATH, MCP servers, the
    /// browser session).
    pub toolbox: Arc<Toolbox>,
    /// How a call's processes are kept together so that stopping the call
    /// stops them all (`run --call-cgroups`).
    pub isolation: process::Isolation,
}

/// One call's identity, limits, and output channel.
#[derive(Debug, Clone)]
pub struct CallScope {
    pub call_id: String,
    pub cancel: CancellationToken,
    /// Time left before the call's deadline.
    pub timeout: Duration,
    /// Where output chunks go while the call runs; `None` when nobody
    /// streams this call.
    pub output: Option<OutboundQueue>,
    /// The relay reads binary output frames (`welcome.binary_output`).
    pub binary_output: bool,
}

impl CallScope {
    /// A sink for one stream's chunks, when the call is streamed.
    pub fn output_sink(&self, stream: Stream) -> Option<OutputSink> {
        self.output.as_ref().map(|queue| OutputSink {
            queue: queue.clone(),
            call_id: self.call_id.clone(),
            stream,
            binary: self.binary_output,
            carry: Vec::new(),
            closed: false,
        })
    }
}

/// Sends one stream's bytes as output frames: binary [`OutputFrame`]s, the
/// bytes as read, to relays that read them; JSON [`Output`] frames to
/// older relays, where a multi-byte character cut by a read boundary is held
/// back until its end arrives so the lossy UTF-8 decoding does not garble
/// it.
#[derive(Debug)]
pub struct OutputSink {
    queue: OutboundQueue,
    call_id: String,
    stream: Stream,
    binary: bool,
    carry: Vec<u8>,
    closed: bool,
}

impl OutputSink {
    /// Sends bytes as soon as the queue has room for them.
    pub async fn send(&mut self, bytes: &[u8]) {
        let room = self.room().await;
        self.send_in(room, bytes).await;
    }

    /// Waits until the queue has room for one more frame of output. A
    /// reader that waits here can keep reading into the frame it holds.
    pub async fn room(&self) -> Room {
        if self.closed {
            return Room { _place: None };
        }
        self.queue.room().await
    }

    /// Sends bytes in the room [`OutputSink::room`] gave.
    pub async fn send_in(&mut self, room: Room, bytes: &[u8]) {
        if self.closed || bytes.is_empty() {
            return;
        }
        if self.binary {
            match OutputFrame::encode(&self.call_id, self.stream, bytes) {
                Ok(frame) => self.emit(room, Outbound::Frame(frame)).await,
                // Call ids come from the relay, at most 128 bytes: cannot
                // happen, and a chunk is not worth failing the call for.
                Err(error) => tracing::warn!(%error, "output chunk not sent"),
            }
            return;
        }
        self.carry.extend_from_slice(bytes);
        let cut = utf8_boundary(&self.carry);
        let text = String::from_utf8_lossy(&self.carry[..cut]).into_owned();
        self.carry.drain(..cut);
        self.emit_text(room, text).await;
    }

    /// Sends what is held back (at the end of the stream).
    pub async fn flush(&mut self) {
        if self.carry.is_empty() {
            return;
        }
        let room = self.room().await;
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry.clear();
        self.emit_text(room, text).await;
    }

    async fn emit_text(&mut self, room: Room, data: String) {
        if data.is_empty() {
            return;
        }
        let frame = RunnerMessage::Output(Output {
            call_id: self.call_id.clone(),
            stream: self.stream,
            data,
        });
        self.emit(room, Outbound::Message(frame)).await;
    }

    async fn emit(&mut self, room: Room, frame: Outbound) {
        if self.closed {
            return;
        }
        // The session is gone: the result will have nowhere to go either.
        if self.queue.send_output(room, frame).await.is_err() {
            self.closed = true;
        }
    }
}

/// The queue of what goes out on the runner's socket: results and other
/// messages, and the output of streamed calls. It outlives a session (a
/// call's result goes out on the next connection).
///
/// Output may hold only a few places in it ([`OutboundQueue::new`]), each
/// until it is written, so what waits for the socket stays small: 256
/// queued chunks of 256 KiB once held up to 64 MiB while a command wrote
/// faster than the relay read, cold in the cache by the time they went out
/// (bench/ROUNDS.md, "Tenth round"). A reader that waits for a place keeps
/// reading into the frame it holds, up to its 256 KiB.
#[derive(Debug, Clone)]
pub struct OutboundQueue {
    sender: mpsc::Sender<Queued>,
    output_places: Arc<Semaphore>,
}

/// An [`Outbound`] in the queue, with the [`Room`] it holds until it is
/// dropped, once written.
#[derive(Debug)]
pub struct Queued {
    pub outbound: Outbound,
    pub room: Room,
}

/// One output frame's place in the queue, given back when dropped; none
/// for a message, or for a sink whose session is gone.
#[derive(Debug)]
pub struct Room {
    _place: Option<OwnedSemaphorePermit>,
}

/// The session that read the queue is gone for good.
#[derive(Debug)]
pub struct QueueClosed;

impl OutboundQueue {
    /// A queue of at most `frames` entries, of which at most
    /// `output_frames` are output.
    pub fn new(frames: usize, output_frames: usize) -> (OutboundQueue, mpsc::Receiver<Queued>) {
        let (sender, receiver) = mpsc::channel(frames.max(1));
        let places = output_frames.clamp(1, Semaphore::MAX_PERMITS);
        let queue = OutboundQueue {
            sender,
            output_places: Arc::new(Semaphore::new(places)),
        };
        (queue, receiver)
    }

    /// Queues a message (a result, an answer).
    pub async fn send(&self, outbound: Outbound) -> Result<(), QueueClosed> {
        let queued = Queued {
            outbound,
            room: Room { _place: None },
        };
        self.sender.send(queued).await.map_err(|_| QueueClosed)
    }

    /// Queues a message unless the queue is full.
    pub fn try_send(&self, outbound: Outbound) -> Result<(), QueueClosed> {
        let queued = Queued {
            outbound,
            room: Room { _place: None },
        };
        self.sender.try_send(queued).map_err(|_| QueueClosed)
    }

    async fn room(&self) -> Room {
        // Nothing closes the semaphore: `ok()` is always `Some`.
        Room {
            _place: Arc::clone(&self.output_places).acquire_owned().await.ok(),
        }
    }

    async fn send_output(&self, room: Room, outbound: Outbound) -> Result<(), QueueClosed> {
        let queued = Queued { outbound, room };
        self.sender.send(queued).await.map_err(|_| QueueClosed)
    }
}

/// What goes out on the runner's socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// A JSON frame.
    Message(RunnerMessage),
    /// A binary [`OutputFrame`], encoded.
    Frame(Vec<u8>),
}

/// The answer of a tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutcome {
    pub result: Value,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

impl ToolOutcome {
    pub fn ok(result: Value) -> ToolOutcome {
        ToolOutcome {
            result,
            exit_code: None,
            error: None,
        }
    }

    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            result: Value::Null,
            exit_code: None,
            error: Some(message.into()),
        }
    }

    /// `Ok` → a result, `Err` → an error answer.
    pub fn from_result(result: Result<Value, String>) -> ToolOutcome {
        match result {
            Ok(value) => ToolOutcome::ok(value),
            Err(message) => ToolOutcome::error(message),
        }
    }
}

/// The catalogue of built-in tools and tool binaries on PATH now (without
/// MCP servers, which need the runner's config and a runtime).
pub fn catalogue() -> Vec<runner_proto::ws::ToolSpec> {
    Toolbox::discovered().catalogue()
}

/// Whether the environment's policy lets `tool` run (the relay checks this
/// first; the runner checks again so a compromised relay cannot widen it).
pub fn policy_allows(policy: &Policy, tool: &str) -> Result<(), String> {
    if tool == "ping" {
        return Ok(());
    }
    if let ToolAccess::List { tools } = &policy.tools {
        if !tools.iter().any(|t| t == tool) {
            return Err(format!(
                "tool {tool:?} is not allowed by the environment's policy"
            ));
        }
    }
    if policy.approval_required.iter().any(|t| t == tool) {
        return Err(format!(
            "tool {tool:?} needs a person's approval and cannot be called directly"
        ));
    }
    Ok(())
}

/// Runs one call to completion, cancellation, or its deadline.
pub async fn dispatch(
    tool: &str,
    args: Value,
    context: &ToolContext,
    scope: &CallScope,
) -> ToolOutcome {
    if let Err(reason) = policy_allows(&context.policy, tool) {
        return ToolOutcome::error(reason);
    }
    if !args.is_object() {
        return ToolOutcome::error("args must be a JSON object");
    }
    // Each tool's future is boxed on its own: a `match` of `.await`s is as
    // large as its largest arm (11.8 KiB, the shell's), and the call task
    // that holds it was copied whole on spawn and again on completion, for
    // a `ping` as for a `shell` (perf: 7 % of the runner's time per `ping`).
    let work: Pin<Box<dyn Future<Output = ToolOutcome> + Send + '_>> = match tool {
        "ping" => Box::pin(std::future::ready(ToolOutcome::ok(args))),
        "shell" => Box::pin(shell::run(args, context, scope)),
        "file_read" => Box::pin(files::read(args, context)),
        "file_write" => Box::pin(files::write(args, context)),
        "list" => Box::pin(search::list(args, context, scope)),
        "glob" => Box::pin(search::glob(args, context, scope)),
        "grep" => Box::pin(search::grep(args, context, scope)),
        "http_local" => Box::pin(http::run(args, context, scope)),
        "browser" => Box::pin(browser::run(args, context, scope)),
        "claude_code" | "claude_sessions" | "claude_status" => {
            Box::pin(claude::run(tool, args, context, scope))
        }
        name if argv::TOOLS.contains(&name) => Box::pin(argv::run(name, args, context, scope)),
        name if name.contains(mcp::SEPARATOR) => match context.toolbox.mcp() {
            Some(manager) => Box::pin(manager.call(name, args, scope)),
            None => Box::pin(std::future::ready(ToolOutcome::error(format!(
                "this runner has no tool {name:?}"
            )))),
        },
        other => Box::pin(std::future::ready(ToolOutcome::error(format!(
            "this runner has no tool {other:?}"
        )))),
    };
    // Tools that do not watch the deadline themselves are cut off here; the
    // process tools stop their process trees before this fires.
    let grace = process::KILL_GRACE + Duration::from_secs(3);
    tokio::select! {
        outcome = work => outcome,
        () = tokio::time::sleep(scope.timeout + grace) => {
            ToolOutcome::error(format!("timed out after {}s", scope.timeout.as_secs()))
        }
    }
}

/// A string argument, or an error naming it.
pub fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    match args.get(name) {
        Some(Value::String(value)) => Ok(value),
        Some(_) => Err(format!("argument {name:?} must be a string")),
        None => Err(format!("argument {name:?} is required")),
    }
}

/// An optional string argument.
pub fn optional_string_arg<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(_) => Err(format!("argument {name:?} must be a string")),
    }
}

/// An optional non-negative integer argument.
pub fn optional_u64_arg(args: &Value, name: &str) -> Result<Option<u64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("argument {name:?} must be a non-negative integer")),
    }
}

/// An optional boolean argument.
pub fn optional_bool_arg(args: &Value, name: &str) -> Result<Option<bool>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(value)) => Ok(Some(*value)),
        Some(_) => Err(format!("argument {name:?} must be true or false")),
    }
}

/// An optional array-of-strings argument.
pub fn optional_strings_arg(args: &Value, name: &str) -> Result<Option<Vec<String>>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(text.clone()),
                _ => Err(format!("argument {name:?} must be an array of strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("argument {name:?} must be an array of strings")),
    }
}

/// Checks every variable of a call's `env` argument against the permission
/// file ([`PermissionSet::check_env`]: `NAME=VALUE`, like a leading
/// assignment): the command's words are not all that decides what runs
/// (`BASH_ENV`, `BASH_FUNC_ls%%`, `LD_PRELOAD`, `GIT_CONFIG_*` …).
pub fn check_env(
    permissions: &PermissionSet,
    env: &std::collections::HashMap<String, String>,
) -> Result<(), String> {
    let mut names: Vec<&String> = env.keys().collect();
    names.sort();
    for name in names {
        let decision = permissions.check_env(name, &env[name]);
        if !decision.allowed {
            return Err(format!(
                "denied by the runner's permission file: {}",
                decision.summary()
            ));
        }
    }
    Ok(())
}

/// Takes the runner's own secrets ([`crate::env_vars::SECRETS`]) out of
/// the environment a tool's process would inherit: a command that may run
/// `env` must not learn the registration token (which lets anyone stand in
/// for this runner) or an API key the runner was started with, whatever
/// the permission file says about the credential files. Called before the
/// call's own variables are added, so a call that sets one in its `env`
/// argument still gets its value.
pub fn keep_secrets_from(command: &mut tokio::process::Command) {
    for name in crate::env_vars::SECRETS {
        command.env_remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output goes as binary frames, bytes as read, to a relay that reads
    /// them; as JSON frames with whole characters to one that does not.
    #[tokio::test]
    async fn output_sinks_frame_bytes_for_the_relay_they_talk_to() {
        let euro = "€".as_bytes();
        for binary in [true, false] {
            let (queue, mut receiver) = OutboundQueue::new(8, 8);
            let scope = CallScope {
                call_id: "c1".to_owned(),
                cancel: CancellationToken::new(),
                timeout: Duration::from_secs(1),
                output: Some(queue),
                binary_output: binary,
            };
            let mut sink = scope.output_sink(Stream::Stdout).expect("streamed");
            sink.send(&[b'a', euro[0]]).await;
            sink.send(&[euro[1], euro[2], 0xff]).await;
            sink.flush().await;
            drop((sink, scope));
            let mut frames = Vec::new();
            while let Some(queued) = receiver.recv().await {
                frames.push(queued.outbound);
            }
            if binary {
                let bytes: Vec<u8> = frames
                    .iter()
                    .flat_map(|frame| match frame {
                        Outbound::Frame(frame) => {
                            let header = OutputFrame::decode(frame).expect("an output frame");
                            assert_eq!((header.call_id, header.stream), ("c1", Stream::Stdout));
                            frame[header.data_offset..].to_vec()
                        }
                        Outbound::Message(message) => panic!("JSON frame {message:?}"),
                    })
                    .collect();
                assert_eq!(bytes, [b'a', euro[0], euro[1], euro[2], 0xff]);
            } else {
                let text: String = frames
                    .iter()
                    .map(|frame| match frame {
                        Outbound::Message(RunnerMessage::Output(output)) => output.data.clone(),
                        other => panic!("not a JSON output frame: {other:?}"),
                    })
                    .collect();
                assert_eq!(text, "a€\u{fffd}");
            }
        }
    }

    /// Output holds at most its places in the queue until written; a
    /// message still gets in.
    #[tokio::test]
    async fn output_waits_for_a_place_until_earlier_output_is_written() {
        let (queue, mut receiver) = OutboundQueue::new(8, 2);
        let scope = CallScope {
            call_id: "c1".to_owned(),
            cancel: CancellationToken::new(),
            timeout: Duration::from_secs(1),
            output: Some(queue.clone()),
            binary_output: true,
        };
        let mut sink = scope.output_sink(Stream::Stdout).expect("streamed");
        sink.send(b"one").await;
        sink.send(b"two").await;
        let third = tokio::time::timeout(Duration::from_millis(100), sink.send(b"three")).await;
        assert!(
            third.is_err(),
            "a third frame went in while two were unwritten"
        );
        queue
            .send(Outbound::Message(RunnerMessage::Unknown))
            .await
            .expect("a message is not held back by output");
        let first = receiver.recv().await.expect("the first frame");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), sink.send(b"three"))
            .await
            .expect("a place once the first frame was written");
        let mut payloads = Vec::new();
        drop((sink, scope, queue));
        while let Some(Queued { outbound, .. }) = receiver.recv().await {
            if let Outbound::Frame(frame) = outbound {
                let header = OutputFrame::decode(&frame).expect("an output frame");
                payloads.push(frame[header.data_offset..].to_vec());
            }
        }
        assert_eq!(payloads, [b"two".to_vec(), b"three".to_vec()]);
    }

    #[test]
    fn policy_lists_and_approvals_are_enforced_locally_too() {
        let policy = Policy {
            tools: ToolAccess::List {
                tools: vec!["shell".into(), "git".into()],
            },
            file_paths: vec![],
            approval_required: vec!["git".into()],
        };
        assert!(policy_allows(&policy, "shell").is_ok());
        assert!(policy_allows(&policy, "ping").is_ok());
        assert!(policy_allows(&policy, "file_write").is_err());
        assert!(policy_allows(&policy, "git").is_err());
    }

    /// Every call's task holds this future: it must not carry the largest
    /// tool's state inline (it was 11.8 KiB in a release build, copied on
    /// spawn and again on completion, for a `ping` too).
    #[tokio::test]
    async fn the_dispatch_future_is_small_whatever_the_tool() {
        let root = tempfile::tempdir().expect("tempdir");
        let context = shell::tests::context(root.path());
        let scope = CallScope {
            call_id: "c1".to_owned(),
            cancel: CancellationToken::new(),
            timeout: Duration::from_secs(5),
            output: None,
            binary_output: true,
        };
        let args = serde_json::json!({"command": "true"});
        let future = dispatch("shell", args.clone(), &context, &scope);
        // Debug builds lay futures out larger than release builds; the
        // bound holds for both, and an inline shell state breaks it in both.
        let size = std::mem::size_of_val(&future);
        assert!(size <= 2048, "dispatch future is {size} bytes");
        // It still runs the tool.
        let outcome = future.await;
        assert_eq!(outcome.exit_code, Some(0), "{:?}", outcome.error);
        let pong = dispatch("ping", args.clone(), &context, &scope).await;
        assert_eq!(pong.result, args);
    }
}
