//! What the process layer starts: the program, its argv, environment and
//! working directory ([`Spec`], made only from a checked command), and how
//! its processes are kept together ([`Isolation`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;

#[cfg(doc)]
use super::cgroup::CallGroup;

/// What to run: made from a [`crate::gate::CheckedCommand`] by
/// [`super::plan`], or by this layer's own tests.
#[derive(Debug, Clone)]
pub(in crate::exec) struct Spec {
    pub(in crate::exec) program: OsString,
    /// The program's `argv[0]` when it is not `program` (a path resolved
    /// ahead of time, run under the name it was asked by).
    pub(in crate::exec) arg0: Option<String>,
    pub(in crate::exec) args: Vec<String>,
    pub(in crate::exec) workdir: PathBuf,
    pub(in crate::exec) env: HashMap<String, String>,
    /// Written to stdin, which is then closed; `None`: stdin is /dev/null.
    pub(in crate::exec) stdin: Option<Vec<u8>>,
    /// How the process gets into the call's cgroup, where there is one.
    pub(in crate::exec) join: Join,
}

/// How a call's first process gets into its cgroup ([`CallGroup`]) where
/// it cannot be created inside it: the process moves itself in before it
/// runs anything of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::exec) enum Join {
    /// `program` is bash and `args` are `["-c", SCRIPT]`: the script's first
    /// command moves the shell ([`CallGroup::join_then`]), no extra process.
    BashScript,
    /// Under the `sh` wrapper ([`CallGroup::wrap`]), which moves itself
    /// and then `exec`s the program: one more `exec`, of a shell that
    /// starts faster than bash. The runner moving the process right after
    /// the spawn would race with the process's first forks (`setsid -w`'s
    /// child forks before such a write lands).
    Wrapper,
}

/// Whether a call's processes get a cgroup of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A cgroup where the runner can make one, else the process group and
    /// the marker. The process is created inside it where `clone3` allows
    /// ([`super::spawn`]), else it moves itself in ([`Join`]).
    CgroupIfAvailable,
    /// A cgroup as above, always joined by the process itself: what runs
    /// where `clone3` is refused (tests and measurements).
    CgroupSelfJoin,
    /// The process group and the marker only.
    ProcessGroup,
}
