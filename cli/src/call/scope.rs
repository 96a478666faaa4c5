//! A call's identity, limits and output channel.

use std::time::Duration;

use runner_proto::ws::Stream;
use tokio_util::sync::CancellationToken;

use super::outbound::{OutboundQueue, OutputSink};

/// Environment variable every process of a call carries, set to the call
/// id, so that processes which left the process group are found and
/// stopped too. A call cannot set it itself.
pub const CALL_MARKER_VAR: &str = "RUNNER_CALL_ID";

/// Environment variable every process of a call carries, set to the id of
/// the runner's state directory (`STATE_DIR/runner-id`), so that a runner
/// which starts finds the processes its previous run left (it was killed,
/// or crashed) and tells them from those of another runner on the same
/// machine. A call cannot set it itself.
pub const CALL_OWNER_VAR: &str = "RUNNER_CALL_OWNER";

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
        self.output.as_ref().map(|queue| {
            OutputSink::new(
                queue.clone(),
                self.call_id.clone(),
                stream,
                self.binary_output,
            )
        })
    }

    /// The same call with its deadline brought forward to `seconds` from
    /// now (at least one second), never pushed back: a tool's own
    /// `timeout_s`.
    pub fn shortened_to(&self, seconds: Option<u64>) -> CallScope {
        let mut scope = self.clone();
        if let Some(seconds) = seconds {
            scope.timeout = scope.timeout.min(Duration::from_secs(seconds.max(1)));
        }
        scope
    }
}
