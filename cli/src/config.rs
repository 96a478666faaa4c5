//! Where `runner` keeps things, and the `config.yaml` it writes.
//!
//! The config file records *where* secrets are (keychain or file), never the
//! secrets themselves. Directories come from `directories` unless overridden
//! by `--config-dir`/`--state-dir` (or their env vars), which is how tests and
//! a second runner for another environment on the same host stay apart.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::args::GlobalArgs;
use crate::exit::{self, ExitError};

const CONFIG_FILE: &str = "config.yaml";

/// The resolved directories.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub config: PathBuf,
    pub state: PathBuf,
}

impl Dirs {
    pub fn resolve(global: &GlobalArgs) -> Result<Dirs> {
        let project = directories::ProjectDirs::from("dev", "runner", "runner");
        let config = match (&global.config_dir, &project) {
            (Some(dir), _) => dir.clone(),
            (None, Some(project)) => project.config_dir().to_path_buf(),
            (None, None) => anyhow::bail!(
                "cannot find a home directory for the config; pass --config-dir or set RUNNER_CONFIG_DIR"
            ),
        };
        let state = match (&global.state_dir, &project) {
            (Some(dir), _) => dir.clone(),
            (None, Some(project)) => project
                .state_dir()
                .unwrap_or_else(|| project.data_local_dir())
                .to_path_buf(),
            (None, None) => anyhow::bail!(
                "cannot find a home directory for state; pass --state-dir or set RUNNER_STATE_DIR"
            ),
        };
        Ok(Dirs { config, state })
    }

    pub fn config_file(&self) -> PathBuf {
        self.config.join(CONFIG_FILE)
    }
}

/// Where a secret lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretLocation {
    Keyring,
    File,
}

/// Written by `runner register`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    pub url: String,
    pub environment_id: String,
    #[serde(default)]
    pub environment_name: String,
    pub token_location: SecretLocation,
}

/// Written by `runner login`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Login {
    pub url: String,
    pub api_key_location: SecretLocation,
}

/// The whole `config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration: Option<Registration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<Login>,
    /// How `runner run` installs Chromium when the environment asks for
    /// browser tools: a program and its arguments, run without a shell
    /// (docs/tools.md). `--browser-install-command` and its variable win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_install_command: Option<Vec<String>>,
}

impl ConfigFile {
    /// Reads the file; a missing file is an empty config.
    pub fn load(dirs: &Dirs) -> Result<ConfigFile> {
        let path = dirs.config_file();
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ConfigFile::default())
            }
            Err(error) => return Err(error.into()),
        };
        serde_norway::from_str(&text)
            .with_context(|| format!("config file {} is not valid", path.display()))
    }

    /// Writes the file atomically (temp file + rename), creating the dir 0700.
    pub fn save(&self, dirs: &Dirs) -> Result<()> {
        create_private_dir(&dirs.config)?;
        let text = serde_norway::to_string(self).context("serialising config")?;
        write_atomic(&dirs.config_file(), text.as_bytes(), 0o600)
    }

    pub fn registration(&self) -> Result<&Registration> {
        self.registration.as_ref().ok_or_else(|| {
            ExitError::new(exit::CONFIG, "this machine is not registered with a relay")
                .with_hint("run `runner register --url URL` with the token in RUNNER_TOKEN")
                .into()
        })
    }
}

/// Creates `dir` (and parents) with mode 0700 on the leaf.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    fs_err::create_dir_all(dir)?;
    set_mode(dir, 0o700)
}

#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

#[cfg(not(unix))]
pub fn set_mode(_path: &Path, _mode: u32) -> Result<()> {
    Ok(())
}

/// Writes `bytes` to `path` through a temp file in the same directory and a
/// rename, so readers never see a half-written file. The temp file gets
/// `mode` before any byte is written.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    let name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?;
    let temp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    let mut file = fs_err::OpenOptions::from_options(options).open(&temp)?;
    set_mode(&temp, mode)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs_err::rename(&temp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_missing_file_is_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = Dirs {
            config: dir.path().join("cfg"),
            state: dir.path().join("state"),
        };
        assert_eq!(
            ConfigFile::load(&dirs).expect("load"),
            ConfigFile::default()
        );
        let config = ConfigFile {
            registration: Some(Registration {
                url: "http://127.0.0.1:1".into(),
                environment_id: "env_1".into(),
                environment_name: "box".into(),
                token_location: SecretLocation::File,
            }),
            login: None,
            browser_install_command: Some(vec!["/opt/get-chromium".into(), "--yes".into()]),
        };
        config.save(&dirs).expect("save");
        assert_eq!(ConfigFile::load(&dirs).expect("load"), config);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dirs.config_file())
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_broken_config_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dirs = Dirs {
            config: dir.path().to_path_buf(),
            state: dir.path().to_path_buf(),
        };
        std::fs::write(dirs.config_file(), "registration: [").expect("write");
        let error = ConfigFile::load(&dirs).expect_err("must fail");
        assert!(format!("{error:#}").contains("config.yaml"), "{error:#}");
    }
}
