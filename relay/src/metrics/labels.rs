//! The label values of the relay's metrics: closed sets of words, so no
//! label can carry an id, a token or anything else a caller chose.

use std::fmt::Write as _;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// Writes a fixed word as a label value.
macro_rules! word_label {
    ($type:ty) => {
        impl EncodeLabelValue for $type {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
                encoder.write_str(self.as_str())
            }
        }
    };
}

/// How a tool call ended, as the relay saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The runner returned a result without an error.
    Ok,
    /// The runner returned a result with an error (the tool failed, or the
    /// runner's permission file refused it).
    Error,
    /// Refused by the environment's policy (tool or path not allowed).
    Denied,
    /// The tool needs an approval.
    Approval,
    /// No result within the call's timeout.
    Timeout,
    /// The runner went away before the result.
    Disconnected,
    /// Refused before relaying for another reason: the runner does not
    /// offer the tool, invalid arguments, a taken call id.
    Rejected,
    /// No runner connected.
    Unavailable,
    /// The caller went away before the result (streamed calls).
    Cancelled,
}

impl Outcome {
    /// Every outcome, in the order of [`Outcome::index`].
    pub const ALL: [Outcome; 9] = [
        Outcome::Ok,
        Outcome::Error,
        Outcome::Denied,
        Outcome::Approval,
        Outcome::Timeout,
        Outcome::Disconnected,
        Outcome::Rejected,
        Outcome::Unavailable,
        Outcome::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Approval => "approval",
            Outcome::Timeout => "timeout",
            Outcome::Disconnected => "disconnected",
            Outcome::Rejected => "rejected",
            Outcome::Unavailable => "unavailable",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// Position in [`Outcome::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The outcome of a call the relay answered with an error of this code
    /// (the `code` of [`crate::http::error::ApiError`]).
    pub fn of_error_code(code: &str) -> Outcome {
        match code {
            "tool_not_allowed" | "path_not_allowed" | "denied_by_runner_policy" => Outcome::Denied,
            "approval_required" => Outcome::Approval,
            "timeout" => Outcome::Timeout,
            "runner_disconnected" => Outcome::Disconnected,
            "runner_not_connected" => Outcome::Unavailable,
            _ => Outcome::Rejected,
        }
    }
}
word_label!(Outcome);

/// Why an API request or a runner connect failed to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthFailure {
    /// No `Authorization: Bearer` credential.
    MissingCredential,
    /// Not shaped like an API key.
    MalformedApiKey,
    /// An API key no member holds.
    InvalidApiKey,
    /// A registration token that is unknown, or whose environment is gone.
    InvalidRunnerToken,
    /// A registration token that expired or was replaced.
    ExpiredRunnerToken,
    /// A wrong scrape token on `GET /metrics`.
    InvalidMetricsToken,
}

impl AuthFailure {
    pub const ALL: [AuthFailure; 6] = [
        AuthFailure::MissingCredential,
        AuthFailure::MalformedApiKey,
        AuthFailure::InvalidApiKey,
        AuthFailure::InvalidRunnerToken,
        AuthFailure::ExpiredRunnerToken,
        AuthFailure::InvalidMetricsToken,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AuthFailure::MissingCredential => "missing_credential",
            AuthFailure::MalformedApiKey => "malformed_api_key",
            AuthFailure::InvalidApiKey => "invalid_api_key",
            AuthFailure::InvalidRunnerToken => "invalid_runner_token",
            AuthFailure::ExpiredRunnerToken => "expired_runner_token",
            AuthFailure::InvalidMetricsToken => "invalid_metrics_token",
        }
    }
}
word_label!(AuthFailure);

/// How an approval was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApprovalDecision {
    Approved,
    Denied,
    /// Nobody decided before it expired (counts as denied for the call).
    Expired,
}

impl ApprovalDecision {
    pub const ALL: [ApprovalDecision; 3] = [
        ApprovalDecision::Approved,
        ApprovalDecision::Denied,
        ApprovalDecision::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalDecision::Approved => "approved",
            ApprovalDecision::Denied => "denied",
            ApprovalDecision::Expired => "expired",
        }
    }
}
word_label!(ApprovalDecision);

/// Why a runner's session ended, from the close code the relay sent (or
/// `connection_lost` when the socket just went away).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisconnectReason {
    /// Another runner connected with the environment's token.
    Replaced,
    /// The environment's tokens were revoked or expired.
    Revoked,
    /// The environment was deleted.
    Deleted,
    /// The runner sent a frame the relay could not decode.
    BadFrame,
    /// The runner sent a frame over the size limit.
    FrameTooLarge,
    /// The runner speaks a newer protocol.
    UnsupportedVersion,
    /// The relay is shutting down or draining, or lost its store or NATS.
    GoingAway,
    /// The runner broke the WebSocket protocol.
    ProtocolError,
    /// The socket closed, failed or went silent past the idle timeout.
    ConnectionLost,
}

