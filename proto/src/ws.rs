//! Frames of the runner⇄relay WebSocket protocol.
//!
//! Sequence: the runner sends [`RunnerMessage::Hello`]; the relay answers
//! [`RelayMessage::Welcome`] (or closes with a reason). Then, concurrently:
//! the runner sends a [`RunnerMessage::Heartbeat`] every
//! `heartbeat_interval_s` and the relay acknowledges it; the relay sends
//! [`RelayMessage::Call`]s, each with its own `call_id`, and may
//! [`RelayMessage::Cancel`] them; the runner streams
//! [`RunnerMessage::Output`] chunks and ends every call with exactly one
//! [`RunnerMessage::Result`]. Many calls run at once on one socket.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Frames sent by the runner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunnerMessage {
    /// First frame: who the runner is and what it offers.
    Hello(Hello),
    /// Periodic liveness report, with executor health for the degraded rule.
    Heartbeat(Heartbeat),
    /// A chunk of a call's output, sent while the call runs.
    Output(Output),
    /// The final answer to a call. Exactly one per `call_id`.
    Result(CallResult),
    /// The tool catalogue changed (a tool was installed, an MCP server added).
    Catalogue {
        /// The complete new catalogue (not a delta).
        tools: Vec<ToolSpec>,
    },
    /// A frame type from a newer peer; ignored.
    #[serde(other)]
    Unknown,
}

/// Frames sent by the relay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RelayMessage {
    /// Answer to `hello`: the environment this runner serves and its policy.
    Welcome(Welcome),
    /// Answer to a heartbeat.
    HeartbeatAck(HeartbeatAck),
    /// Run a tool.
    Call(Call),
    /// Stop a running call (timeout at the relay, or the caller went away).
    /// The runner still answers it with a `result`.
    Cancel {
        /// Which call to stop.
        call_id: String,
    },
    /// The environment's policy or settings changed; replaces the ones
    /// from `welcome`.
    Policy {
        /// The new policy.
        policy: Policy,
        /// The environment's [`Welcome::install_browser_tools`] now.
        /// `None` from relays that do not say: the runner keeps what it
        /// was told last.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        install_browser_tools: Option<bool>,
    },
    /// The relay is draining (shutdown or rolling restart): reconnect at
    /// once, without backoff, through the load-balanced URL. Calls already
    /// running keep running; their results go out on the next session.
    GoAway {
        /// Why, for logs.
        #[serde(default)]
        reason: String,
    },
    /// A frame type from a newer peer; ignored.
    #[serde(other)]
    Unknown,
}

/// Body of [`RunnerMessage::Hello`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// [`crate::PROTOCOL_VERSION`] of the runner.
    pub protocol_version: u32,
    /// The runner's semantic version (`CARGO_PKG_VERSION`).
    pub runner_version: String,
    /// Random per-process id. Lets the relay tell a runner that merely
    /// reconnected from a *different* runner process using the same token.
    pub instance_id: String,
    /// Facts about the machine.
    pub host: HostFacts,
    /// The tools this machine offers.
    pub tools: Vec<ToolSpec>,
    /// Present when this runner is a sandbox host: what it can take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_capacity: Option<crate::sandbox::Capacity>,
}

/// Facts the runner reports about its machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Hostname; fills a blank environment name.
    pub hostname: String,
    /// `std::env::consts::OS`.
    pub os: String,
    /// `std::env::consts::ARCH`.
    pub arch: String,
    /// Absolute path of the runner's workspace root. The relay resolves
    /// relative `file_read`/`file_write` paths against it (lexically) before
    /// checking them against the file-access list.
    #[serde(default)]
    pub workspace: String,
}

/// One tool in the catalogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Unique name; relayed MCP tools are `server__tool`.
    pub name: String,
    /// One line for people and agents.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the `args` object.
    #[serde(default)]
    pub input_schema: Value,
}

/// Body of [`RelayMessage::Welcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    /// [`crate::PROTOCOL_VERSION`] of the relay.
    pub protocol_version: u32,
    /// The environment this token belongs to.
    pub environment: EnvironmentInfo,
    /// The environment's policy: replaces the runner's local allow-list and
    /// file paths.
    pub policy: Policy,
    /// How often the relay expects a heartbeat.
    pub heartbeat_interval_s: u64,
    /// Id of this connection, for logs on both sides.
    pub session_id: String,
    /// Fencing epoch of this session: incremented each time a runner of the
    /// environment connects (to any relay). Every `call` carries the epoch
    /// of the session it was sent on; a runner rejects calls with an older
    /// one. 0 from relays that do not fence.
    #[serde(default)]
    pub epoch: u64,
    /// The relay reads output as binary frames ([`OutputFrame`]). Runners
    /// send binary frames only to a relay that says so, and JSON
    /// [`RunnerMessage::Output`] frames to one that does not (older relays).
    #[serde(default)]
    pub binary_output: bool,
    /// The environment's tier, which decides what an empty
    /// [`Policy::file_paths`] means (development: every path). `None` from
    /// relays that do not say: the runner then reads an empty list as "no
    /// path", which fails closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<crate::api::Tier>,
    /// The environment asks for browser tools: a runner without a browser
    /// installs Chromium where it can, then announces `browser`. False
    /// from relays that do not say.
    #[serde(default)]
    pub install_browser_tools: bool,
}

