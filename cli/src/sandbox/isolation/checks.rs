//! What this machine lacks to run sandboxes, each named with its fix:
//! `runner doctor --sandbox-host` prints them, and `runner sandbox-host`
//! refuses to start while any is missing (never a sandbox without
//! isolation).

use std::path::Path;

use super::limits::Tree;
use crate::exec::program::find_on_path;

/// One requirement and how it stands.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub name: &'static str,
    /// What was found, or what is missing.
    pub detail: String,
    /// How to fix it; `None` when met.
    pub fix: Option<String>,
}

impl Requirement {
    pub fn met(&self) -> bool {
        self.fix.is_none()
    }
}

/// Every requirement, in order.
pub fn requirements() -> Vec<Requirement> {
    let mut all = Vec::new();
    let mut add = |name: &'static str, outcome: Result<String, (String, String)>| {
        all.push(match outcome {
            Ok(detail) => Requirement {
                name,
                detail,
                fix: None,
            },
            Err((detail, fix)) => Requirement {
                name,
                detail,
                fix: Some(fix),
            },
        })
    };
    add("root", root());
    add("bubblewrap", bubblewrap());
    add("user namespaces", user_namespaces());
    add("overlay", overlay());
    add("cgroups", cgroups());
    all
}

/// The requirements not met.
pub fn missing() -> Vec<Requirement> {
    requirements().into_iter().filter(|r| !r.met()).collect()
}

type Outcome = Result<String, (String, String)>;

fn root() -> Outcome {
    if nix::unistd::geteuid().is_root() {
        Ok("running as root".to_owned())
    } else {
        Err((
            "not running as root: the host mounts each sandbox's overlay and makes its cgroup".to_owned(),
            "run `runner sandbox-host` as root (its sandboxes run as uid 0 in their own user namespace)".to_owned(),
        ))
    }
}

fn bubblewrap() -> Outcome {
    match find_on_path("bwrap") {
        Some(path) => Ok(format!("{}", path.display())),
        None => Err((
            "bwrap is not on PATH".to_owned(),
            "install bubblewrap (`apt-get install bubblewrap`, `dnf install bubblewrap`)"
                .to_owned(),
        )),
    }
}

fn user_namespaces() -> Outcome {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Err((
            "user namespaces are off (/proc/sys/user/max_user_namespaces is 0)".to_owned(),
            "sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d/ to keep it)"
                .to_owned(),
        ));
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Err((
            "user namespaces are restricted (kernel.unprivileged_userns_clone is 0)".to_owned(),
            "sysctl -w kernel.unprivileged_userns_clone=1".to_owned(),
        ));
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Err((
            "AppArmor restricts user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1)".to_owned(),
            "give bwrap an AppArmor profile allowing `userns` (Ubuntu 24.04 ships one in /etc/apparmor.d/bwrap-userns-restrict), or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0".to_owned(),
        ));
    }
    if !Path::new("/proc/self/ns/user").exists() {
        return Err((
            "this kernel has no user namespaces".to_owned(),
            "use a kernel built with CONFIG_USER_NS".to_owned(),
        ));
    }
    Ok("available".to_owned())
}

fn overlay() -> Outcome {
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if filesystems
        .lines()
        .any(|line| line.split_whitespace().last() == Some("overlay"))
    {
        Ok("overlay file system available".to_owned())
    } else {
        Err((
            "the kernel offers no overlay file system".to_owned(),
            "modprobe overlay (and add it to /etc/modules-load.d/)".to_owned(),
        ))
    }
}

fn cgroups() -> Outcome {
    match Tree::probe() {
        Ok(tree) => Ok(tree.describe()),
        Err(why) => Err((
            why,
            "run the host as root on a machine with cgroup v1 memory and pids hierarchies, or with cgroup v2 delegating memory and pids to it (systemd: Delegate=yes)".to_owned(),
        )),
    }
}
