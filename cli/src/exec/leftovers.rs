//! What a previous run of this runner left running: the processes of its
//! calls when it was killed (`kill -9`, a crash, the OOM killer) and could
//! not stop them, and the daemons its calls started on purpose. A runner
//! that starts stops them before it takes a call, as systemd does for a
//! service's cgroup when it restarts one, so that a manual run, a container
//! and a crash loop leave nothing running that nobody controls.
//!
//! Which processes are ours is decided by the runner's *owner id* (the id
//! of its state directory, [`super::owner::claim`]ed at start): every process of a call
//! carries it in [`CALL_OWNER_VAR`], and every call cgroup has it in its
//! name (`runner-call-OWNER-PID-SEQ`). A process is stopped when its cgroup
//! (from `/proc/PID/cgroup`, wherever that cgroup is) is one of ours, or
//! when its environment carries our owner id; the call marker alone
//! ([`crate::call::CALL_MARKER_VAR`]) decides nothing, since another
//! runner's calls carry it too. The instance lock ([`crate::agent::lock`])
//! guarantees that no other live runner has the same owner id.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::cgroup::{self, CallGroup, NAME_PREFIX};
use super::procfs::{live_processes, LiveProcess};
use super::tree::{BY_CALL_MARKER, BY_CGROUP, KILL_GRACE};
use crate::call::{CALL_MARKER_VAR, CALL_OWNER_VAR};

/// Rounds of SIGKILL for processes that fork while being killed.
const KILL_ROUNDS: usize = 10;

/// A process a previous run left, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: i32,
    pub command: String,
    /// [`BY_CGROUP`] (in one of our call cgroups) or [`BY_CALL_MARKER`]
    /// (our owner id in its environment).
    pub found_by: &'static str,
    /// The call it belonged to, when its environment still says.
    pub call_id: Option<String>,
}

/// Stops every process that carries `owner` or sits in one of its call
/// cgroups: SIGTERM, up to [`KILL_GRACE`] for them to go, then SIGKILL
/// (the cgroup as a whole where there is one); then removes those call
/// cgroups and the empty ones of `owner` under this process's cgroup.
/// Must run before this process starts a call of its own with the same
/// owner, which it would otherwise stop too.
pub async fn stop_left_by(owner: &str) -> Vec<Leftover> {
    let mut stopped: Vec<Leftover> = Vec::new();
    let mut groups = BTreeSet::new();
    let note = |found: Vec<Found>, stopped: &mut Vec<Leftover>, groups: &mut BTreeSet<PathBuf>| {
        for found in found {
            if let Some(dir) = found.cgroup {
                groups.insert(dir);
            }
            if !stopped.iter().any(|known| known.pid == found.process.pid) {
                stopped.push(found.process);
            }
        }
    };
    let found = scan(owner);
    if !found.is_empty() {
        for process in &found {
            let _ = kill(Pid::from_raw(process.process.pid), Signal::SIGTERM);
        }
        note(found, &mut stopped, &mut groups);
        let deadline = Instant::now() + KILL_GRACE;
        loop {
            let left = scan(owner);
            if left.is_empty() || Instant::now() >= deadline {
                note(left, &mut stopped, &mut groups);
                break;
            }
            note(left, &mut stopped, &mut groups);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for dir in &groups {
            CallGroup::for_path(dir.clone()).kill_all();
        }
        for _ in 0..KILL_ROUNDS {
            let left = scan(owner);
            if left.is_empty() {
                break;
            }
            for process in &left {
                let _ = kill(Pid::from_raw(process.process.pid), Signal::SIGKILL);
            }
            note(left, &mut stopped, &mut groups);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    for dir in &groups {
        let group = CallGroup::for_path(dir.clone());
        // Retired, it is removed when dropped, never kept for a call.
        group.retire();
        group.wait_empty().await;
        drop(group);
        let _ = std::fs::remove_dir(dir);
    }
    remove_empty_groups_of(owner);
    stopped
}

/// A process of `owner`, and its call cgroup's directory when it is in one.
struct Found {
    process: Leftover,
    cgroup: Option<PathBuf>,
}

/// Every live process (but this one) in a call cgroup of `owner` or with
/// `owner` in its environment. Zombies are dead already and skipped;
/// processes of other users, whose files cannot be read, are not ours.
fn scan(owner: &str) -> Vec<Found> {
    let group_prefix = format!("{NAME_PREFIX}{owner}-");
    let owner_entry = format!("{CALL_OWNER_VAR}={owner}");
    let mut found = Vec::new();
    for LiveProcess {
        pid, dir, command, ..
    } in live_processes()
    {
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        let variables: Vec<&[u8]> = environ.split(|byte| *byte == 0).collect();
        let group = std::fs::read_to_string(dir.join("cgroup"))
            .ok()
            .and_then(|membership| call_group_of(&membership, &group_prefix));
        let found_by = if group.is_some() {
            BY_CGROUP
        } else if variables.contains(&owner_entry.as_bytes()) {
            BY_CALL_MARKER
        } else {
            continue;
        };
        let marker = format!("{CALL_MARKER_VAR}=");
        let call_id = variables.iter().find_map(|variable| {
            variable
                .strip_prefix(marker.as_bytes())
                .map(|id| String::from_utf8_lossy(id).into_owned())
        });
        found.push(Found {
            process: Leftover {
                pid,
                command,
                found_by,
                call_id,
            },
            cgroup: group.and_then(|path| cgroup::directory_of(&path)),
        });
    }
    found
}

/// The call cgroup (its path in the hierarchy, as `/proc/PID/cgroup`
/// writes it) that holds a process whose membership is `membership`,
/// when that cgroup's name starts with `prefix`; a process in a cgroup
/// its call made below the call cgroup counts too.
fn call_group_of(membership: &str, prefix: &str) -> Option<String> {
    let path = membership
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?
        .trim();
    let mut end = 0;
    for component in path.split('/') {
        end += component.len();
        if component.starts_with(prefix) {
            return Some(path[..end].to_owned());
        }
        end += 1;
    }
    None
}

/// Removes the empty call cgroups of `owner` under this process's cgroup
/// (a previous run's, when it was started from the same place).
fn remove_empty_groups_of(owner: &str) {
    let Some(parent) = cgroup::own_cgroup() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let prefix = format!("{NAME_PREFIX}{owner}-");
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(&prefix))
        {
            // EBUSY when populated: nothing of ours is, by now.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cgroups_named_for_the_owner_are_call_groups_of_it() {
        let prefix = "runner-call-00112233445566778899-";
        let ours = "0::/user.slice/runner-call-00112233445566778899-41-0\n";
        assert_eq!(
            call_group_of(ours, prefix).as_deref(),
            Some("/user.slice/runner-call-00112233445566778899-41-0")
        );
        // A cgroup the call made below its own.
        let below = "0::/runner-call-00112233445566778899-41-0/made-by-the-call\n";
        assert_eq!(
            call_group_of(below, prefix).as_deref(),
            Some("/runner-call-00112233445566778899-41-0")
        );
        // Another runner's, an old-style name, none at all.
        let other = "0::/runner-call-99112233445566778899-41-0\n";
        assert_eq!(call_group_of(other, prefix), None);
        assert_eq!(call_group_of("0::/runner-call-41-0\n", prefix), None);
        assert_eq!(call_group_of("0::/\n", prefix), None);
        assert_eq!(
            call_group_of("4:memory:/runner-call-00112233445566778899-1-0\n", prefix),
            None
        );
    }
}
