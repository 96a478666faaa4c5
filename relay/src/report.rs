//! How `runner-relay` reports a failure on stderr, as `runner` does:
//! `error:` with what failed, one `Caused by:` line per cause beneath it,
//! and a `hint:` when there is something the operator can do about it.
//!
//! A command gives a hint by making [`Hinted`] the error, or the context
//! of one; errors that need none stay plain `anyhow` errors.

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

/// An error with advice for whoever runs the relay. It displays as its
/// message; the hint is printed on a line of its own by [`print`].
#[derive(Debug)]
pub struct Hinted {
    message: String,
    hint: String,
}

impl Hinted {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Hinted {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Hinted {}

/// The exit status of a command's outcome; a failure is printed on stderr.
pub fn exit_code(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        // A closed stdout (`runner-relay admin create-key | head -c 0`) is
        // the reader's choice, not a failure.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // Nothing is left to tell anyone if stderr is gone too.
            let _ = print(&error, &mut io::stderr().lock());
            ExitCode::FAILURE
        }
    }
}

/// Writes `error:` / `Caused by:` / `hint:` lines for `error`.
pub fn print(error: &anyhow::Error, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "error: {error}")?;
    for cause in error.chain().skip(1) {
        writeln!(out, "  Caused by: {cause}")?;
    }
    // Found at any layer of context, not only the outermost.
    if let Some(Hinted { hint, .. }) = error.downcast_ref::<Hinted>() {
        writeln!(out, "hint: {hint}")?;
    }
    Ok(())
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|error| error.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(error: &anyhow::Error) -> String {
        let mut out = Vec::new();
        print(error, &mut out).expect("writes to memory");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn causes_follow_the_error_and_the_hint_comes_last() {
        let error = anyhow::Error::new(io::Error::from(io::ErrorKind::AddrInUse))
            .context(Hinted::new(
                "binding 127.0.0.1:8080",
                "another process listens there; pick another address with --listen",
            ))
            .context("starting the relay");
        assert_eq!(
            printed(&error),
            "error: starting the relay\n  Caused by: binding 127.0.0.1:8080\n  \
             Caused by: address in use\nhint: another process listens there; pick \
             another address with --listen\n"
        );
    }

    #[test]
    fn an_error_without_advice_has_no_hint_line() {
        let error = anyhow::anyhow!("the store is gone").context("opening the store");
        assert_eq!(
            printed(&error),
            "error: opening the store\n  Caused by: the store is gone\n"
        );
    }

    #[test]
    fn a_hinted_error_of_its_own_has_no_cause() {
        let error = anyhow::Error::new(Hinted::new("no home directory", "pass --data-dir"));
        assert_eq!(
            printed(&error),
            "error: no home directory\nhint: pass --data-dir\n"
        );
    }

    #[test]
    fn a_broken_pipe_is_not_a_failure() {
        let error = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe))
            .context("writing to stdout");
        assert_eq!(exit_code(Err(error)), ExitCode::SUCCESS);
        assert_eq!(exit_code(Err(anyhow::anyhow!("failed"))), ExitCode::FAILURE);
    }
}
