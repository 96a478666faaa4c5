//! Stopping a call's process tree: SIGTERM to everything the call
//! started, a grace, then SIGKILL to whatever is left. Its processes are
//! found three ways: the process group, the call marker variable in their
//! environment ([`CALL_MARKER_VAR`]), and the call's cgroup.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use super::cgroup::{CallGroup, KillMethod};
use super::procfs::{live_processes, LiveProcess};
use super::spawn::Running;
#[cfg(doc)]
use crate::call::CALL_MARKER_VAR;

/// Time between SIGTERM and SIGKILL when stopping a process tree.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// Why a process tree was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Timeout,
    Cancelled,
}

/// A process that was signalled while stopping a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    pub pid: i32,
    pub command: String,
    /// The first way that found it: [`BY_PROCESS_GROUP`], [`BY_CALL_MARKER`]
    /// (it had left the group) or [`BY_CGROUP`] (it had left the group and
    /// wiped its environment). With a cgroup every process of the call is
    /// in it as well.
    pub found_by: &'static str,
}

pub const BY_PROCESS_GROUP: &str = "process_group";
pub const BY_CALL_MARKER: &str = "call_marker";
pub const BY_CGROUP: &str = "cgroup";

/// How a call's processes were stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub reason: StopReason,
    pub killed: Vec<Killed>,
    /// The call's cgroup and how its processes got their SIGKILL, when the
    /// call had one.
    pub cgroup: Option<(String, KillMethod)>,
}

/// The ways to find a call's processes.
pub(super) struct Tree<'a> {
    pub(super) pgid: Option<i32>,
    pub(super) marker: &'a str,
    pub(super) group: Option<&'a CallGroup>,
}

/// What [`stop_tree`] found and how the cgroup was killed.
pub(super) struct Found {
    killed: Vec<Killed>,
    cgroup: Option<(String, KillMethod)>,
}

impl Found {
    pub(super) fn into_stopped(self, reason: StopReason) -> Stopped {
        Stopped {
            reason,
            killed: self.killed,
            cgroup: self.cgroup,
        }
    }
}

/// SIGTERM to the group, the cgroup's processes and every process carrying
/// the marker, up to [`KILL_GRACE`] for them to go, then SIGKILL to
/// whatever is left (the group always: children may outlive the leader;
/// the whole cgroup at once where there is one).
pub(super) async fn stop_tree(
    tree: &Tree<'_>,
    child: &mut Running,
) -> (std::io::Result<std::process::ExitStatus>, Found) {
    let pgid = tree.pgid;
    let mut killed: Vec<Killed> = Vec::new();
    let mut seen = HashSet::new();
    let mut record = |found: Vec<Killed>, killed: &mut Vec<Killed>| {
        for process in found {
            if seen.insert(process.pid) {
                killed.push(process);
            }
        }
    };
    let found = tree_members(tree);
    signal_all(pgid, &found, Signal::SIGTERM);
    record(found, &mut killed);

    let deadline = Instant::now() + KILL_GRACE;
    let mut status = None;
    loop {
        if status.is_none() {
            if let Ok(Some(exited)) = child.try_wait() {
                status = Some(Ok(exited));
            }
        }
        let remaining = tree_members(tree);
        if status.is_some() && remaining.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
        // No SIGTERM for what started after the first: that is most often
        // the clean-up a trap runs (`trap 'upload-logs; exit' TERM`), and
        // stopping it would defeat the grace. Whatever is left at the
        // deadline gets SIGKILL, as with `systemctl stop` and `docker stop`.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The cgroup takes every member at once, forks included; what is left
    // outside it (its wrapper could not join it) is found as before.
    let mut cgroup = None;
    if let Some(group) = tree.group {
        record(tree_members(tree), &mut killed);
        let method = group.kill_all();
        cgroup = Some((group.path().display().to_string(), method));
    }
    // SIGKILL cannot be caught, but a process may fork between our scan and
    // the signal: repeat a few times until nothing is left.
    for _ in 0..5 {
        let found = tree_members(tree);
        if found.is_empty() {
            if let Some(pgid) = pgid {
                // ESRCH (group already empty) is the good case.
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
            break;
        }
        signal_all(pgid, &found, Signal::SIGKILL);
        record(found, &mut killed);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = match status {
        Some(status) => status,
        None => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    if let Some(group) = tree.group {
        // So that dropping it can remove the cgroup.
        group.wait_empty().await;
    }
    (status, Found { killed, cgroup })
}

/// One signal to each process: the group as a whole, then each process
/// found outside it.
fn signal_all(pgid: Option<i32>, processes: &[Killed], signal: Signal) {
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
    for pid in outside_the_group(pgid, processes) {
        let _ = kill(Pid::from_raw(pid), signal);
    }
}

/// The processes `killpg` does not reach. A process of the group must not
/// get a second SIGTERM: many programs take a second one as "stop now,
/// skip the clean-up", and bash runs its `TERM` trap once more.
fn outside_the_group(pgid: Option<i32>, processes: &[Killed]) -> impl Iterator<Item = i32> + '_ {
    processes
        .iter()
        .filter(move |process| pgid.is_none() || process.found_by != BY_PROCESS_GROUP)
        .map(|process| process.pid)
}

/// Live processes in the group, carrying the call marker, or in the call's
/// cgroup (zombies have no readable environment and are skipped: they are
/// already dead).
fn tree_members(tree: &Tree<'_>) -> Vec<Killed> {
    let (pgid, marker) = (tree.pgid, tree.marker);
    let in_cgroup: HashSet<i32> = tree
        .group
        .map(|group| group.members().into_iter().collect())
        .unwrap_or_default();
    let mut found = Vec::new();
    for LiveProcess {
        pid,
        dir,
        command,
        process_group,
    } in live_processes()
    {
        let marked = || {
            std::fs::read(dir.join("environ")).is_ok_and(|environ| {
                environ
                    .split(|byte| *byte == 0)
                    .any(|entry| entry == marker.as_bytes())
            })
        };
        let found_by = if pgid == Some(process_group) {
            BY_PROCESS_GROUP
        } else if marked() {
            BY_CALL_MARKER
        } else if in_cgroup.contains(&pid) {
            BY_CGROUP
        } else {
            continue;
        };
        found.push(Killed {
            pid,
            command,
            found_by,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_processes_outside_the_group_are_signalled_one_by_one() {
        let process = |pid, found_by| Killed {
            pid,
            command: "sh".into(),
            found_by,
        };
        let found = [
            process(10, BY_PROCESS_GROUP),
            process(11, BY_CALL_MARKER),
            process(12, BY_CGROUP),
        ];
        let one_by_one: Vec<i32> = outside_the_group(Some(10), &found).collect();
        assert_eq!(one_by_one, [11, 12], "killpg already reaches 10");
        let without_a_group: Vec<i32> = outside_the_group(None, &found).collect();
        assert_eq!(without_a_group, [10, 11, 12]);
    }
}