/// Identity of an environment as the runner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentInfo {
    /// Stable opaque id.
    pub id: String,
    /// Display name (may be empty until the first heartbeat fills it).
    pub name: String,
    /// Routing tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// An environment's policy as enforced by the relay and sent to the runner.
/// Its lists hold no blank entry ([`crate::fields::TOOL_NAME`],
/// [`crate::fields::FILE_PATH`]): an empty list is how a list is cleared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Policy {
    /// Which tools may be called.
    pub tools: ToolAccess,
    /// Directories under which `file_read`/`file_write` work. Empty: file
    /// tools are blocked everywhere, except on a development tier
    /// environment ([`Welcome::tier`]), where it means every path. `"*"`:
    /// every path.
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::file_paths")]
    pub file_paths: Vec<String>,
    /// Tools that need a person's approval; a direct API call to one is
    /// refused.
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::tool_names")]
    pub approval_required: Vec<String>,
}

/// Tool access: everything the runner announces, or an explicit list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ToolAccess {
    /// Every announced tool, including relayed MCP tools.
    All,
    /// Only these tools (MCP tools ticked one by one as `server__tool`).
    List {
        /// Allowed tool names.
        #[schemars(schema_with = "crate::fields::schema::tool_names")]
        tools: Vec<String>,
    },
}

/// Body of [`RunnerMessage::Heartbeat`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Calls currently executing.
    #[serde(default)]
    pub in_flight: u32,
    /// Calls accepted but waiting for an executor slot.
    #[serde(default)]
    pub backlog: u32,
    /// Result of the runner's executor health probe; `None` from runners
    /// that do not probe (the relay then falls back to counting timeouts).
    #[serde(default)]
    pub executor_healthy: Option<bool>,
    /// A sandbox host's capacity now (absent from other runners).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_capacity: Option<crate::sandbox::Capacity>,
}

/// Body of [`RelayMessage::HeartbeatAck`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatAck {
    /// The relay's clock (Unix seconds), for skew checks.
    pub server_time: i64,
    /// Newest runner version the relay knows of, when newer than the
    /// runner's own.
    #[serde(default)]
    pub latest_version: Option<String>,
}

/// Body of [`RelayMessage::Call`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// Unique per call; every later frame about it carries it.
    pub call_id: String,
    /// Tool name from the catalogue.
    pub tool: String,
    /// Tool arguments (an object).
    pub args: Value,
    /// Seconds the relay waits before cancelling. The runner stops the call
    /// by itself at this deadline too, so a lost `cancel` cannot leak work.
    pub timeout_s: u64,
    /// The session epoch ([`Welcome::epoch`]) this call was routed to; 0
    /// from relays that do not fence.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub epoch: u64,
    /// Whether somebody reads the call's output as it is produced (an API
    /// caller asked for a stream). When false the runner sends no
    /// [`RunnerMessage::Output`] chunks, only the result: 50 MB of output
    /// nobody watches should not cross the socket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// The approval a person gave this call (docs/approvals.md): a tool
    /// the policy lists under `approval_required` runs only with one. The
    /// runner trusts it as it trusts the policy: both come from the relay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Which output stream a chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Body of [`RunnerMessage::Output`], the JSON form of an output chunk
/// (sent to relays that do not read [`OutputFrame`]s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The call this chunk belongs to.
    pub call_id: String,
    /// stdout or stderr.
    pub stream: Stream,
    /// The bytes, lossily decoded as UTF-8.
    pub data: String,
}

