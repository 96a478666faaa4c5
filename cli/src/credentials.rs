//! Where the registration token and the API key live on this machine.
//!
//! First choice is the OS secret store through `keyring` (Secret Service on
//! Linux desktops, Keychain on macOS). Where none answers (a headless box, a
//! system service) the secret goes to a file readable by its owner only
//! (0600, in a 0700 directory), and a file that others can read is refused.
//!
//! The Linux *kernel* keyring is deliberately not used: it does not survive a
//! reboot, and a reboot must never unregister a runner.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::args::CredentialStoreChoice;
use crate::config::{self, Dirs, SecretLocation};
use crate::exit::{self, ExitError};
use crate::secret::Secret;

/// How long a keychain may take to answer before we fall back to the file.
const KEYRING_TIMEOUT: Duration = Duration::from_secs(5);

/// Which secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    RegistrationToken,
    ApiKey,
}

impl SecretKind {
    fn name(self) -> &'static str {
        match self {
            SecretKind::RegistrationToken => "registration-token",
            SecretKind::ApiKey => "api-key",
        }
    }
}

/// The secret file's path for `kind`.
pub fn file_path(dirs: &Dirs, kind: SecretKind) -> PathBuf {
    dirs.config.join("credentials").join(kind.name())
}

/// Where the result went, for the user: "the OS keychain" or the file path.
pub fn describe(dirs: &Dirs, kind: SecretKind, location: SecretLocation) -> String {
    match location {
        SecretLocation::Keyring => "the OS keychain".to_owned(),
        SecretLocation::File => format!("{} (mode 0600)", file_path(dirs, kind).display()),
    }
}

/// Stores `secret`, returning where it went.
pub async fn store(
    dirs: &Dirs,
    kind: SecretKind,
    secret: &Secret,
    choice: CredentialStoreChoice,
) -> Result<SecretLocation> {
    match choice {
        CredentialStoreChoice::File => {
            store_file(dirs, kind, secret)?;
            Ok(SecretLocation::File)
        }
        CredentialStoreChoice::Keyring => {
            store_keyring(dirs, kind, secret).await?;
            Ok(SecretLocation::Keyring)
        }
        CredentialStoreChoice::Auto => match store_keyring(dirs, kind, secret).await {
            Ok(()) => {
                // A stale file from an earlier file-mode registration must
                // not linger next to the new keychain entry.
                remove_file_if_present(&file_path(dirs, kind))?;
                Ok(SecretLocation::Keyring)
            }
            Err(error) => {
                tracing::debug!(error = %format!("{error:#}"), "no usable OS keychain; using a file");
                store_file(dirs, kind, secret)?;
                Ok(SecretLocation::File)
            }
        },
    }
}

/// Loads the secret from where the config says it is.
pub async fn load(dirs: &Dirs, kind: SecretKind, location: SecretLocation) -> Result<Secret> {
    match location {
        SecretLocation::File => load_file(dirs, kind),
        SecretLocation::Keyring => {
            let entry_dirs = dirs.clone();
            let value = keyring_call(move || entry(&entry_dirs, kind)?.get_password()).await;
            match value {
                Ok(value) => Ok(Secret::new(value)),
                Err(error) => Err(ExitError::new(
                    exit::CONFIG,
                    format!(
                        "cannot read the {} from the OS keychain: {error:#}",
                        kind.name()
                    ),
                )
                .with_hint("run `runner register` again, or use --credential-store file")
                .into()),
            }
        }
    }
}

/// Removes the secret from both places; absent is fine.
pub async fn remove(dirs: &Dirs, kind: SecretKind) -> Result<()> {
    remove_file_if_present(&file_path(dirs, kind))?;
    let entry_dirs = dirs.clone();
    match keyring_call(move || entry(&entry_dirs, kind)?.delete_credential()).await {
        Ok(()) => Ok(()),
        Err(error) => {
            tracing::debug!(error = %format!("{error:#}"), "keychain entry not removed (absent or no keychain)");
            Ok(())
        }
    }
}

fn entry(dirs: &Dirs, kind: SecretKind) -> keyring::Result<keyring::Entry> {
    // Several runners (one per environment) may share a user account: the
    // config dir tells their entries apart.
    let service = format!("runner:{}", dirs.config.display());
    keyring::Entry::new(&service, kind.name())
}

