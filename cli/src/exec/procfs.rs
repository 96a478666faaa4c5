//! The live processes of `/proc`, as the process-tree stop and the
//! start-up clean-up both walk them.

use std::path::PathBuf;

/// A live process (not a zombie), as `/proc/PID/stat` describes it.
pub(super) struct LiveProcess {
    pub pid: i32,
    /// `/proc/PID`, for its `environ` and `cgroup`.
    pub dir: PathBuf,
    pub command: String,
    pub process_group: i32,
}

/// Every live process but this one. Zombies are skipped: they are dead
/// already and have no readable environment. A process that went away
/// during the walk is skipped too.
pub(super) fn live_processes() -> impl Iterator<Item = LiveProcess> {
    let own = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(move |entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            if u32::try_from(pid).ok() == Some(own) {
                return None;
            }
            let dir = entry.path();
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let (command, state, process_group) = parse_stat(&stat)?;
            (state != 'Z' && state != 'X').then_some(LiveProcess {
                pid,
                dir,
                command,
                process_group,
            })
        })
}

/// `(comm, state, pgrp)` from `/proc/PID/stat`; `comm` may contain spaces
/// and parentheses, so it is the text between the first `(` and the last `)`.
fn parse_stat(stat: &str) -> Option<(String, char, i32)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let command = stat.get(open + 1..close)?.to_owned();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let _ppid = rest.next()?;
    let group = rest.next()?.parse().ok()?;
    Some((command, state, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(
            parse_stat("42 (sleep) S 1 42 42 0 -1"),
            Some(("sleep".to_owned(), 'S', 42))
        );
        assert_eq!(
            parse_stat("7 (a (b) c) R 1 9 7 0"),
            Some(("a (b) c".to_owned(), 'R', 9))
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) "), None);
    }

    #[test]
    fn this_process_is_left_out_and_its_parent_found() {
        let own = i32::try_from(std::process::id()).expect("a pid fits");
        let parent = i32::try_from(std::os::unix::process::parent_id()).expect("a pid fits");
        let pids: Vec<i32> = live_processes().map(|process| process.pid).collect();
        assert!(!pids.contains(&own));
        assert!(pids.contains(&parent), "{parent} not in {pids:?}");
    }
}
