//! How the console shows things: status chips, times, an environment's
//! row.

use runner_proto::api::Status;
use time::OffsetDateTime;

use crate::clock::rfc3339;
use crate::environment::{EnvironmentRecord, Scope};
use crate::routing::CallRouter;
use crate::state::AppState;
use crate::status;

/// A status chip: the CSS class and the words on it.
pub fn chip(status: Status) -> (&'static str, &'static str) {
    match status {
        Status::Pending => ("pending", "Pending"),
        Status::Online => ("online", "Online"),
        Status::Degraded => ("degraded", "Degraded"),
        Status::Offline => ("offline", "Offline"),
    }
}

/// `then` as people read it next to `now`: "12 s ago", "3 h ago".
pub fn ago(now: OffsetDateTime, then: OffsetDateTime) -> String {
    let seconds = (now - then).whole_seconds().max(0);
    match seconds {
        0..=4 => "just now".to_owned(),
        5..=119 => format!("{seconds} s ago"),
        120..=7_199 => format!("{} min ago", seconds / 60),
        7_200..=172_799 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// One environment as the list shows it.
pub struct EnvironmentRow {
    pub id: String,
    pub name: String,
    pub description: String,
    pub scope: String,
    pub team: Option<String>,
    pub tags: Vec<String>,
    pub status: Status,
    pub reason: Option<String>,
    pub last_seen: String,
    pub last_seen_at: String,
    pub version: Option<String>,
    pub update: Option<String>,
    pub host: Option<String>,
}

impl EnvironmentRow {
    /// The status chip's CSS class (the status's wire name).
    pub fn chip_class(&self) -> &'static str {
        chip(self.status).0
    }

    /// The words on the status chip.
    pub fn chip_label(&self) -> &'static str {
        chip(self.status).1
    }

    /// The row of `environment` now (its heartbeat time as this relay last
    /// saw it).
    pub async fn of(state: &AppState, mut environment: EnvironmentRecord) -> Self {
        state.seen.apply(&mut environment);
        let presence = state.router.presence(&environment.id).await;
        let now = state.clock.now();
        let (status, reason) =
            status::compute(&environment, presence.as_deref(), &state.health, now);
        let version = environment
            .runner
            .as_ref()
            .map(|runner| runner.version.clone());
        let update = version.as_deref().and_then(|version| {
            state
                .releases
                .as_ref()
                .and_then(|releases| releases.offer(version))
        });
        let team = match &environment.scope {
            Scope::Team(team) => Some(team.clone()),
            Scope::Shared => None,
        };
        Self {
            name: if environment.name.is_empty() {
                "(named by its first runner)".to_owned()
            } else {
                environment.name.clone()
            },
            description: environment.description,
            scope: environment.scope.to_string(),
            team,
            tags: environment.tags,
            status,
            reason: reason.filter(|_| status != Status::Online),
            last_seen: environment
                .last_seen
                .map_or_else(|| "never".to_owned(), |at| ago(now, at)),
            last_seen_at: environment.last_seen.map(rfc3339).unwrap_or_default(),
            version,
            update,
            host: environment.runner.map(|runner| runner.hostname),
            id: environment.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::Duration;

    #[test]
    fn times_read_as_people_say_them() {
        let now = OffsetDateTime::UNIX_EPOCH + Duration::days(30);
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now, now - Duration::seconds(42)), "42 s ago");
        assert_eq!(ago(now, now - Duration::minutes(5)), "5 min ago");
        assert_eq!(ago(now, now - Duration::hours(3)), "3 h ago");
        assert_eq!(ago(now, now - Duration::days(9)), "9 d ago");
        assert_eq!(ago(now, now + Duration::seconds(3)), "just now");
    }
}