async fn keyring_call<T: Send + 'static>(
    call: impl FnOnce() -> keyring::Result<T> + Send + 'static,
) -> Result<T> {
    let task = tokio::task::spawn_blocking(call);
    match tokio::time::timeout(KEYRING_TIMEOUT, task).await {
        Ok(Ok(result)) => result.map_err(anyhow::Error::from),
        Ok(Err(join)) => bail!("keychain call failed: {join}"),
        Err(_) => bail!("keychain did not answer within {KEYRING_TIMEOUT:?}"),
    }
}

async fn store_keyring(dirs: &Dirs, kind: SecretKind, secret: &Secret) -> Result<()> {
    let value = secret.expose().to_owned();
    let set_dirs = dirs.clone();
    keyring_call(move || entry(&set_dirs, kind)?.set_password(&value)).await?;
    // Read it back through a fresh entry: some stores accept a write and
    // keep nothing (a mock or a locked collection).
    let get_dirs = dirs.clone();
    let back = keyring_call(move || entry(&get_dirs, kind)?.get_password()).await?;
    if back != secret.expose() {
        bail!("the OS keychain did not keep the secret");
    }
    Ok(())
}

fn store_file(dirs: &Dirs, kind: SecretKind, secret: &Secret) -> Result<()> {
    let path = file_path(dirs, kind);
    let dir = path.parent().context("credential path has no parent")?;
    config::create_private_dir(&dirs.config)?;
    config::create_private_dir(dir)?;
    config::write_atomic(&path, secret.expose().as_bytes(), 0o600)
        .with_context(|| format!("writing {}", path.display()))
}

fn load_file(dirs: &Dirs, kind: SecretKind) -> Result<Secret> {
    let path = file_path(dirs, kind);
    check_private(&path)?;
    let text = fs_err::read_to_string(&path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            anyhow::Error::from(
                ExitError::new(exit::CONFIG, format!("{} is missing", path.display()))
                    .with_hint("run `runner register` again"),
            )
        } else {
            error.into()
        }
    })?;
    let value = text.trim();
    if value.is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(Secret::new(value))
}

/// Refuses a secret file that anyone but its owner can read or write.
#[cfg(unix)]
fn check_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match fs_err::metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(ExitError::new(
            exit::CONFIG,
            format!(
                "refusing to use {}: its mode is {mode:04o}, so other users can read it",
                path.display()
            ),
        )
        .with_hint(format!("chmod 600 {}", path.display()))
        .into());
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<()> {
    Ok(())
}

fn remove_file_if_present(path: &Path) -> Result<()> {
    match fs_err::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, Dirs) {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = Dirs {
            config: dir.path().join("config"),
            state: dir.path().join("state"),
        };
        (dir, dirs)
    }

    #[tokio::test]
    async fn file_store_is_private_and_round_trips() {
        let (_dir, dirs) = dirs();
        let secret = Secret::new("rnrt_abcdefghijklmnop");
        let location = store(
            &dirs,
            SecretKind::RegistrationToken,
            &secret,
            CredentialStoreChoice::File,
        )
        .await
        .expect("store");
        assert_eq!(location, SecretLocation::File);
        let path = file_path(&dirs, SecretKind::RegistrationToken);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().expect("parent")), 0o700);
        }
        let back = load(&dirs, SecretKind::RegistrationToken, location)
            .await
            .expect("load");
        assert_eq!(back, secret);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_world_readable_token_file_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, dirs) = dirs();
        let secret = Secret::new("rnrt_abcdefghijklmnop");
        store(
            &dirs,
            SecretKind::RegistrationToken,
            &secret,
            CredentialStoreChoice::File,
        )
        .await
        .expect("store");
        let path = file_path(&dirs, SecretKind::RegistrationToken);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = load(&dirs, SecretKind::RegistrationToken, SecretLocation::File)
            .await
            .expect_err("must refuse");
        let text = format!("{error:#}");
        assert!(text.contains("0644"), "{text}");
        assert!(!text.contains("abcdefghijklmnop"), "secret leaked: {text}");
    }

    #[tokio::test]
    async fn remove_deletes_the_file() {
        let (_dir, dirs) = dirs();
        let secret = Secret::new("rnrk_abcdefghijklmnop");
        store(
            &dirs,
            SecretKind::ApiKey,
            &secret,
            CredentialStoreChoice::File,
        )
        .await
        .expect("store");
        remove(&dirs, SecretKind::ApiKey).await.expect("remove");
        assert!(!file_path(&dirs, SecretKind::ApiKey).exists());
    }
}
