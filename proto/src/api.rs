//! JSON bodies of the relay's HTTP API (SPEC §7).
//!
//! Field names are the contract with API callers; every field a newer relay
//! adds is `#[serde(default)]` on the reading side.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::ws::{Policy, ToolAccess, ToolSpec};

/// Header carrying the API version the relay speaks.
pub const API_VERSION_HEADER: &str = "x-runner-api-version";
/// The API version of this build.
pub const API_VERSION: &str = "1";
/// Largest request body the relay's API accepts (tool arguments included).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// An execution environment (SPEC §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Opaque stable id (`env_…`).
    pub id: String,
    /// Unique per account, ≤128 chars; empty until the first runner fills it.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// A label only (Local, Container, Docker, AKS, AWS, Windows Native, Linux Native).
    #[serde(rename = "type", default = "default_type")]
    pub env_type: String,
    /// Routing tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// `shared` or `team:<name>`; fixed at creation.
    pub scope: String,
    /// `production` or `development`.
    pub tier: Tier,
    /// Whether the runner should install browser tools.
    #[serde(default)]
    pub install_browser_tools: bool,
    /// The relay-side policy (SPEC §4).
    pub policy: Policy,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339 time of the last heartbeat, if any.
    #[serde(default)]
    pub last_seen: Option<String>,
    /// Live status (in lists and single reads; SPEC §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

fn default_type() -> String {
    "Local".to_owned()
}

/// Environment tier: decides the defaults of a new environment's policy.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Default allow-list, no file paths.
    #[default]
    Production,
    /// Every announced tool and every path until a list is set.
    Development,
}

/// `POST /execution-environments`. Field rules: [`crate::fields`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEnvironment {
    /// May be left blank: the first runner fills it with its hostname.
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::environment_name_at_creation")]
    pub name: String,
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::description")]
    pub description: String,
    /// A label (default `Local`).
    #[serde(rename = "type", default)]
    #[schemars(schema_with = "crate::fields::schema::environment_type")]
    pub env_type: Option<String>,
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::tags")]
    pub tags: Vec<String>,
    /// `shared` (default) or `team:<name>`.
    #[serde(default)]
    #[schemars(schema_with = "crate::fields::schema::scope")]
    pub scope: Option<String>,
    #[serde(default)]
    pub tier: Tier,
    #[serde(default)]
    pub install_browser_tools: bool,
    /// Overrides the tier's default policy.
    #[serde(default)]
    pub policy: Option<Policy>,
}

/// `PATCH /execution-environments/{id}`: every field optional (absent or
/// `null`: unchanged); `scope` is refused (fixed at creation). Field rules:
/// [`crate::fields`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEnvironment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::environment_name")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_description")]
    pub description: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::environment_type")]
    pub env_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::fields::schema::nullable_tags")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_browser_tools: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Present only so that a PATCH naming it gets a clear 400; the
    /// document leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub scope: Option<String>,
}

/// `GET /execution-environments`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentList {
    pub environments: Vec<Environment>,
}

/// Live status of an environment's runner (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Never connected.
    Pending,
    /// Connected, heartbeat healthy.
    Online,
    /// Connected, but the executor can't keep up.
    Degraded,
    /// Connected before, no heartbeat for about 90 s.
    Offline,
}

impl Status {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Online => "online",
            Status::Degraded => "degraded",
            Status::Offline => "offline",
        }
    }
}

/// The runner currently (or last) connected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerInfo {
    pub version: String,
    pub hostname: String,
    pub os: String,
    pub arch: String,
}

/// A token's public facts: never the token or its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenHint {
    /// The recognisable prefix and the last 4 characters, e.g. `rnrt_…9f3a`.
    pub hint: String,
    pub created_at: String,
    #[serde(default)]
    pub last_used_at: Option<String>,
}

/// Which token the connected runner authenticated with: after a rotation
/// it keeps the previous one until it registers again or the grace period
/// ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerToken {
    /// The token's hint, e.g. `rnrt_…9f3a`.
    pub hint: String,
    /// Whether it is the environment's current token (false: a previous
    /// one, still in its grace period).
    pub current: bool,
    /// When a previous token stops working (and the runner with it).
    #[serde(default)]
    pub valid_until: Option<String>,
}

/// `GET /execution-environments/{id}/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentStatus {
    pub id: String,
    pub name: String,
    pub status: Status,
    /// Why the status is what it is, for people (e.g. the degraded reason).
    #[serde(default)]
    pub reason: Option<String>,
    pub connected: bool,
    #[serde(default)]
    pub last_seen: Option<String>,
    #[serde(default)]
    pub runner: Option<RunnerInfo>,
    #[serde(default)]
    pub token: Option<TokenHint>,
    /// The token the connected runner uses (absent when none is connected).
    #[serde(default)]
    pub runner_token: Option<RunnerToken>,
}

