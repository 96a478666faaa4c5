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
    /// The timeout as it was given, for messages: the time left is less by
    /// the time the call waited, and a caller who gave 2 s must read "2s".
    pub limit: Limit,
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
            let own = Duration::from_secs(seconds.max(1));
            if own < scope.timeout {
                scope.timeout = own;
                scope.limit = Limit {
                    seconds: seconds.max(1),
                    by: LimitBy::Tool,
                };
            }
        }
        scope
    }
}

/// A call's timeout as the caller gave it, and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub seconds: u64,
    pub by: LimitBy,
}

/// Who set the deadline a call ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitBy {
    /// The call's `timeout_s` (`runner invoke --timeout`; 300 s by default).
    Call,
    /// The tool's own `timeout_s` argument, shorter than the call's.
    Tool,
}

/// How every "timed out" error begins; [`is_timeout`] recognises it, so that
/// the result carries the timeout's error code whichever tool ran out.
const TIMED_OUT: &str = "timed out after ";

impl Limit {
    /// The call's own timeout of `seconds`.
    pub fn call(seconds: u64) -> Limit {
        Limit {
            seconds,
            by: LimitBy::Call,
        }
    }

    /// The error of a call stopped at this deadline: `timed out after 2s
    /// (the call's timeout)`.
    pub fn timed_out(&self) -> String {
        let whose = match self.by {
            LimitBy::Call => "the call's timeout",
            LimitBy::Tool => "the tool's timeout_s",
        };
        format!("{TIMED_OUT}{}s ({whose})", self.seconds)
    }
}

/// Whether a call's error says it ran out of time.
pub fn is_timeout(error: &str) -> bool {
    error.starts_with(TIMED_OUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(seconds: u64) -> CallScope {
        CallScope {
            call_id: "c".to_owned(),
            cancel: CancellationToken::new(),
            timeout: Duration::from_millis(seconds * 1000 - 400),
            limit: Limit::call(seconds),
            output: None,
            binary_output: false,
        }
    }

    #[test]
    fn a_timeout_is_reported_as_given_and_by_whom() {
        // 2 s given, 1.6 s left when the tool starts: still "2s".
        let call = scope(2);
        assert_eq!(
            call.limit.timed_out(),
            "timed out after 2s (the call's timeout)"
        );
        let tool = call.shortened_to(Some(1));
        assert_eq!(tool.timeout, Duration::from_secs(1));
        assert_eq!(
            tool.limit.timed_out(),
            "timed out after 1s (the tool's timeout_s)"
        );
        // A tool's timeout longer than what is left changes nothing.
        let longer = call.shortened_to(Some(60));
        assert_eq!(longer.limit, Limit::call(2));
        assert!(is_timeout(&longer.limit.timed_out()));
        assert!(!is_timeout("cancelled"));
    }
}
