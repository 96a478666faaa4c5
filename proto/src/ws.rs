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
    /// The environment's policy changed; replaces the one from `welcome`.
    Policy {
        /// The new policy.
        policy: Policy,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Which tools may be called.
    pub tools: ToolAccess,
    /// Directories under which `file_read`/`file_write` work. Empty: file
    /// tools are blocked everywhere. `"*"`: every path.
    #[serde(default)]
    pub file_paths: Vec<String>,
    /// Tools that need a person's approval; a direct API call to one is
    /// refused.
    #[serde(default)]
    pub approval_required: Vec<String>,
}

/// Tool access: everything the runner announces, or an explicit list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ToolAccess {
    /// Every announced tool, including relayed MCP tools.
    All,
    /// Only these tools (MCP tools ticked one by one as `server__tool`).
    List {
        /// Allowed tool names.
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

/// Body of [`RunnerMessage::Output`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The call this chunk belongs to.
    pub call_id: String,
    /// stdout or stderr.
    pub stream: Stream,
    /// The bytes, lossily decoded as UTF-8.
    pub data: String,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                executor_healthy: None
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
