//! One call as every layer below the session sees it: its identity,
//! limits and output channel ([`CallScope`]), the queue its output and
//! result go out on ([`OutboundQueue`]), and its answer ([`ToolOutcome`]).

pub mod outbound;
mod outcome;
mod scope;

pub use outbound::{Outbound, OutboundQueue, OutputSink, QueueClosed, Queued, Room};
pub use outcome::ToolOutcome;
pub use scope::{is_timeout, CallScope, Limit, LimitBy, CALL_MARKER_VAR, CALL_OWNER_VAR};