/// `POST /execution-environments/{id}/generate-token`: the only answer that
/// ever contains a token's plaintext.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedToken {
    pub token: String,
    pub environment_id: String,
    pub hint: String,
    /// When the previous token stops working, if there was one.
    #[serde(default)]
    pub previous_valid_until: Option<String>,
}

/// `GET /execution-environments/{id}/token-status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenStatus {
    pub environment_id: String,
    pub has_token: bool,
    #[serde(default)]
    pub hint: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub age_days: Option<i64>,
    #[serde(default)]
    pub last_used_at: Option<String>,
    #[serde(default)]
    pub days_until_expiry: Option<i64>,
    pub runner_connected: bool,
    /// The token the connected runner uses (absent when none is connected).
    #[serde(default)]
    pub runner_token: Option<RunnerToken>,
}

/// `GET /execution-environments/{id}/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolList {
    pub environment_id: String,
    pub runner_connected: bool,
    /// The announced catalogue filtered by the allow-list.
    pub tools: Vec<ToolSpec>,
}

/// `POST /execution-environments/{id}/invoke-tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvokeRequest {
    pub tool_name: String,
    #[serde(default = "empty_object")]
    pub args: Value,
    /// 1–3600, default [`DEFAULT_TIMEOUT_S`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// Idempotency key chosen by the caller (1–128 of `A-Z a-z 0-9 . _ : -`).
    /// A call with a `call_id` already seen is not run again: its answer is
    /// the first call's result (waiting for it if it is still running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// For a tool that needs a person's approval: refuse (default) or ask
    /// for one (docs/approvals.md).
    #[serde(default, skip_serializing_if = "is_refuse")]
    pub on_approval: crate::approvals::OnApproval,
    /// With `on_approval: wait`: seconds (1–300) to hold the request for
    /// the decision and the call's end before answering 202.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_wait_s: Option<u64>,
}

