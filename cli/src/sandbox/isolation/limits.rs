//! A sandbox's memory, process and CPU limits, and the handle that stops
//! every process in it: one cgroup per sandbox, under the host's own
//! cgroup, in a `runner-sandboxes` directory. cgroup v2 where the memory
//! and pids controllers are delegated to the host; else the v1
//! hierarchies of `memory`, `pids` and `cpu` (a hybrid machine).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The directory holding every host's sandbox cgroups (one directory per
/// host beneath), in each hierarchy.
pub const PARENT: &str = "runner-sandboxes";
/// The CPU period the quota is a share of (v1 `cfs_period_us`, v2 `cpu.max`).
const CPU_PERIOD_US: u64 = 100_000;
/// Rounds of SIGKILL over a v1 cgroup's members before giving up (a fork
/// between listing and killing leaves a member for the next round).
const KILL_ROUNDS: usize = 100;

/// Limits in force for one sandbox.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub memory_mb: u64,
    pub pids: u32,
    /// `None`: no CPU quota.
    pub cpus: Option<f64>,
}

/// Where sandbox cgroups go on this machine.
#[derive(Debug, Clone)]
pub enum Tree {
    /// One cgroup2 directory with memory, pids (and cpu, if delegated).
    V2 { parent: PathBuf, cpu: bool },
    /// The v1 hierarchies' directories.
    V1 {
        memory: PathBuf,
        pids: PathBuf,
        cpu: Option<PathBuf>,
    },
}

/// One sandbox's cgroup(s).
#[derive(Debug, Clone)]
pub struct Group {
    dirs: Vec<PathBuf>,
    v2: bool,
}

impl Tree {
    /// The tree of the host `host_key` names ([`crate::sandbox::layout::Layout::host_key`]:
    /// two hosts on one machine never touch each other's sandboxes), made
    /// if need be, or what is missing.
    pub fn detect(host_key: &str) -> Result<Tree, String> {
        Tree::find(true, host_key)
    }

    /// The same, changing nothing (`runner doctor`): the parents are
    /// only checked to be there or creatable.
    pub fn probe() -> Result<Tree, String> {
        Tree::find(false, "probe")
    }