/// An output chunk as one binary WebSocket message: the bytes exactly as
/// the tool wrote them (no UTF-8 decoding, no JSON escaping, no base64),
/// after a header of 3 + `call_id` bytes:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | [`OutputFrame::KIND`] (`0x01`; not `{`, so a binary output frame is never mistaken for JSON where both travel) |
/// | 1 | 1 | stream: `1` stdout, `2` stderr |
/// | 2 | 1 | length *n* of `call_id` (1–255) |
/// | 3 | *n* | `call_id`, UTF-8 |
/// | 3 + *n* | rest | data |
///
/// Binary messages of any other kind are ignored by the receiver, so new
/// kinds can be added within a protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputFrame<'a> {
    /// The call this chunk belongs to.
    pub call_id: &'a str,
    /// stdout or stderr.
    pub stream: Stream,
    /// Where the data starts in the frame it was decoded from.
    pub data_offset: usize,
}

/// Why a binary frame is not an output chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Another kind of binary frame (from a newer peer): ignore it.
    UnknownKind(u8),
    /// An output frame that is cut short or malformed.
    Malformed(&'static str),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::UnknownKind(kind) => write!(f, "unknown binary frame kind {kind:#04x}"),
            FrameError::Malformed(why) => write!(f, "malformed output frame: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl<'a> OutputFrame<'a> {
    /// First byte of an output frame.
    pub const KIND: u8 = 0x01;

    /// Length of the header before the data for this `call_id`.
    pub fn header_len(call_id: &str) -> usize {
        3 + call_id.len()
    }

    /// Appends the header of a chunk of `call_id` on `stream` to `out`; the
    /// data follows it. A `call_id` longer than 255 bytes cannot be framed
    /// (the relay's own ids are 36, clients' at most 128).
    pub fn write_header(
        call_id: &str,
        stream: Stream,
        out: &mut Vec<u8>,
    ) -> Result<(), FrameError> {
        let length = u8::try_from(call_id.len())
            .ok()
            .filter(|length| *length > 0)
            .ok_or(FrameError::Malformed("call_id must be 1 to 255 bytes"))?;
        out.reserve(Self::header_len(call_id));
        out.push(Self::KIND);
        out.push(match stream {
            Stream::Stdout => 1,
            Stream::Stderr => 2,
        });
        out.push(length);
        out.extend_from_slice(call_id.as_bytes());
        Ok(())
    }

    /// A whole frame: header then `data`.
    pub fn encode(call_id: &str, stream: Stream, data: &[u8]) -> Result<Vec<u8>, FrameError> {
        let mut frame = Vec::with_capacity(Self::header_len(call_id) + data.len());
        Self::write_header(call_id, stream, &mut frame)?;
        frame.extend_from_slice(data);
        Ok(frame)
    }

    /// Reads the header of `frame`; the data is `&frame[data_offset..]`.
    pub fn decode(frame: &'a [u8]) -> Result<OutputFrame<'a>, FrameError> {
        let (&kind, rest) = frame.split_first().ok_or(FrameError::Malformed("empty"))?;
        if kind != Self::KIND {
            return Err(FrameError::UnknownKind(kind));
        }
        let [stream, length, rest @ ..] = rest else {
            return Err(FrameError::Malformed("header cut short"));
        };
        let stream = match stream {
            1 => Stream::Stdout,
            2 => Stream::Stderr,
            _ => return Err(FrameError::Malformed("unknown stream")),
        };
        let length = usize::from(*length);
        if length == 0 || rest.len() < length {
            return Err(FrameError::Malformed("call_id cut short"));
        }
        let call_id = std::str::from_utf8(&rest[..length])
            .map_err(|_| FrameError::Malformed("call_id is not UTF-8"))?;
        Ok(OutputFrame {
            call_id,
            stream,
            data_offset: 3 + length,
        })
    }
}

/// Body of [`RunnerMessage::Result`]; also the body the API returns for
/// `invoke-tool` (minus `call_id`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallResult {
    /// The call this answers.
    pub call_id: String,
    /// Tool-specific result (for `shell`: `{"stdout","stderr"}`).
    #[serde(default)]
    pub result: Value,
    /// Process exit code where the tool ran a process.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Why the call failed, when it did.
    #[serde(default)]
    pub error: Option<String>,
    /// What kind of failure `error` is, when a caller should tell it apart:
    /// [`DENIED_BY_RUNNER_POLICY`]. Absent from runners that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

/// [`CallResult::error_code`] of a call the runner's permission file (or
/// its workspace boundary) refused: the relay answers 403 with this code
/// and `runner invoke` exits 66, as for the relay's own policy refusals.
pub const DENIED_BY_RUNNER_POLICY: &str = "denied_by_runner_policy";

/// [`CallResult::error_code`] of a call stopped at its deadline: the
/// call's `timeout_s`, or a shorter one the tool was given (the shell
/// tool's `timeout_s`). The same code as the relay's 504: the relay passes
/// the result on with it (output so far included) and `runner invoke`
/// exits 75 either way.
pub const TIMED_OUT: &str = "timeout";

/// Where to cut a byte stream so that the part before the cut does not end
/// inside a UTF-8 sequence: the length of that part. For [`Output`]'s
/// lossily decoded `data` (JSON frames, Server-Sent Events), so a character
/// split across two reads is decoded whole rather than as two U+FFFD.
pub fn utf8_boundary(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match byte {
            0xF8.. => 1, // never valid in UTF-8: nothing to wait for
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn utf8_sequences_cut_by_a_read_are_held_back() {
        let euro = "€".as_bytes(); // 3 bytes
        assert_eq!(utf8_boundary(b"abc"), 3);
        assert_eq!(utf8_boundary(&euro[..1]), 0);
        assert_eq!(utf8_boundary(&[b'a', euro[0], euro[1]]), 1);
        assert_eq!(utf8_boundary(euro), 3);
        assert_eq!(utf8_boundary(&[0xff]), 1);
        assert_eq!(utf8_boundary(&[0x80, 0x80, 0x80, 0x80]), 4);
        assert_eq!(utf8_boundary(b""), 0);
    }

    #[test]
    fn output_frames_round_trip_any_bytes() {
        let data = [0u8, 0xff, b'{', 0xc3, 0x28, b'\n'];
        let frame = OutputFrame::encode("call-1", Stream::Stderr, &data).expect("framed");
        assert_eq!(&frame[..9], b"\x01\x02\x06call-1");
        let decoded = OutputFrame::decode(&frame).expect("decoded");
        assert_eq!(decoded.call_id, "call-1");
        assert_eq!(decoded.stream, Stream::Stderr);
        assert_eq!(&frame[decoded.data_offset..], &data);
        // An empty chunk is still a frame.
        let empty = OutputFrame::encode("c", Stream::Stdout, &[]).expect("framed");
        assert_eq!(OutputFrame::decode(&empty).map(|f| f.data_offset), Ok(4));
    }

    #[test]
    fn bad_output_frames_are_errors_not_panics() {
        assert_eq!(
            OutputFrame::decode(b""),
            Err(FrameError::Malformed("empty"))
        );
        assert_eq!(
            OutputFrame::decode(b"{\"type\""),
            Err(FrameError::UnknownKind(b'{'))
        );
        assert!(OutputFrame::decode(b"\x01\x01").is_err());
        assert!(OutputFrame::decode(b"\x01\x03\x01c").is_err(), "stream 3");
        assert!(
            OutputFrame::decode(b"\x01\x01\x05abc").is_err(),
            "call_id cut short"
        );
        assert!(
            OutputFrame::decode(b"\x01\x01\x00data").is_err(),
            "empty call_id"
        );
        assert!(
            OutputFrame::decode(b"\x01\x01\x02\xff\xfe").is_err(),
            "call_id not UTF-8"
        );
        assert!(OutputFrame::encode("", Stream::Stdout, b"x").is_err());
        assert!(OutputFrame::encode(&"x".repeat(256), Stream::Stdout, b"x").is_err());
    }

    proptest::proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            if let Ok(frame) = OutputFrame::decode(&bytes) {
                proptest::prop_assert!(frame.data_offset <= bytes.len());
            }
        }
    }

    #[test]
    fn unknown_frame_types_decode_to_unknown() {
        let frame = r#"{"type":"telemetry_v9","payload":[1,2,3]}"#;
        assert_eq!(
            serde_json::from_str::<RunnerMessage>(frame).ok(),
            Some(RunnerMessage::Unknown)
        );
        assert_eq!(
            serde_json::from_str::<RelayMessage>(frame).ok(),
            Some(RelayMessage::Unknown)
        );
    }

    #[test]
    fn golden_call_frame() {
        let call = RelayMessage::Call(Call {
            call_id: "c1".into(),
            tool: "shell".into(),
            args: json!({"command": "echo hi"}),
            timeout_s: 30,
            epoch: 0,
            stream: false,
            approval_id: None,
        });
        assert_eq!(
            serde_json::to_value(&call).ok(),
            Some(
                json!({"type":"call","call_id":"c1","tool":"shell","args":{"command":"echo hi"},"timeout_s":30})
            )
        );
    }

    #[test]
    fn golden_go_away_and_epochs() {
        let go_away = RelayMessage::GoAway {
            reason: "draining".into(),
        };
        assert_eq!(
            serde_json::to_value(&go_away).ok(),
            Some(json!({"type":"go_away","reason":"draining"}))
        );
        let fenced: Call = serde_json::from_value(
            json!({"call_id":"c1","tool":"ping","args":{},"timeout_s":5,"epoch":7}),
        )
        .expect("call with epoch decodes");
        assert_eq!(fenced.epoch, 7);
        let welcome: Welcome = serde_json::from_value(json!({
            "protocol_version": 1,
            "environment": {"id": "env_1", "name": "x"},
            "policy": {"tools": {"mode": "all"}},
            "heartbeat_interval_s": 15,
            "session_id": "s"
        }))
        .expect("welcome from a relay that does not fence decodes");
        assert_eq!(welcome.epoch, 0);
        assert_eq!(welcome.tier, None, "a relay that does not say");
        let development: Welcome = serde_json::from_value(json!({
            "protocol_version": 1,
            "environment": {"id": "env_1", "name": "x"},
            "policy": {"tools": {"mode": "all"}},
            "heartbeat_interval_s": 15,
            "session_id": "s",
            "tier": "development"
        }))
        .expect("welcome with a tier decodes");
        assert_eq!(development.tier, Some(crate::api::Tier::Development));
        assert!(
            !development.install_browser_tools,
            "a relay that does not say"
        );
    }

    #[test]
    fn golden_policy_frame_with_and_without_the_browser_flag() {
        let policy = Policy {
            tools: ToolAccess::All,
            file_paths: vec![],
            approval_required: vec![],
        };
        let pushed = RelayMessage::Policy {
            policy: policy.clone(),
            install_browser_tools: Some(true),
        };
        assert_eq!(
            serde_json::to_value(&pushed).ok(),
            Some(json!({
                "type": "policy",
                "policy": {"tools": {"mode": "all"}, "file_paths": [], "approval_required": []},
                "install_browser_tools": true
            }))
        );
        let from_an_older_relay: RelayMessage =
            serde_json::from_value(json!({"type": "policy", "policy": {"tools": {"mode": "all"}}}))
                .expect("a policy frame without the flag decodes");
        assert_eq!(
            from_an_older_relay,
            RelayMessage::Policy {
                policy: policy.clone(),
                install_browser_tools: None
            }
        );
        // A runner built before the flag reads the frame as it always did.
        #[derive(Debug, PartialEq, Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum OlderRelayMessage {
            Policy {
                policy: Policy,
            },
            #[serde(other)]
            Unknown,
        }
        let text = serde_json::to_string(&pushed).expect("serialises");
        assert_eq!(
            serde_json::from_str::<OlderRelayMessage>(&text).ok(),
            Some(OlderRelayMessage::Policy { policy })
        );
    }

    #[test]
    fn golden_policy_shapes() {
        let all = Policy {
            tools: ToolAccess::All,
            file_paths: vec!["*".into()],
            approval_required: vec![],
        };
        assert_eq!(
            serde_json::to_value(&all).ok(),
            Some(json!({"tools":{"mode":"all"},"file_paths":["*"],"approval_required":[]}))
        );
        let list: Policy = serde_json::from_value(json!({"tools":{"mode":"list","tools":["git"]}}))
            .expect("minimal policy decodes");
        assert_eq!(
            list.tools,
            ToolAccess::List {
                tools: vec!["git".into()]
            }
        );
        assert!(list.file_paths.is_empty());
    }

    #[test]
    fn added_fields_are_ignored_by_older_peers() {
        let frame = r#"{"type":"heartbeat","in_flight":1,"backlog":0,"gpu_temp":71}"#;
        let decoded: RunnerMessage = serde_json::from_str(frame).expect("decodes");
        assert_eq!(
            decoded,
            RunnerMessage::Heartbeat(Heartbeat {
                in_flight: 1,
                backlog: 0,
                executor_healthy: None,
                sandbox_capacity: None,
            })
        );
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        for frame in [
            "",
            "{",
            "null",
            "[]",
            r#"{"type":5}"#,
            r#"{"type":"result"}"#,
        ] {
            assert!(
                serde_json::from_str::<RunnerMessage>(frame).is_err(),
                "{frame:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn output_frames_round_trip(call_id in ".*", data in ".*", stderr in proptest::bool::ANY) {
            let frame = RunnerMessage::Output(Output {
                call_id,
                stream: if stderr { Stream::Stderr } else { Stream::Stdout },
                data,
            });
            let text = serde_json::to_string(&frame).expect("serialises");
            let back: RunnerMessage = serde_json::from_str(&text).expect("decodes");
            proptest::prop_assert_eq!(back, frame);
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".*") {
            let _ = serde_json::from_str::<RunnerMessage>(&text);
            let _ = serde_json::from_str::<RelayMessage>(&text);
        }
    }
}