fn is_refuse(on_approval: &crate::approvals::OnApproval) -> bool {
    *on_approval == crate::approvals::OnApproval::Refuse
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Default `timeout_s` of an invoke.
pub const DEFAULT_TIMEOUT_S: u64 = 300;
/// Largest accepted `timeout_s`.
pub const MAX_TIMEOUT_S: u64 = 3600;

/// `Accept` this on `invoke-tool` to get a streamed call as one binary
/// body: the output exactly as the tool wrote it (no UTF-8 decoding, no
/// JSON), then the result. The body is a sequence of frames, each an
/// 8-byte header (kind, three zero bytes, payload length as a big-endian
/// `u32`: the layout of Docker's multiplexed attach stream) and its
/// payload. Kinds are [`stream_frame`]'s constants; the last frame is
/// always a result or an error; an empty keep-alive frame comes after 15 s
/// of silence. A reader skips kinds it does not know.
pub const STREAM_MEDIA_TYPE: &str = "application/vnd.runner.stream";

/// Frames of a [`STREAM_MEDIA_TYPE`] body.
pub mod stream_frame {
    /// Empty; sent after 15 s without another frame so that proxies keep a
    /// quiet call's connection open. Skip it.
    pub const KEEP_ALIVE: u8 = 0;
    /// Bytes the tool wrote to standard output.
    pub const STDOUT: u8 = 1;
    /// Bytes the tool wrote to standard error.
    pub const STDERR: u8 = 2;
    /// The call's [`super::InvokeResponse`] as JSON. Last frame.
    pub const RESULT: u8 = 3;
    /// An [`super::ErrorBody`] as JSON (timeout, runner gone). Last frame.
    pub const ERROR: u8 = 4;
    /// Length of a frame header.
    pub const HEADER_LEN: usize = 8;

    /// The header of a frame of `kind` with a payload of `len` bytes.
    pub fn header(kind: u8, len: u32) -> [u8; HEADER_LEN] {
        let [a, b, c, d] = len.to_be_bytes();
        [kind, 0, 0, 0, a, b, c, d]
    }

    /// `(kind, payload length)` of a header.
    pub fn parse_header(header: &[u8; HEADER_LEN]) -> (u8, u32) {
        let [kind, _, _, _, a, b, c, d] = *header;
        (kind, u32::from_be_bytes([a, b, c, d]))
    }

    /// Reads a body whatever its HTTP chunking: output payloads are handed
    /// on as their bytes arrive (never held whole, never copied), a result
    /// or error frame is collected and returned when whole.
    #[derive(Debug)]
    pub struct Reader {
        header: [u8; HEADER_LEN],
        /// Header bytes of the next frame received so far.
        have: usize,
        kind: u8,
        /// Payload bytes of the current frame still to come.
        remaining: usize,
        control: Vec<u8>,
        max_control: usize,
    }

    /// Why [`Reader::push`] stopped.
    #[derive(Debug)]
    pub enum ReadError<E> {
        /// A result or error frame announced more bytes than the reader
        /// holds.
        ControlTooLarge { len: usize, limit: usize },
        /// The output callback failed.
        Output(E),
    }

    impl<E: std::fmt::Display> std::fmt::Display for ReadError<E> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                ReadError::ControlTooLarge { len, limit } => {
                    write!(f, "a {len}-byte result frame (limit {limit})")
                }
                ReadError::Output(error) => error.fmt(f),
            }
        }
    }

    impl<E: std::error::Error> std::error::Error for ReadError<E> {}

    impl Reader {
        /// A reader that refuses result and error frames over
        /// `max_control` bytes (output frames are never held, so their
        /// size does not matter).
        pub fn new(max_control: usize) -> Reader {
            Reader {
                header: [0; HEADER_LEN],
                have: 0,
                kind: 0,
                remaining: 0,
                control: Vec::new(),
                max_control,
            }
        }

        /// Feeds `bytes`; output payload pieces go to `output(kind, piece)`
        /// (unknown kinds too: skip what you do not know; an empty frame,
        /// such as a keep-alive, as one empty piece).
        /// Returns the first result or error frame completed, which ends
        /// the body; bytes after it are not read.
        pub fn push<E>(
            &mut self,
            mut bytes: &[u8],
            mut output: impl FnMut(u8, &[u8]) -> Result<(), E>,
        ) -> Result<Option<(u8, Vec<u8>)>, ReadError<E>> {
            while !bytes.is_empty() {
                if self.remaining == 0 {
                    let take = (HEADER_LEN - self.have).min(bytes.len());
                    self.header[self.have..self.have + take].copy_from_slice(&bytes[..take]);
                    self.have += take;
                    bytes = &bytes[take..];
                    if self.have < HEADER_LEN {
                        continue;
                    }
                    self.have = 0;
                    let (kind, len) = parse_header(&self.header);
                    self.kind = kind;
                    self.remaining = usize::try_from(len).unwrap_or(usize::MAX);
                    if self.is_control() && self.remaining > self.max_control {
                        return Err(ReadError::ControlTooLarge {
                            len: self.remaining,
                            limit: self.max_control,
                        });
                    }
                    if self.remaining == 0 {
                        if self.is_control() {
                            return Ok(Some((kind, Vec::new())));
                        }
                        output(kind, &[]).map_err(ReadError::Output)?;
                    }
                    continue;
                }
                let take = self.remaining.min(bytes.len());
                let (piece, rest) = bytes.split_at(take);
                bytes = rest;
                self.remaining -= take;
                if self.is_control() {
                    self.control.extend_from_slice(piece);
                    if self.remaining == 0 {
                        return Ok(Some((self.kind, std::mem::take(&mut self.control))));
                    }
                } else {
                    output(self.kind, piece).map_err(ReadError::Output)?;
                }
            }
            Ok(None)
        }

        /// Whether the bytes so far end exactly at a frame boundary (a body
        /// that ends elsewhere was cut).
        pub fn at_boundary(&self) -> bool {
            self.have == 0 && self.remaining == 0
        }

        fn is_control(&self) -> bool {
            matches!(self.kind, RESULT | ERROR)
        }
    }
}

/// Answer of `invoke-tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvokeResponse {
    pub call_id: String,
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub error: Option<String>,
    /// What kind of failure `error` is, when a caller should tell it apart:
    /// `timeout` ([`crate::ws::TIMED_OUT`]) for a call the runner stopped
    /// at its deadline (the tool's own `timeout_s`, or the call's when the
    /// runner got there first), the same code as the relay's 504.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Something the caller should know about where the call ran (a
    /// session's degraded environment); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// Where a call is in its journal (`GET /invocations/{call_id}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvocationState {
    /// Accepted by a relay, not yet written to a runner's socket.
    Pending,
    /// Written to the runner's session with this `epoch`; no result yet.
    Dispatched,
    /// The runner's session ended before it answered (`error_code` says
    /// why: [`RUNNER_DISCONNECTED`]; `finished_at` says when). Not quite
    /// final: a runner that outlived the drop and reports the call's result
    /// on its next session moves the entry on to `done`.
    Failed,
    /// The runner answered; `result`, `exit_code` and `error` are set.
    Done,
}

/// [`Invocation::error_code`] (and the API error code) of a call whose
/// runner's session ended before it answered (SPEC §6: calls in flight
/// when a runner drops fail).
pub const RUNNER_DISCONNECTED: &str = "runner_disconnected";

