//! The change feed: what other processes changed in the rows the relay's
//! read cache copies ([`crate::read_cache`]). PostgreSQL notifies every
//! listening relay from triggers (migration `change_feed`), so a change
//! made anywhere (another relay, `runner-relay admin`, a hand-written
//! statement) reaches every copy.

use async_trait::async_trait;

/// The notification channel the triggers publish on.
pub const CHANNEL: &str = "runner_changes";

/// One change, as the triggers name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// This environment's settings or policy changed, or it was deleted.
    Environment(String),
    /// A member, an API key or a team membership changed.
    Members,
}

impl Change {
    /// Reads a notification's payload; `None` for one this build does not
    /// know (a newer relay's trigger), which a listener must treat as
    /// "anything may have changed".
    pub fn parse(payload: &str) -> Option<Change> {
        if payload == "members" {
            return Some(Change::Members);
        }
        payload
            .strip_prefix("environment:")
            .filter(|id| !id.is_empty())
            .map(|id| Change::Environment(id.to_owned()))
    }
}

/// What a listener hears next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    Change(Change),
    /// A notification this build cannot read.
    Unknown,
    /// The connection was lost and made again: notifications may have been
    /// missed in between; the listener goes on.
    Lost,
    /// The connection failed and could not be made again: this listener
    /// hears nothing more.
    Failed,
}

/// A live subscription to the change feed.
#[async_trait]
pub trait ChangeListener: Send {
    /// Waits for the next notification.
    async fn next(&mut self) -> Heard;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_of_the_triggers_are_read_and_others_are_not() {
        assert_eq!(Change::parse("members"), Some(Change::Members));
        assert_eq!(
            Change::parse("environment:env_1"),
            Some(Change::Environment("env_1".to_owned()))
        );
        assert_eq!(Change::parse("environment:"), None);
        assert_eq!(Change::parse("template:t1"), None);
        assert_eq!(Change::parse(""), None);
    }
}
