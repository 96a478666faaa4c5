//! Exit codes of `runner`, decided in one place and documented in the man page.
//!
//! `runner invoke` exits with the tool's own exit code when the tool ran;
//! the codes below are for everything that stopped it from running. They sit
//! in the 64–78 range (BSD sysexits) so that a tool's usual 1/2/127 stays
//! distinguishable from a relay-side failure.

use std::fmt;

/// Success.
pub const OK: u8 = 0;
/// Any failure without a more specific code.
pub const FAILURE: u8 = 1;
/// Command-line usage error (clap's own code), and a destructive command
/// without --yes when there is no terminal to ask on.
pub const USAGE: u8 = 2;
/// `runner run` stopped because the relay told it to: another runner
/// replaced it, its token was revoked, or its environment was deleted.
/// Listed in the service unit's `RestartPreventExitStatus=` so a service
/// manager does not restart it into a fight.
pub const STOPPED_BY_RELAY: u8 = 10;
/// `update --check`: a newer release is available (not a failure; lets a
/// script write `runner update --check || runner update --yes`).
pub const UPDATE_AVAILABLE: u8 = 11;
/// `update`: the download failed verification (signature, checksum, length,
/// architecture) or could not be installed; the old binary is untouched.
pub const UPDATE_FAILED: u8 = 12;
/// `runner run` installed a verified update and exits for the service
/// manager to start the new binary (by hand it re-executes instead).
pub const RESTART_FOR_UPDATE: u8 = 13;
/// `update`: self-update is off because this build trusts no release key
/// (it was built without `RUNNER_RELEASE_PUBKEY`); nothing was downloaded.
pub const UPDATE_OFF: u8 = 14;
/// `sandbox-host`: this machine cannot isolate sandboxes (bubblewrap,
/// user namespaces, overlay, cgroups or root missing; `runner doctor
/// --sandbox-host` names each); the host refused to start rather than run
/// sandboxes without isolation.
pub const CANNOT_SANDBOX: u8 = 15;
/// The relay refused the request as malformed (HTTP 400).
pub const BAD_REQUEST: u8 = 64;
/// No or a bad API key / token (HTTP 401).
pub const UNAUTHORIZED: u8 = 65;
/// The environment's policy or the runner's permission file refused the
/// call, or an approval was denied or expired (HTTP 403).
pub const FORBIDDEN: u8 = 66;
/// No such environment or tool (HTTP 404).
pub const NOT_FOUND: u8 = 67;
/// No runner is connected to the environment, or the runner's connection
/// dropped during the call (HTTP 503).
pub const NO_RUNNER: u8 = 69;
/// The relay refused for now: too many failed attempts from this address
/// (HTTP 429). Retry after the time it names.
pub const RATE_LIMITED: u8 = 73;
/// The relay could not be reached, or answered something unexpected;
/// `invoke`: lost mid-call, and not back within the time it asks again.
pub const UNREACHABLE: u8 = 76;
/// The call timed out and was cancelled (HTTP 504).
pub const TIMEOUT: u8 = 75;
/// Bad local configuration (missing registration, bad permission file).
pub const CONFIG: u8 = 78;

/// An error that carries its exit code and an optional hint for the user.
#[derive(Debug)]
pub struct ExitError {
    pub code: u8,
    pub message: String,
    pub hint: Option<String>,
}

impl ExitError {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        ExitError {
            code,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for ExitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

/// Table for the man page and `--help`: (code, meaning).
pub const TABLE: &[(u8, &str)] = &[
    (OK, "success (for `invoke`: the tool's own exit code when it ran)"),
    (FAILURE, "failure without a more specific code; a destructive command the person at the terminal did not confirm; `policy check`: denied"),
    (USAGE, "bad command-line usage; a destructive command (`env delete`, `token revoke`, `token generate --grace-hours 0`, `unregister`, `service uninstall --purge`) without --yes and without a terminal to ask on; `policy check`/`lint`: the permission file was refused"),
    (STOPPED_BY_RELAY, "`run` was stopped by the relay: replaced by another runner, token revoked, or environment deleted"),
    (UPDATE_AVAILABLE, "`update --check`: a newer release is available"),
    (UPDATE_FAILED, "`update`: the release failed verification or could not be installed; the installed binary is unchanged"),
    (RESTART_FOR_UPDATE, "`run` under a service manager: a verified update is ready; exits to be restarted into it (`run` started by hand re-executes itself instead)"),
    (UPDATE_OFF, "`update`: self-update is off: this build trusts no release key (built without RUNNER_RELEASE_PUBKEY); update with the install script or a package instead"),
    (CANNOT_SANDBOX, "`sandbox-host`: this machine cannot isolate sandboxes (bubblewrap, user namespaces, overlay, cgroups or root missing; `doctor --sandbox-host` names each); it refused to start rather than run sandboxes without isolation"),
    (BAD_REQUEST, "the relay refused the request as malformed (HTTP 400)"),
    (UNAUTHORIZED, "missing or bad API key or token (HTTP 401)"),
    (FORBIDDEN, "refused by the environment's policy or the runner's permission file, or the approval was denied or expired (HTTP 403)"),
    (NOT_FOUND, "no such environment or tool (HTTP 404)"),
    (NO_RUNNER, "no runner connected to the environment, or (`invoke`) its connection dropped during the call: runner_disconnected, the call id is in the hint (HTTP 503); `status --local`: this machine's runner is not running or not connected"),
    (TIMEOUT, "the call timed out and was stopped on the runner: its timeout (HTTP 504), or a tool's own shorter timeout_s (error code `timeout`; the output so far is printed)"),
    (RATE_LIMITED, "the relay is rate limiting this address after failed attempts (HTTP 429); retry later"),
    (UNREACHABLE, "the relay could not be reached or answered unexpectedly; `invoke` that loses the relay mid-call asks again with the same call id (never run twice) for up to 90 s before this, and names the call id to fetch its answer with later"),
    (CONFIG, "bad local configuration: not registered, not logged in, bad permission file"),
];
