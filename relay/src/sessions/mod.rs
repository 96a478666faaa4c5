//! Work sessions: an agent or CI job asks once for `auto`, a named
//! environment or a sandbox; the session's first call locks the environment
//! it runs on, and every later call goes there or fails. A session is never
//! moved to another machine: a runner that went away makes its calls fail
//! with an error naming the environment and its status.
//!
//! (Not to be confused with a runner's socket session, the
//! [`crate::store::SessionRecord`] of the routing layer.)
//!
//! This module holds the model and its time rules; [`select`] picks an
//! environment; [`crate::session_usage`] keeps last-use times and copies in
//! memory. The HTTP layer (`crate::http::sessions`) ties them to the store
//! and the router.

pub mod select;

use time::{Duration, OffsetDateTime};

use runner_proto::sessions::{SessionState, AUTO, SANDBOX};

/// Default `serve --session-idle-timeout`, in seconds.
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 3600;

/// A new session id: `ses_` + 32 hex digits.
pub fn new_session_id() -> String {
    format!("ses_{}", uuid::Uuid::new_v4().simple())
}

/// What a session asked for, after defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    /// The relay picks among the usable environments (see [`select`]).
    Auto,
    /// A sandbox a sandbox host starts for this session.
    Sandbox,
    /// This environment (id), and no other.
    Environment(String),
}

impl Requested {
    /// The stored and wire form: `auto`, `sandbox` or the environment id.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Auto => AUTO,
            Self::Sandbox => SANDBOX,
            Self::Environment(id) => id,
        }
    }

    /// Reads the stored form back.
    pub fn parse(text: &str) -> Self {
        match text {
            AUTO => Self::Auto,
            SANDBOX => Self::Sandbox,
            id => Self::Environment(id.to_owned()),
        }
    }
}

/// Where the request came from: the request itself or a default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestedFrom {
    /// The request named it.
    Request,
    /// The agent's default environment.
    Agent,
    /// The default environment of the agent's team.
    Team,
    /// Nothing named one: `auto`.
    Auto,
}

impl RequestedFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Agent => "agent",
            Self::Team => "team",
            Self::Auto => "auto",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "request" => Some(Self::Request),
            "agent" => Some(Self::Agent),
            "team" => Some(Self::Team),
            "auto" => Some(Self::Auto),
            _ => None,
        }
    }
}

/// A member as a session records it (names are kept for display, so a
/// deleted member's sessions still read well).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberName {
    pub id: String,
    pub name: String,
}

/// The environment a session's first call chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub environment_id: String,
    /// Its name then, to name it once it is deleted.
    pub environment_name: String,
    /// Why it was chosen, for people.
    pub reason: String,
    pub at: OffsetDateTime,
}

/// A work session as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkSession {
    pub id: String,
    pub created_by: MemberName,
    pub agent: Option<MemberName>,
    pub requested: Requested,
    pub requested_from: RequestedFrom,
    pub tags: Vec<String>,
    /// Set by the first call, never changed afterwards.
    pub lock: Option<Lock>,
    pub created_at: OffsetDateTime,
    pub last_used_at: OffsetDateTime,
    pub idle_timeout_s: u64,
    pub ended_at: Option<OffsetDateTime>,
    /// The template its sandbox is prepared by (sessions that may get one).
    pub template_id: Option<String>,
}

/// How often relays write sessions' last-use times to the store.
pub const USE_FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Grace given past a session's idle timeout before it counts as expired:
/// in shared mode another relay's last use reaches the store up to one
/// [`USE_FLUSH_INTERVAL`] late, and a session must not expire for that.
pub const EXPIRY_GRACE: Duration = Duration::seconds(10);

impl WorkSession {
    fn idle_timeout(&self) -> Duration {
        Duration::seconds(i64::try_from(self.idle_timeout_s).unwrap_or(i64::MAX / 2))
    }

    /// When the session expires if nobody uses it before.
    pub fn expires_at(&self) -> OffsetDateTime {
        self.last_used_at.saturating_add(self.idle_timeout())
    }

    /// Whether the session takes calls at `now`.
    pub fn state(&self, now: OffsetDateTime) -> SessionState {
        if self.ended_at.is_some() {
            SessionState::Ended
        } else if now > self.expires_at().saturating_add(EXPIRY_GRACE) {
            SessionState::Expired
        } else {
            SessionState::Open
        }
    }

    /// Whether the session's calls go to a sandbox started for it: it
    /// asked for one, or asked for `auto` and got one (sandbox ids are
    /// `sbx_…`, environment ids never are).
    pub fn requested_sandbox(&self, locked_id: &str) -> bool {
        matches!(self.requested, Requested::Sandbox | Requested::Auto)
            && locked_id.starts_with(crate::sandboxes::ID_PREFIX)
    }

    /// Whether `member_id` may call tools through the session: its creator
    /// and the agent it works for (each still needs the environment's
    /// usual access rules).
    pub fn may_call(&self, member_id: &str) -> bool {
        self.created_by.id == member_id
            || self
                .agent
                .as_ref()
                .is_some_and(|agent| agent.id == member_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(idle_timeout_s: u64) -> WorkSession {
        let at = OffsetDateTime::UNIX_EPOCH;
        WorkSession {
            id: new_session_id(),
            created_by: MemberName {
                id: "mem_a".into(),
                name: "a".into(),
            },
            agent: Some(MemberName {
                id: "mem_bot".into(),
                name: "bot".into(),
            }),
            requested: Requested::Auto,
            requested_from: RequestedFrom::Auto,
            tags: Vec::new(),
            lock: None,
            created_at: at,
            last_used_at: at,
            idle_timeout_s,
            ended_at: None,
            template_id: None,
        }
    }

    #[test]
    fn the_grace_is_one_flush_interval() {
        assert_eq!(EXPIRY_GRACE.unsigned_abs(), USE_FLUSH_INTERVAL);
    }

    #[test]
    fn expiry_counts_from_last_use_with_the_flush_grace() {
        let mut session = session(60);
        let start = session.created_at;
        let expires = start + Duration::seconds(60);
        assert_eq!(session.expires_at(), expires);
        assert_eq!(session.state(expires + EXPIRY_GRACE), SessionState::Open);
        assert_eq!(
            session.state(expires + EXPIRY_GRACE + Duration::seconds(1)),
            SessionState::Expired
        );
        session.last_used_at = expires;
        assert_eq!(
            session.state(expires + Duration::seconds(30)),
            SessionState::Open
        );
        session.ended_at = Some(start);
        assert_eq!(session.state(start), SessionState::Ended);
    }

    #[test]
    fn only_creator_and_agent_may_call() {
        let session = session(60);
        assert!(session.may_call("mem_a"));
        assert!(session.may_call("mem_bot"));
        assert!(!session.may_call("mem_other"));
    }

    #[test]
    fn requested_round_trips() {
        for requested in [
            Requested::Auto,
            Requested::Sandbox,
            Requested::Environment("env_1".into()),
        ] {
            assert_eq!(Requested::parse(requested.as_str()), requested);
        }
        for from in [
            RequestedFrom::Request,
            RequestedFrom::Agent,
            RequestedFrom::Team,
            RequestedFrom::Auto,
        ] {
            assert_eq!(RequestedFrom::parse(from.as_str()), Some(from));
        }
    }
}