    fn find(create: bool, host_key: &str) -> Result<Tree, String> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let v2 = if create {
            v2_tree(&mountinfo, &own, host_key)
        } else {
            None
        };
        if let Some(tree) = v2 {
            return Ok(tree);
        }
        let memory = v1_dir(&mountinfo, &own, "memory");
        let pids = v1_dir(&mountinfo, &own, "pids");
        let cpu = v1_dir(&mountinfo, &own, "cpu");
        match (memory, pids) {
            (Some(memory), Some(pids)) => {
                let memory = memory.join(PARENT).join(host_key);
                let pids = pids.join(PARENT).join(host_key);
                for dir in [&memory, &pids] {
                    make(dir, create)
                        .map_err(|e| format!("cgroup {} is not writable: {e}", dir.display()))?;
                }
                let cpu = cpu
                    .map(|dir| dir.join(PARENT).join(host_key)).filter(|dir| make(dir, create).is_ok());
                Ok(Tree::V1 { memory, pids, cpu })
            }
            _ => Err("no cgroup with the memory and pids controllers: neither delegated cgroup v2 (memory, pids in cgroup.subtree_control) nor cgroup v1 hierarchies of both".to_owned()),
        }
    }

    fn parents(&self) -> Vec<PathBuf> {
        match self {
            Tree::V2 { parent, .. } => vec![parent.clone()],
            Tree::V1 { memory, pids, cpu } => {
                let mut dirs = vec![pids.clone(), memory.clone()];
                dirs.extend(cpu.clone());
                dirs
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Tree::V2 { parent, .. } => format!("cgroup v2 at {}", parent.display()),
            Tree::V1 { pids, .. } => format!("cgroup v1 (memory, pids, cpu) at {}", pids.display()),
        }
    }

    /// The cgroup of sandbox `id`, made, with `limits` set.
    pub fn create(&self, id: &str, limits: Limits) -> io::Result<Group> {
        let group = self.group(id);
        for dir in &group.dirs {
            std::fs::create_dir_all(dir)?;
        }
        let memory = (limits.memory_mb.saturating_mul(1024 * 1024)).to_string();
        let pids = limits.pids.to_string();
        let quota = limits
            .cpus
            .map(|cpus| ((cpus * CPU_PERIOD_US as f64) as u64).max(1000));
        match self {
            Tree::V2 { parent, cpu } => {
                let dir = parent.join(id);
                std::fs::write(dir.join("memory.max"), &memory)?;
                // No swap: the limit is the limit.
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                std::fs::write(dir.join("pids.max"), &pids)?;
                if let (Some(quota), true) = (quota, cpu) {
                    std::fs::write(dir.join("cpu.max"), format!("{quota} {CPU_PERIOD_US}"))?;
                }
            }
            Tree::V1 {
                memory: memory_dir,
                pids: pids_dir,
                cpu,
            } => {
                let mem = memory_dir.join(id);
                std::fs::write(mem.join("memory.limit_in_bytes"), &memory)?;
                let _ = std::fs::write(mem.join("memory.memsw.limit_in_bytes"), &memory);
                std::fs::write(pids_dir.join(id).join("pids.max"), &pids)?;
                if let (Some(quota), Some(cpu)) = (quota, cpu) {
                    let dir = cpu.join(id);
                    std::fs::write(dir.join("cpu.cfs_period_us"), CPU_PERIOD_US.to_string())?;
                    std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
                }
            }
        }
        Ok(group)
    }

    /// The (possibly absent) cgroup of sandbox `id`.
    pub fn group(&self, id: &str) -> Group {
        Group {
            dirs: self
                .parents()
                .iter()
                .map(|parent| parent.join(id))
                .collect(),
            v2: matches!(self, Tree::V2 { .. }),
        }
    }

    /// Removes this host's (empty) directories, as it stops.
    pub fn remove(&self) {
        for parent in self.parents() {
            let _ = std::fs::remove_dir(parent);
        }
    }

    /// Names of the sandbox cgroups that exist now (a previous host's).
    pub fn existing(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .parents()
            .iter()
            .filter_map(|parent| std::fs::read_dir(parent).ok())
            .flat_map(|entries| entries.flatten())
            .filter(|entry| entry.path().is_dir())
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| crate::sandbox::layout::valid_id(name))
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

impl Group {
    /// The `cgroup.procs` files a process writes itself into to join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .map(|dir| dir.join("cgroup.procs"))
            .collect()
    }

    /// Processes in the sandbox now.
    pub fn members(&self) -> Vec<i32> {
        let Some(first) = self.dirs.first() else {
            return Vec::new();
        };
        std::fs::read_to_string(first.join("cgroup.procs"))
            .map(|text| {
                text.lines()
                    .filter_map(|line| line.trim().parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Kills every process in it and removes the cgroup(s). Idempotent.
    pub async fn destroy(&self) {
        if self.v2 {
            if let Some(dir) = self.dirs.first() {
                let _ = std::fs::write(dir.join("cgroup.kill"), "1");
            }
        }
        for _ in 0..KILL_ROUNDS {
            let members = self.members();
            if members.is_empty() {
                break;
            }
            for pid in members {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for dir in &self.dirs {
            remove_when_empty(dir).await;
        }
    }
}

/// Makes `dir`, or (`create` false) checks it could be made.
fn make(dir: &Path, create: bool) -> Result<(), String> {
    if create {
        return std::fs::create_dir_all(dir).map_err(|e| e.to_string());
    }
    let existing = dir.ancestors().find(|a| a.exists()).unwrap_or(dir);
    nix::unistd::access(existing, nix::unistd::AccessFlags::W_OK).map_err(|e| e.to_string())
}

/// `rmdir` a cgroup, retrying while the killed processes are reaped.
async fn remove_when_empty(dir: &Path) {
    for _ in 0..200 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    tracing::warn!(cgroup = %dir.display(), "could not remove a sandbox cgroup");
}

/// The v2 tree when the host's cgroup2 directory hands memory and pids to
/// its children (`cgroup.subtree_control`: delegated, as a service unit
/// with `Delegate=yes` whose runner runs in a leaf of its own):
/// `runner-sandboxes` beneath it, with those controllers enabled.
fn v2_tree(mountinfo: &str, own: &str, host_key: &str) -> Option<Tree> {
    let dir = crate::exec::cgroup::locate(mountinfo, own)?;
    let subtree = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    let has = |name: &str| subtree.split_whitespace().any(|c| c == name);
    if !(has("memory") && has("pids")) {
        return None;
    }
    let parent = dir.join(PARENT);
    std::fs::create_dir_all(&parent).ok()?;
    let mut wanted = String::from("+memory +pids");
    if has("cpu") {
        wanted.push_str(" +cpu");
    }
    std::fs::write(parent.join("cgroup.subtree_control"), &wanted).ok()?;
    let parent = parent.join(host_key);
    std::fs::create_dir_all(&parent).ok()?;
    std::fs::write(parent.join("cgroup.subtree_control"), &wanted).ok()?;
    Some(Tree::V2 {
        parent,
        cpu: has("cpu"),
    })
}

/// The host's own cgroup directory in the v1 hierarchy of `controller`.
fn v1_dir(mountinfo: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let _id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_owned())
    })?;
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split_whitespace();
        if after.next()? != "cgroup" {
            return None;
        }
        let super_options = after.nth(1)?;
        if !super_options.split(',').any(|option| option == controller) {
            return None;
        }
        let mut fields = before.split_whitespace();
        let root = fields.nth(3)?;
        let point = fields.next()?;
        let relative = path.strip_prefix(root).unwrap_or(&path);
        Some(Path::new(point).join(relative.trim_start_matches('/')))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_directories_follow_the_mount_and_our_path() {
        let mountinfo = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
";
        let own = "4:memory:/a/b\n2:cpu,cpuacct:/\n";
        assert_eq!(
            v1_dir(mountinfo, own, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
        );
        assert_eq!(
            v1_dir(mountinfo, own, "cpu"),
            Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct"))
        );
        assert_eq!(v1_dir(mountinfo, own, "pids"), None);
    }
}