/// `GET /invocations/{call_id}`: a call's journal entry, so that a result
/// that arrived after the caller stopped waiting (timeout, a relay that
/// died) can still be fetched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    pub call_id: String,
    pub environment_id: String,
    pub tool_name: String,
    pub state: InvocationState,
    /// Session epoch the call was dispatched to.
    #[serde(default)]
    pub epoch: Option<u64>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, once done.
    #[serde(default)]
    pub finished_at: Option<String>,
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub error: Option<String>,
    /// What kind of failure `error` is, when a caller should tell it apart
    /// ([`RUNNER_DISCONNECTED`], `denied_by_runner_policy`): the code a
    /// repeated `call_id` answers with, as the first call did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

/// `POST /runner/register` answer: the token is valid for this environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterResponse {
    pub environment: crate::ws::EnvironmentInfo,
    /// The runner connected to the environment now, if any: a runner
    /// started with this token replaces it.
    #[serde(default)]
    pub connected_runner: Option<ConnectedRunner>,
}

/// A runner connected to an environment, as `register` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectedRunner {
    pub hostname: String,
    /// RFC 3339.
    pub connected_since: String,
}

/// Every error answer: `{"error":{"code","message"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// Inside [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `not_found`, `tool_not_allowed`.
    pub code: String,
    /// One sentence for people.
    pub message: String,
    /// The call id, for errors about a call (504 names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// `POST /execution-environments/{id}/revoke-token` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevokedTokens {
    pub environment_id: String,
    /// How many tokens stopped working.
    #[serde(default)]
    pub revoked_tokens: u64,
    /// Whether a connected runner was disconnected.
    #[serde(default)]
    pub runner_disconnected: bool,
}

#[cfg(test)]
mod tests {
    use super::stream_frame::{self, ReadError, Reader};

    #[test]
    fn stream_frames_split_across_chunks_and_oversized_ones_fail() {
        let mut body = Vec::new();
        body.extend_from_slice(&stream_frame::header(stream_frame::STDOUT, 3));
        body.extend_from_slice(&[0, 0xff, b'\n']);
        body.extend_from_slice(&stream_frame::header(9, 2)); // unknown kind
        body.extend_from_slice(b"??");
        body.extend_from_slice(&stream_frame::header(stream_frame::KEEP_ALIVE, 0));
        body.extend_from_slice(&stream_frame::header(stream_frame::STDERR, 1));
        body.extend_from_slice(b"e");
        body.extend_from_slice(&stream_frame::header(stream_frame::RESULT, 2));
        body.extend_from_slice(b"{}");
        // Every split point: one byte at a time, and all at once.
        for step in [1, body.len()] {
            let mut reader = Reader::new(1024);
            let mut output: Vec<(u8, Vec<u8>)> = Vec::new();
            let mut control = None;
            for piece in body.chunks(step) {
                let done = reader
                    .push(piece, |kind, bytes| {
                        output.push((kind, bytes.to_vec()));
                        Ok::<(), std::convert::Infallible>(())
                    })
                    .expect("valid");
                if done.is_some() {
                    control = done;
                }
            }
            let joined = |wanted: u8| -> Vec<u8> {
                output
                    .iter()
                    .filter(|(kind, _)| *kind == wanted)
                    .flat_map(|(_, bytes)| bytes.clone())
                    .collect()
            };
            assert_eq!(
                joined(stream_frame::STDOUT),
                vec![0, 0xff, b'\n'],
                "step {step}"
            );
            assert_eq!(joined(stream_frame::STDERR), b"e".to_vec());
            assert!(
                output.contains(&(stream_frame::KEEP_ALIVE, Vec::new())),
                "the keep-alive is seen: {output:?}"
            );
            assert_eq!(control, Some((stream_frame::RESULT, b"{}".to_vec())));
            assert!(reader.at_boundary());
        }
        let mut reader = Reader::new(1024);
        let header = stream_frame::header(stream_frame::RESULT, u32::MAX);
        let refused = reader.push(&header, |_, _| Ok::<(), std::convert::Infallible>(()));
        assert!(
            matches!(refused, Err(ReadError::ControlTooLarge { limit: 1024, .. })),
            "{refused:?}"
        );
        // A body cut inside a header, or inside a payload.
        let mut reader = Reader::new(1024);
        let cut = &body[..5];
        let _ = reader.push(cut, |_, _| Ok::<(), std::convert::Infallible>(()));
        assert!(!reader.at_boundary());
        let mut reader = Reader::new(1024);
        let _ = reader.push(&body[..10], |_, _| Ok::<(), std::convert::Infallible>(()));
        assert!(!reader.at_boundary());
    }

    #[test]
    fn an_output_callback_error_stops_the_reader() {
        let mut body = stream_frame::header(stream_frame::STDOUT, 1).to_vec();
        body.push(b'x');
        let mut reader = Reader::new(1024);
        let failed = reader.push(&body, |_, _| Err("disk full"));
        assert!(
            matches!(failed, Err(ReadError::Output("disk full"))),
            "{failed:?}"
        );
    }
}
