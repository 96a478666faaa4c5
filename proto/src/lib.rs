//! Wire types shared by `runner` and `runner-relay`.
//!
//! Two families live here:
//!
//! * [`ws`]: the frames of the runner⇄relay WebSocket protocol. Frames are
//!   JSON text messages, one enum per direction, tagged by `type`. The first
//!   frame the runner sends ([`ws::RunnerMessage::Hello`]) carries
//!   [`PROTOCOL_VERSION`]; within a version every change is additive
//!   (`#[serde(default)]` fields, and an `Unknown` catch-all variant so that
//!   an older peer ignores frame types it does not know instead of failing).
//! * [`api`]: the JSON bodies of the relay's HTTP API, so the `runner` CLI and
//!   the relay agree on them without depending on each other.
//!
//! * [`sessions`], [`members`] and [`audit`]: the bodies of the session,
//!   member, team and audit routes of the same API.
//! * [`sandbox`]: sandbox hosts, their capacity and the tools the relay
//!   calls on them; [`templates`]: the templates that prepare a sandbox.
//! * [`tools`] and [`version`]: names and rules both sides must agree on
//!   (built-in tool names, the default allow-list, release version order).
//!
//! This crate holds serde types, constants and pure functions only: no
//! runtime, no I/O.
#![forbid(unsafe_code)]

pub mod api;
pub mod approvals;
pub mod audit;
pub mod fields;
pub mod members;
pub mod sandbox;
pub mod sessions;
pub mod templates;
pub mod tools;
pub mod version;
pub mod ws;

/// Version of the runner⇄relay WebSocket protocol spoken by this build.
///
/// A relay refuses a runner whose version is *newer* than its own (it cannot
/// know what the runner expects) with a close reason saying so; older runners
/// are served, since every change within a version is additive.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest WebSocket message either side accepts. A bigger frame closes the
/// connection that sent it (and only that one) with [`close::FRAME_TOO_LARGE`].
///
/// Tool output above the runner's inline limit is truncated before it is put
/// in a frame, so legitimate traffic never comes near this.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Path of the runner's WebSocket endpoint on the relay.
pub const RUNNER_CONNECT_PATH: &str = "/runner/connect";
/// Path the runner uses at `runner register` to check its token.
pub const RUNNER_REGISTER_PATH: &str = "/runner/register";

/// HTTP header carrying the runner's registration token (never the URL, so it
/// does not end up in proxy or access logs).
pub const TOKEN_HEADER: &str = "authorization";

/// WebSocket close codes the relay uses to tell a runner why it was dropped.
///
/// Codes 4000–4999 are reserved by RFC 6455 for applications. A runner treats
/// the *terminal* ones (see [`close::is_terminal`]) as "stop, do not
/// reconnect": retrying would only fight the newer runner or hammer the relay
/// with a dead token.
pub mod close {
    /// Another runner process connected with this environment's token.
    pub const REPLACED: u16 = 4001;
    /// The environment's tokens were revoked.
    pub const REVOKED: u16 = 4002;
    /// The environment was deleted.
    pub const DELETED: u16 = 4003;
    /// The runner sent a frame the relay could not decode.
    pub const BAD_FRAME: u16 = 4004;
    /// The runner sent a frame larger than [`crate::MAX_FRAME_BYTES`].
    pub const FRAME_TOO_LARGE: u16 = 4005;
    /// The runner speaks a newer protocol version than the relay.
    pub const UNSUPPORTED_VERSION: u16 = 4006;
    /// The first frame was not a `hello`, or it did not arrive in time.
    pub const HANDSHAKE: u16 = 4007;
    /// The relay is shutting down or draining; reconnect (elsewhere) at once.
    pub const GOING_AWAY: u16 = 4008;

    /// Whether a runner must stop instead of reconnecting after this code.
    pub fn is_terminal(code: u16) -> bool {
        matches!(code, REPLACED | REVOKED | DELETED | UNSUPPORTED_VERSION)
    }
}
