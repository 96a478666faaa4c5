//! Self-update: finds the newest release on a mirror, verifies it, and
//! replaces the running executable; and rolls that back.
//!
//! # Trust chain
//!
//! The release key's public half is given to the build and baked into the
//! binary ([`signature::trust_root`]); a build given none has self-update
//! off ([`UpdateError::NoReleaseKey`]). `SHA256SUMS.sig` must verify
//! (ed25519, `verify_strict`) over the exact bytes of `SHA256SUMS`; the line
//! for `runner-<os>-<arch>` in that file gives the SHA-256 the downloaded
//! binary must have. The mirror itself (often the relay) is not trusted: a
//! compromised mirror can withhold updates but cannot make a runner install
//! bytes the release key did not sign.
//!
//! # Order of checks
//!
//! 1. `releases/latest` names the version (checked to be a safe path segment).
//! 2. `SHA256SUMS` and `SHA256SUMS.sig` are fetched; the signature is checked
//!    before the binary is downloaded, so a bad release costs two small files.
//! 3. The binary streams into a hidden file beside the executable while it is
//!    hashed; the byte count must equal `Content-Length`.
//! 4. Hash, then the ELF/Mach-O machine field, are checked.
//! 5. Only then: fsync, chmod 0755, hard link the old binary to
//!    `runner.previous`, rename the new one over the executable.
//!
//! Any failure before step 5 removes the staged file and leaves the installed
//! binary byte-for-byte untouched; each failure has its own [`UpdateError`].
//!
//! # For the run loop
//!
//! The relay puts `latest_version` in `HeartbeatAck` when it knows a newer
//! release (`runner-relay --releases-dir`). The run loop should, at most once
//! per version and between calls (none in flight):
//!
//! 1. `let exe = current_exe()?; let mirror = Mirror::new(&relay_url)?;`
//!    `let applied = apply_update(&mirror, &latest, &exe, Progress::Hidden).await;`
//!    On `Err`, log it (the message names what failed) and keep running the
//!    old binary; remember the version so it is not retried every heartbeat.
//!    `UpdateError::is_unreachable` tells a retry-later error from a
//!    rejected release.
//! 2. On `Ok`, `mark_pending(&dirs.state, &PendingUpdate { version,
//!    previous_version: CURRENT_VERSION.into(), path: exe })`, close the
//!    session cleanly and exit with a code the service manager restarts
//!    (systemd `Restart=always` / launchd `KeepAlive`); the new binary starts.
//! 3. At start, `if let Some(p) = pending(&dirs.state)`: give the first
//!    connection a deadline (e.g. 2 minutes). On the first healthy session
//!    (`Welcome` received) call `confirm(&dirs.state)`. If the deadline passes
//!    first, call [`rollback`]`(&p.path)`, `confirm` (to drop the marker) and
//!    exit to be restarted as the old version.
//!
//! A service running as an unprivileged user cannot write `/usr/local/bin`:
//! there `apply_update` fails with an I/O error, and the update is left to
//! `sudo runner update` (or the install script); the run loop then only logs
//! that a newer version exists.

mod arch;
mod download;
mod pending;
mod replace;
pub mod signature;
mod sums;

use runner_proto::version;
use std::path::{Path, PathBuf};

pub use download::Mirror;
pub use pending::{confirm, mark_pending, pending, PendingUpdate};
pub use replace::previous_path;

/// Environment variable naming the mirror for `runner update` (default: the
/// registered relay URL).
pub const MIRROR_ENV: &str = crate::env_vars::UPDATE_MIRROR;

/// This binary's version.
pub const CURRENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The release file name for this machine, e.g. `runner-linux-x86_64`,
/// with Rust's names for the OS and architecture.
pub fn asset_name() -> String {
    format!("runner-{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// Whether to draw a download progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Never (services, tests, JSON output).
    Hidden,
    /// On stderr when stderr is a terminal.
    OnTerminal,
}

/// Why an update or rollback did not happen. Every variant before
/// installation leaves the installed binary untouched.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("mirror URL '{0}' is not an http(s) URL")]
    BadMirror(String),
    #[error("request to {url} failed")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is missing (HTTP 404)")]
    NotFound { url: String },
    #[error("{url} is larger than the {limit}-byte limit")]
    TooLarge { url: String, limit: u64 },
    #[error("download of {url} was truncated: the server announced {expected} bytes, {received} arrived")]
    Truncated {
        url: String,
        expected: u64,
        received: u64,
    },
    #[error("download of {url} stalled: nothing for {seconds}s after {received} bytes")]
    Stalled {
        url: String,
        seconds: u64,
        received: u64,
    },
    #[error("the mirror's latest version '{0}' is not a version")]
    BadVersion(String),
    #[error("release {version} has no signature ({url} is missing): refusing an unsigned release")]
    MissingSignature { version: String, url: String },
    #[error("bad signature on SHA256SUMS of release {version}: {reason}")]
    BadSignature { version: String, reason: String },
    #[error("release key is unusable: {0}")]
    BadKey(String),
    #[error("self-update is off: this build of runner trusts no release key (it was built without RUNNER_RELEASE_PUBKEY)")]
    NoReleaseKey,
    #[error("SHA256SUMS of release {version} is malformed: {reason}")]
    BadSums { version: String, reason: String },
    #[error("SHA256SUMS of release {version} has no line for '{asset}' (no build for this OS and architecture)")]
    NoChecksum { version: String, asset: String },
    #[error(
        "checksum mismatch for '{asset}': SHA256SUMS says {expected}, the download is {actual}"
    )]
    ChecksumMismatch {
        asset: String,
        expected: String,
        actual: String,
    },
    #[error("'{asset}' is not an executable for this machine ({os} {arch}): {reason}", os = std::env::consts::OS, arch = std::env::consts::ARCH)]
    WrongArch { asset: String, reason: String },
    #[error("file system error at {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot find the running executable")]
    CurrentExe(#[source] std::io::Error),
    #[error("no previous binary to roll back to: {} does not exist", path.display())]
    NoPrevious { path: PathBuf },
}

