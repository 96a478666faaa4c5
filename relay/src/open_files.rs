//! The open-file limit: a relay needs one descriptor per runner socket.
//!
//! Most systems start a process with a soft limit of 1024 and a much
//! higher hard limit. Left alone, a relay would stop accepting runners at
//! about a thousand, with `EMFILE` in its log. At start the relay raises
//! its soft limit to the hard one, as Go's runtime does for every program
//! (since 1.19); raising the hard limit needs privilege and is left to the
//! service manager (`LimitNOFILE=` under systemd).

/// The soft limit before and after [`raise`], and the hard limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub before: u64,
    pub now: u64,
    pub hard: u64,
}

/// Below this many descriptors the relay warns at start: it would hold
/// only about that many runners.
pub const FEW: u64 = 4096;

/// macOS refuses an unlimited soft limit; this is its `OPEN_MAX`.
#[cfg(unix)]
const MACOS_OPEN_MAX: u64 = 10_240;

/// Raises the soft RLIMIT_NOFILE to the hard limit; `None` where the limit
/// cannot be read.
#[cfg(unix)]
pub fn raise() -> Option<OpenFiles> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (before, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    let mut now = before;
    for wanted in [hard, MACOS_OPEN_MAX] {
        if wanted > before && setrlimit(Resource::RLIMIT_NOFILE, wanted, hard).is_ok() {
            now = wanted;
            break;
        }
    }
    Some(OpenFiles { before, now, hard })
}

#[cfg(not(unix))]
pub fn raise() -> Option<OpenFiles> {
    None
}

/// Says what the limit allows: info when it was raised, a warning when it
/// stays low.
pub fn report(limits: Option<OpenFiles>) {
    let Some(OpenFiles { before, now, hard }) = limits else {
        return;
    };
    if now < FEW {
        tracing::warn!(
            soft = now,
            hard,
            "the open-file limit allows only about {now} runners (one descriptor per socket); \
             raise it with LimitNOFILE= (systemd) or ulimit -n"
        );
    } else if now > before {
        tracing::info!(from = before, to = now, hard, "raised the open-file limit");
    }
}
