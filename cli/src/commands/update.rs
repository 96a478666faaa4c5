//! `runner update [--check] [--rollback]`: self-update from a release mirror.
//!
//! Exit codes: 0 when up to date or updated; `--check` exits
//! [`exit::UPDATE_AVAILABLE`] when a newer release exists (with or without
//! `--json`, whose document says the same); a release that fails verification
//! exits [`exit::UPDATE_FAILED`]; an unreachable mirror [`exit::UNREACHABLE`].
//! A build that trusts no release key has self-update off: `update` exits
//! [`exit::UPDATE_OFF`] before contacting the mirror, and `--check` still
//! compares versions but says that it is off.

use std::io::IsTerminal;

use anyhow::Result;
use serde_json::json;

use crate::agent::autoupdate::{self, StepOutcome};
use crate::args::UpdateArgs;
use crate::config::{ConfigFile, Dirs};
use crate::exit::{self, ExitError};
use crate::output;
use crate::update::{self, Mirror, Progress, UpdateError, CURRENT_VERSION};

pub async fn run(dirs: &Dirs, args: UpdateArgs) -> Result<u8> {
    if args.rollback {
        return rollback(&args);
    }
    let trust = update::signature::trust_root()
        .map_err(|error| failed(error, "cannot tell which release key to trust"))?;
    if args.service_step {
        if trust.is_off() {
            tracing::info!("service step: self-update is off ({})", trust.describe());
            return Ok(exit::OK);
        }
        return service_step(dirs, &args).await;
    }
    if trust.is_off() && !args.check {
        return Err(failed(
            UpdateError::NoReleaseKey,
            "cannot update this binary",
        ));
    }
    let mirror = Mirror::new(&mirror_url(dirs, &args)?)
        .map_err(|error| failed(error, "no usable mirror"))?;
    let latest = update::latest_version(&mirror).await.map_err(|error| {
        failed(
            error,
            &format!("cannot read the latest version from {}", mirror.base()),
        )
    })?;
    let newer = runner_proto::version::is_newer(&latest, CURRENT_VERSION);

    if args.check {
        if args.json {
            output::json(&json!({
                "current_version": CURRENT_VERSION,
                "latest_version": latest,
                "update_available": newer,
                "mirror": mirror.base(),
                "self_update": !trust.is_off(),
            }))?;
        } else if newer && trust.is_off() {
            output::note(&format!(
                "a newer version is available: {CURRENT_VERSION} -> {latest}; self-update is {}, so install it with install.sh or your package manager",
                trust.describe()
            ));
        } else if newer {
            output::note(&format!(
                "an update is available: {CURRENT_VERSION} -> {latest} (run `runner update`)"
            ));
        } else {
            output::note(&format!(
                "runner {CURRENT_VERSION} is up to date (latest on {} is {latest})",
                mirror.base()
            ));
        }
        return Ok(if newer {
            exit::UPDATE_AVAILABLE
        } else {
            exit::OK
        });
    }

    if !newer {
        if args.json {
            output::json(&json!({
                "updated": false,
                "current_version": CURRENT_VERSION,
                "latest_version": latest,
            }))?;
        } else {
            output::note(&format!(
                "runner {CURRENT_VERSION} is up to date (latest on {} is {latest})",
                mirror.base()
            ));
        }
        return Ok(exit::OK);
    }

    let exe = update::current_exe().map_err(|error| failed(error, "cannot update"))?;
    if !args.yes
        && std::io::stdin().is_terminal()
        && !confirm(&format!(
            "update {} from {CURRENT_VERSION} to {latest}?",
            exe.display()
        ))?
    {
        output::note("not updated");
        return Ok(exit::OK);
    }
    let progress = if args.json {
        Progress::Hidden
    } else {
        Progress::OnTerminal
    };
    if !args.json {
        output::note(&format!(
            "downloading runner {latest} for {} from {}",
            update::asset_name(),
            mirror.base()
        ));
    }
    let applied = update::apply_update(&mirror, &latest, &exe, progress)
        .await
        .map_err(|error| {
            failed(
                error,
                &format!(
                    "update to {latest} failed; {} was left unchanged",
                    exe.display()
                ),
            )
        })?;
    if args.json {
        output::json(&json!({
            "updated": true,
            "from_version": CURRENT_VERSION,
            "to_version": applied.version,
            "path": applied.path,
            "previous": applied.previous,
            "sha256": applied.sha256,
            "bytes": applied.bytes,
        }))?;
    } else {
        output::note(&format!(
            "updated {} from {CURRENT_VERSION} to {} (signature and SHA-256 verified); the old binary is kept as {}",
            applied.path.display(),
            applied.version,
            applied.previous.display()
        ));
        output::note("undo with `runner update --rollback`; restart a running service to use the new version");
    }
    Ok(exit::OK)
}

