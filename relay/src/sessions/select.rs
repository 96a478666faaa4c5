//! Which environment a session's first call locks (seed 001, "Selecting an
//! environment in a session"). Pure: the caller gathers each environment's
//! status and load; the same state always gives the same choice.
//!
//! `auto` considers only environments the member may use (shared ones and
//! its teams' ones) whose runner is online or degraded, and prefers, in
//! order: carrying every requested tag, online over degraded, the least
//! loaded (calls in flight + backlog from the last heartbeat), the most
//! recently seen; the id breaks what is left of a tie.

use std::cmp::Reverse;

use runner_proto::api::Status;
use time::OffsetDateTime;

use crate::environment::EnvironmentRecord;

/// An environment the member may use, as it is now.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    pub environment: &'a EnvironmentRecord,
    pub status: Status,
    /// Calls in flight plus backlog, from the latest heartbeat.
    pub load: u64,
    pub last_seen: Option<OffsetDateTime>,
}

impl Candidate<'_> {
    fn has_tags(&self, tags: &[String]) -> bool {
        tags.iter()
            .all(|tag| self.environment.tags.iter().any(|have| have == tag))
    }
}

/// The pick of [`auto`]: which candidate, and why in one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub index: usize,
    pub reason: String,
}

/// Whether a runner in this status may be chosen at all.
pub fn selectable(status: Status) -> bool {
    matches!(status, Status::Online | Status::Degraded)
}

/// Picks among `candidates` (see the module documentation); `None` when
/// none is online or degraded.
pub fn auto(candidates: &[Candidate<'_>], tags: &[String]) -> Option<Choice> {
    let usable: Vec<usize> = (0..candidates.len())
        .filter(|&index| selectable(candidates[index].status))
        .collect();
    let index = *usable.iter().min_by_key(|&&index| {
        let candidate = &candidates[index];
        (
            !candidate.has_tags(tags),
            candidate.status != Status::Online,
            candidate.load,
            Reverse(candidate.last_seen),
            candidate.environment.id.as_str(),
        )
    })?;
    let chosen = &candidates[index];
    let mut why = vec![format!(
        "{} ({})",
        chosen.status.as_str(),
        if chosen.load == 0 {
            "idle".to_owned()
        } else {
            format!("{} calls running or queued", chosen.load)
        }
    )];
    if !tags.is_empty() {
        why.insert(
            0,
            if chosen.has_tags(tags) {
                format!("carries every requested tag ({})", tags.join(", "))
            } else {
                format!(
                    "no usable environment carries every requested tag ({})",
                    tags.join(", ")
                )
            },
        );
    }
    Some(Choice {
        index,
        reason: format!(
            "auto: {:?} of {} usable environment{}: {}",
            chosen.environment.name,
            usable.len(),
            if usable.len() == 1 { "" } else { "s" },
            why.join("; ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use runner_proto::api::Tier;

    use super::*;
    use crate::environment::{default_policy, Scope};

    fn environment(id: &str, tags: &[&str]) -> EnvironmentRecord {
        EnvironmentRecord {
            id: id.to_owned(),
            name: id.to_owned(),
            description: String::new(),
            env_type: "Local".into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            scope: Scope::Shared,
            tier: Tier::Development,
            install_browser_tools: false,
            policy: default_policy(Tier::Development),
            created_at: OffsetDateTime::UNIX_EPOCH,
            last_seen: None,
            runner: None,
        }
    }

    fn candidate(
        environment: &EnvironmentRecord,
        status: Status,
        load: u64,
        seen: i64,
    ) -> Candidate<'_> {
        Candidate {
            environment,
            status,
            load,
            last_seen: Some(OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(seen)),
        }
    }

    fn pick(candidates: &[Candidate<'_>], tags: &[&str]) -> Option<String> {
        let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
        auto(candidates, &tags).map(|choice| candidates[choice.index].environment.id.clone())
    }

    #[test]
    fn tags_then_online_then_load_then_recency_then_id() {
        let (a, b, c) = (
            environment("a", &["gpu"]),
            environment("b", &[]),
            environment("c", &["gpu", "x86"]),
        );
        // Tags win over status and load.
        let set = [
            candidate(&a, Status::Degraded, 9, 0),
            candidate(&b, Status::Online, 0, 9),
        ];
        assert_eq!(pick(&set, &["gpu"]).as_deref(), Some("a"));
        // Without tags: online over degraded.
        assert_eq!(pick(&set, &[]).as_deref(), Some("b"));
        // Same status: least loaded.
        let set = [
            candidate(&a, Status::Online, 3, 9),
            candidate(&c, Status::Online, 1, 0),
        ];
        assert_eq!(pick(&set, &["gpu"]).as_deref(), Some("c"));
        // Same load: most recently seen.
        let set = [
            candidate(&a, Status::Online, 1, 5),
            candidate(&c, Status::Online, 1, 6),
        ];
        assert_eq!(pick(&set, &[]).as_deref(), Some("c"));
        // Full tie: the id, whatever the order given.
        let set = [
            candidate(&c, Status::Online, 1, 5),
            candidate(&a, Status::Online, 1, 5),
        ];
        assert_eq!(pick(&set, &[]).as_deref(), Some("a"));
    }

    #[test]
    fn offline_and_pending_are_never_chosen() {
        let (a, b) = (environment("a", &["gpu"]), environment("b", &[]));
        let set = [
            candidate(&a, Status::Offline, 0, 9),
            candidate(&b, Status::Pending, 0, 9),
        ];
        assert_eq!(pick(&set, &[]), None);
        let set = [
            candidate(&a, Status::Offline, 0, 9),
            candidate(&b, Status::Degraded, 0, 0),
        ];
        assert_eq!(pick(&set, &["gpu"]).as_deref(), Some("b"));
    }

    #[test]
    fn the_reason_says_why() {
        let (a, b) = (environment("a", &["gpu"]), environment("b", &[]));
        let set = [
            candidate(&a, Status::Online, 0, 0),
            candidate(&b, Status::Online, 2, 0),
        ];
        let tags = vec!["gpu".to_owned()];
        let choice = auto(&set, &tags).expect("a choice");
        assert_eq!(
            choice.reason,
            "auto: \"a\" of 2 usable environments: carries every requested tag (gpu); online (idle)"
        );
        let tags = vec!["arm".to_owned()];
        let choice = auto(&set, &tags).expect("a choice");
        assert!(
            choice
                .reason
                .contains("no usable environment carries every requested tag (arm)"),
            "{}",
            choice.reason
        );
    }
}