impl DisconnectReason {
    pub const ALL: [DisconnectReason; 9] = [
        DisconnectReason::Replaced,
        DisconnectReason::Revoked,
        DisconnectReason::Deleted,
        DisconnectReason::BadFrame,
        DisconnectReason::FrameTooLarge,
        DisconnectReason::UnsupportedVersion,
        DisconnectReason::GoingAway,
        DisconnectReason::ProtocolError,
        DisconnectReason::ConnectionLost,
    ];

    /// The reason of a session the relay closed with `code`.
    pub fn of_close_code(code: u16) -> DisconnectReason {
        use runner_proto::close;
        match code {
            close::REPLACED => DisconnectReason::Replaced,
            close::REVOKED => DisconnectReason::Revoked,
            close::DELETED => DisconnectReason::Deleted,
            close::BAD_FRAME | close::HANDSHAKE => DisconnectReason::BadFrame,
            close::FRAME_TOO_LARGE => DisconnectReason::FrameTooLarge,
            close::UNSUPPORTED_VERSION => DisconnectReason::UnsupportedVersion,
            close::GOING_AWAY => DisconnectReason::GoingAway,
            _ => DisconnectReason::ProtocolError,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DisconnectReason::Replaced => "replaced",
            DisconnectReason::Revoked => "revoked",
            DisconnectReason::Deleted => "deleted",
            DisconnectReason::BadFrame => "bad_frame",
            DisconnectReason::FrameTooLarge => "frame_too_large",
            DisconnectReason::UnsupportedVersion => "unsupported_version",
            DisconnectReason::GoingAway => "going_away",
            DisconnectReason::ProtocolError => "protocol_error",
            DisconnectReason::ConnectionLost => "connection_lost",
        }
    }
}
word_label!(DisconnectReason);

/// What came of a runner's connect: welcomed, or turned away during the
/// handshake (no `hello`, bad `hello`, store or NATS unavailable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectOutcome {
    Welcomed,
    Failed,
}

impl ConnectOutcome {
    pub const ALL: [ConnectOutcome; 2] = [ConnectOutcome::Welcomed, ConnectOutcome::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            ConnectOutcome::Welcomed => "welcomed",
            ConnectOutcome::Failed => "failed",
        }
    }
}
word_label!(ConnectOutcome);

/// What came of one request on a NATS session subject (shared mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NatsOutcome {
    /// The holder answered.
    Answered,
    /// Nobody serves the subject (the runner moved or its relay is gone).
    NoResponders,
    /// Timed out, failed, or answered with something unreadable.
    Failed,
}

impl NatsOutcome {
    pub const ALL: [NatsOutcome; 3] = [
        NatsOutcome::Answered,
        NatsOutcome::NoResponders,
        NatsOutcome::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NatsOutcome::Answered => "answered",
            NatsOutcome::NoResponders => "no_responders",
            NatsOutcome::Failed => "failed",
        }
    }
}
word_label!(NatsOutcome);

/// A label set of one word-valued label named `$name`.
macro_rules! one_label {
    ($set:ident, $name:ident, $value:ty) => {
        #[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
        pub struct $set {
            pub $name: $value,
        }
    };
}

one_label!(OutcomeLabel, outcome, Outcome);
one_label!(ReasonLabel, reason, AuthFailure);
one_label!(DecisionLabel, decision, ApprovalDecision);
one_label!(DisconnectLabel, reason, DisconnectReason);
one_label!(ConnectLabel, outcome, ConnectOutcome);
one_label!(NatsLabel, outcome, NatsOutcome);
one_label!(StatusLabel, status, &'static str);
one_label!(SandboxStartLabel, outcome, &'static str);

/// How a sandbox start ended: the `outcome` of `relay_sandbox_starts`.
pub const SANDBOX_START_OUTCOMES: [&str; 4] = ["ready", "setup_failed", "not_connected", "no_host"];

/// A call's tool (a capped name: see [`super::tools`]) and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CallLabels {
    pub tool: std::sync::Arc<str>,
    pub outcome: Outcome,
}

/// A call's tool alone (durations).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ToolLabel {
    pub tool: std::sync::Arc<str>,
}

/// An API request: method, the route it matched (the route's pattern, never
/// the path a client sent) and the status answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct HttpLabels {
    pub method: &'static str,
    pub route: &'static str,
    pub status: u16,
}