fn rollback(args: &UpdateArgs) -> Result<u8> {
    let exe = update::current_exe().map_err(|error| failed(error, "cannot roll back"))?;
    let restored = update::rollback(&exe).map_err(|error| failed(error, "rollback failed"))?;
    if args.json {
        output::json(&json!({ "rolled_back": true, "path": restored }))?;
    } else {
        output::note(&format!(
            "restored the previous binary at {}",
            restored.display()
        ));
    }
    Ok(exit::OK)
}

/// `--service-step`: see [`autoupdate::service_step`]. The mirror is
/// --mirror / RUNNER_UPDATE_MIRROR, else RUNNER_URL (both come from the
/// unit's EnvironmentFile), else the registration.
async fn service_step(dirs: &Dirs, args: &UpdateArgs) -> Result<u8> {
    let exe = match update::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            tracing::error!(error = %crate::client::error_chain(&error), "service step: cannot find this executable");
            return Ok(exit::OK);
        }
    };
    let mirror = args
        .mirror
        .clone()
        .or_else(|| std::env::var(crate::env_vars::URL).ok())
        .or_else(|| {
            ConfigFile::load(dirs)
                .ok()
                .and_then(|config| config.registration.map(|r| r.url))
        })
        .filter(|m| !m.trim().is_empty());
    let outcome = autoupdate::service_step(&dirs.state, &exe, mirror.as_deref()).await;
    match &outcome {
        StepOutcome::Nothing => {}
        StepOutcome::Installed { version } => {
            tracing::info!(%version, path = %exe.display(), "service step: update installed; starting it on probation")
        }
        StepOutcome::RolledBack { version, reason } => {
            tracing::error!(%version, %reason, "service step: update rolled back")
        }
        StepOutcome::Refused { version, reason } => {
            tracing::error!(%version, %reason, "service step: update not installed")
        }
    }
    if args.json {
        output::json(&outcome)?;
    }
    Ok(exit::OK)
}

/// `--mirror`/RUNNER_UPDATE_MIRROR, else the registered relay, which serves
/// the release mirror.
fn mirror_url(dirs: &Dirs, args: &UpdateArgs) -> Result<String> {
    if let Some(mirror) = args.mirror.as_deref().filter(|m| !m.trim().is_empty()) {
        return Ok(mirror.trim().to_owned());
    }
    match ConfigFile::load(dirs)?.registration {
        Some(registration) => Ok(registration.url),
        None => Err(ExitError::new(exit::CONFIG, "no mirror to update from")
            .with_hint(format!(
                "pass --mirror URL, set {}, or `runner register` with a relay (the relay serves the releases)",
                update::MIRROR_ENV
            ))
            .into()),
    }
}

/// Wraps an [`UpdateError`] under a summary line carrying the exit code:
/// `error: SUMMARY` / `Caused by: <what failed>` / `Caused by: <transport>`.
fn failed(error: UpdateError, summary: &str) -> anyhow::Error {
    let (code, hint) = match &error {
        UpdateError::NoPrevious { .. } => (
            exit::FAILURE,
            Some("`runner update` keeps the binary it replaces; there was none to restore"),
        ),
        UpdateError::BadMirror(_) => (exit::CONFIG, Some("use the form https://relay.example.com")),
        UpdateError::NoReleaseKey => (
            exit::UPDATE_OFF,
            Some("install new versions with install.sh or your package manager, or build runner with RUNNER_RELEASE_PUBKEY (scripts/make-release.sh does)"),
        ),
        error if error.is_unreachable() => (exit::UNREACHABLE, None),
        UpdateError::NotFound { .. } => (
            exit::UNREACHABLE,
            Some("is this URL a release mirror (with releases/latest)?"),
        ),
        UpdateError::Io { .. } => (
            exit::UPDATE_FAILED,
            Some("updating needs write access to the executable's directory (try sudo)"),
        ),
        _ => (exit::UPDATE_FAILED, None),
    };
    let mut exit_error = ExitError::new(code, summary);
    if let Some(hint) = hint {
        exit_error = exit_error.with_hint(hint);
    }
    anyhow::Error::new(error).context(exit_error)
}

fn confirm(question: &str) -> Result<bool> {
    let answer = output::read_secret_line(&format!("{question} [y/N] "))?;
    Ok(matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes"))
}