impl UpdateError {
    /// True when the mirror could not be reached or answered an HTTP error:
    /// worth retrying later, unlike a release that failed verification.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            UpdateError::Http { .. } | UpdateError::Status { .. } | UpdateError::Stalled { .. }
        )
    }
}

/// The running executable, symlinks resolved (so an update replaces the
/// real file, not a link to it).
pub fn current_exe() -> Result<PathBuf, UpdateError> {
    let exe = std::env::current_exe().map_err(UpdateError::CurrentExe)?;
    std::fs::canonicalize(&exe).map_err(|source| UpdateError::Io { path: exe, source })
}

/// Reads `releases/latest` from the mirror.
pub async fn latest_version(mirror: &Mirror) -> Result<String, UpdateError> {
    let url = mirror.url("releases/latest");
    let body = mirror
        .small_file("releases/latest")
        .await?
        .ok_or(UpdateError::NotFound { url })?;
    let text = String::from_utf8_lossy(&body).trim().to_owned();
    if !version::is_valid(&text) {
        return Err(UpdateError::BadVersion(text.chars().take(64).collect()));
    }
    Ok(text)
}

/// What [`apply_update`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Applied {
    /// The version installed.
    pub version: String,
    /// The executable that was replaced.
    pub path: PathBuf,
    /// Where the replaced binary was kept, for [`rollback`].
    pub previous: PathBuf,
    /// SHA-256 of the installed bytes, as listed in the signed SHA256SUMS.
    pub sha256: String,
    pub bytes: u64,
}

/// Downloads `version` from `mirror`, verifies it, and replaces `exe` with it
/// (keeping the old binary as `<exe>.previous`). On any error `exe` is left
/// as it was.
pub async fn apply_update(
    mirror: &Mirror,
    version: &str,
    exe: &Path,
    progress: Progress,
) -> Result<Applied, UpdateError> {
    let key = signature::release_key()?;
    if !version::is_valid(version) {
        return Err(UpdateError::BadVersion(version.chars().take(64).collect()));
    }
    let asset = asset_name();
    let base = format!("releases/download/{version}");

    let sums_path = format!("{base}/SHA256SUMS");
    let sums = mirror
        .small_file(&sums_path)
        .await?
        .ok_or_else(|| UpdateError::NotFound {
            url: mirror.url(&sums_path),
        })?;
    let signature_path = format!("{base}/SHA256SUMS.sig");
    let signature_file =
        mirror
            .small_file(&signature_path)
            .await?
            .ok_or_else(|| UpdateError::MissingSignature {
                version: version.to_owned(),
                url: mirror.url(&signature_path),
            })?;
    signature::verify(&key, &sums, &signature_file, version)?;
    let expected = sums::expected_sha256(&sums, &asset, version)?;

    let staged = replace::staging_path(exe);
    let result = download_and_install(
        mirror,
        &format!("{base}/{asset}"),
        &asset,
        &expected,
        &staged,
        exe,
        progress,
    )
    .await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&staged).await;
    }
    let (previous, bytes) = result?;
    tracing::info!(%version, path = %exe.display(), sha256 = %expected, "runner updated");
    Ok(Applied {
        version: version.to_owned(),
        path: exe.to_path_buf(),
        previous,
        sha256: expected,
        bytes,
    })
}

async fn download_and_install(
    mirror: &Mirror,
    path: &str,
    asset: &str,
    expected: &str,
    staged: &Path,
    exe: &Path,
    progress: Progress,
) -> Result<(PathBuf, u64), UpdateError> {
    let io = |source| UpdateError::Io {
        path: staged.to_path_buf(),
        source,
    };
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(staged)
        .await
        .map_err(io)?;
    let downloaded = mirror
        .binary_to_file(path, &mut file, staged, progress)
        .await?;
    if downloaded.sha256 != expected {
        return Err(UpdateError::ChecksumMismatch {
            asset: asset.to_owned(),
            expected: expected.to_owned(),
            actual: downloaded.sha256,
        });
    }
    file.sync_all().await.map_err(io)?;
    drop(file);

    let staged_owned = staged.to_path_buf();
    let exe_owned = exe.to_path_buf();
    let asset_owned = asset.to_owned();
    // File-system work that blocks: off the async workers.
    let previous = tokio::task::spawn_blocking(move || {
        let header = replace::read_header(&staged_owned)?;
        arch::check_header(&header).map_err(|reason| UpdateError::WrongArch {
            asset: asset_owned,
            reason,
        })?;
        replace::make_executable(&staged_owned)?;
        replace::install_staged(&staged_owned, &exe_owned)
    })
    .await
    .map_err(|error| UpdateError::Io {
        path: staged.to_path_buf(),
        source: std::io::Error::other(error),
    })??;
    Ok((previous, downloaded.bytes))
}

/// Puts `<exe>.previous` back in place of `exe`. Returns the restored path.
pub fn rollback(exe: &Path) -> Result<PathBuf, UpdateError> {
    let restored = replace::rollback(exe)?;
    tracing::info!(path = %restored.display(), "runner rolled back to the previous binary");
    Ok(restored)
}
