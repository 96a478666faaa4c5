//! The file-system boundary of SPEC §5, applied to every path a tool touches.
//!
//! * Relative paths are confined to the workspace root: they are joined to
//!   it, and the result — after resolving symlinks — must still be inside it.
//! * Absolute paths go to the host file system; the environment's
//!   file-access list (from the relay's policy) is then the boundary, checked
//!   both lexically and after resolving symlinks, so a link inside an allowed
//!   directory cannot point a tool outside it.
//! * `..` is refused outright in any path: there is no legitimate need for it
//!   that an absolute path does not serve, and it is the classic escape.
//! * The runner's own files (its config and state directories, where the
//!   credential files are: [`Boundary::hiding`]) are refused whatever the
//!   list allows, but for the workspace where it lies in one of them, as
//!   they are hidden from the processes tools run (`crate::exec::tool_view`).

use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// Why a path was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path {0:?} contains `..`, which is refused")]
    ParentComponent(String),
    #[error("path {0:?} contains a NUL byte")]
    Nul(String),
    #[error("path {0:?} resolves outside the workspace (through a symlink)")]
    EscapesWorkspace(String),
    #[error("path {0:?} is not under a directory the environment's file-access list allows")]
    NotAllowed(String),
    #[error("file tools are disabled: the environment's file-access list is empty")]
    NoFileAccess,
    #[error("path {0:?} is one of the runner's own files (its config, state and credentials, the service's environment file, its MCP config), which tools may not touch")]
    RunnerFile(String),
    #[error("cannot resolve {path:?}{}: {reason}", relative_to(workspace.as_deref()))]
    Io {
        path: String,
        /// The workspace a relative `path` was looked up in, named in the
        /// message: "notes.txt: not found" alone leaves the reader to guess
        /// where.
        workspace: Option<PathBuf>,
        reason: String,
    },
}

fn relative_to(workspace: Option<&Path>) -> String {
    workspace
        .map(|root| format!(" (relative to the workspace {})", root.display()))
        .unwrap_or_default()
}

/// The workspace root and the environment's file-access list.
#[derive(Debug, Clone)]
pub struct Boundary {
    /// Canonical (symlink-free) workspace root.
    root: PathBuf,
    /// Directories from the relay's policy; `*` means every path.
    allowed: Vec<String>,
    /// The runner's own files and directories, canonical.
    hidden: Vec<PathBuf>,
}

impl Boundary {
    /// `root` must exist; it is canonicalised once here.
    pub fn new(root: &Path, allowed: Vec<String>) -> std::io::Result<Boundary> {
        Ok(Boundary {
            root: root.canonicalize()?,
            allowed,
            hidden: Vec::new(),
        })
    }

    /// The same root with another file-access list (a policy update).
    pub fn with_allowed(&self, allowed: Vec<String>) -> Boundary {
        Boundary {
            root: self.root.clone(),
            allowed,
            hidden: self.hidden.clone(),
        }
    }

    /// The same boundary refusing every path in or under `hidden`
    /// (canonical paths: the runner's own files), except those in the
    /// workspace where the workspace lies under one of them.
    pub fn hiding(mut self, hidden: Vec<PathBuf>) -> Boundary {
        self.hidden = hidden;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path for reading (or as a working directory): it must exist.
    pub fn resolve_existing(&self, raw: &str) -> Result<PathBuf, PathError> {
        let joined = self.lexical(raw)?;
        let real = joined.canonicalize().map_err(|error| PathError::Io {
            path: raw.to_owned(),
            workspace: self.workspace_of(raw),
            reason: error.to_string(),
        })?;
        self.check_real(raw, &real)?;
        Ok(real)
    }

    /// Resolves a path for writing: it may not exist yet, and neither may its
    /// parents. The deepest existing ancestor is resolved and checked, so a
    /// symlinked directory cannot smuggle the new file out. An existing
    /// symlink at the final component is resolved and checked too.
    pub fn resolve_for_write(&self, raw: &str) -> Result<PathBuf, PathError> {
        let joined = self.lexical(raw)?;
        if let Ok(real) = joined.canonicalize() {
            self.check_real(raw, &real)?;
            return Ok(real);
        }
        let mut existing = joined.as_path();
        let mut rest = Vec::new();
        while let Some(parent) = existing.parent() {
            if let Some(name) = existing.file_name() {
                rest.push(name.to_owned());
            }
            existing = parent;
            if existing.exists() {
                break;
            }
        }
        let mut real = existing.canonicalize().map_err(|error| PathError::Io {
            path: raw.to_owned(),
            workspace: self.workspace_of(raw),
            reason: error.to_string(),
        })?;
        // A name in the missing part that exists as a symlink points
        // nowhere yet: creating the file through it would create its
        // target, wherever that is.
        let mut lexical = existing.to_path_buf();
        for name in rest.iter().rev() {
            lexical.push(name);
            if lexical.symlink_metadata().is_ok() {
                return Err(PathError::Io {
                    path: raw.to_owned(),
                    workspace: self.workspace_of(raw),
                    reason: "is a symbolic link whose target does not exist: it is not followed for writing".to_owned(),
                });
            }
            real.push(name);
        }
        self.check_real(raw, &real)?;
        Ok(real)
    }

    /// The root, when `raw` is relative to it.
    fn workspace_of(&self, raw: &str) -> Option<PathBuf> {
        Path::new(raw).is_relative().then(|| self.root.clone())
    }

    /// Refuses `..`, NUL and empty paths; joins relative paths to the root;
    /// checks the file-access list lexically.
    fn lexical(&self, raw: &str) -> Result<PathBuf, PathError> {
        if raw.is_empty() {
            return Err(PathError::Empty);
        }
        if raw.contains('\0') {
            return Err(PathError::Nul(raw.to_owned()));
        }
        let path = Path::new(raw);
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(PathError::ParentComponent(raw.to_owned()));
        }
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let joined: PathBuf = joined
            .components()
            .filter(|c| *c != Component::CurDir)
            .collect();
        self.check_allowed(raw, &joined)?;
        Ok(joined)
    }

    /// Checks a resolved (symlink-free) path met while walking below `raw`
    /// (the path the caller gave): inside the workspace when `raw` was
    /// relative, within the file-access list in any case.
    pub fn check_resolved(&self, raw: &str, real: &Path) -> Result<(), PathError> {
        self.check_real(raw, real)
    }

    fn check_real(&self, raw: &str, real: &Path) -> Result<(), PathError> {
        if Path::new(raw).is_relative() && !real.starts_with(&self.root) {
            return Err(PathError::EscapesWorkspace(raw.to_owned()));
        }
        self.check_allowed(raw, real)
    }

    fn check_allowed(&self, raw: &str, path: &Path) -> Result<(), PathError> {
        let hidden = self.hidden.iter().any(|hidden| {
            path.starts_with(hidden)
                && !(self.root.starts_with(hidden) && path.starts_with(&self.root))
        });
        if hidden {
            return Err(PathError::RunnerFile(raw.to_owned()));
        }
        if self.allowed.is_empty() {
            return Err(PathError::NoFileAccess);
        }
        if self.allowed.iter().any(|dir| dir == "*") {
            return Ok(());
        }
        // `Path::starts_with` compares whole components: /etc2 is not under /etc.
        let allowed = self.allowed.iter().any(|dir| {
            let dir = Path::new(dir);
            let dir = if dir.is_absolute() {
                dir.to_path_buf()
            } else {
                self.root.join(dir)
            };
            path.starts_with(&dir)
                || dir
                    .canonicalize()
                    .map(|real| path.starts_with(real))
                    .unwrap_or(false)
        });
        if allowed {
            Ok(())
        } else {
            Err(PathError::NotAllowed(raw.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(allowed: &[&str]) -> (tempfile::TempDir, Boundary) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).expect("mkdir");
        let allowed = allowed
            .iter()
            .map(|s| s.replace("$T", &dir.path().display().to_string()))
            .collect();
        let boundary = Boundary::new(&root, allowed).expect("boundary");
        (dir, boundary)
    }

    #[test]
    fn parent_components_are_refused_everywhere() {
        let (_dir, boundary) = setup(&["*"]);
        for raw in ["../x", "a/../../x", "/tmp/../etc/passwd", "a/.."] {
            assert!(
                matches!(
                    boundary.resolve_for_write(raw),
                    Err(PathError::ParentComponent(_))
                ),
                "{raw}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_workspace_are_refused() {
        let (dir, boundary) = setup(&["*"]);
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).expect("mkdir");
        std::fs::write(outside.join("secret"), "s").expect("write");
        std::os::unix::fs::symlink(&outside, boundary.root().join("link")).expect("symlink");
        assert!(matches!(
            boundary.resolve_existing("link/secret"),
            Err(PathError::EscapesWorkspace(_))
        ));
        assert!(matches!(
            boundary.resolve_for_write("link/new-file"),
            Err(PathError::EscapesWorkspace(_))
        ));
        assert!(matches!(
            boundary.resolve_for_write("link/deeper/new-file"),
            Err(PathError::EscapesWorkspace(_))
        ));
        // A file inside the workspace is fine, existing or not.
        std::fs::write(boundary.root().join("ok"), "x").expect("write");
        assert!(boundary.resolve_existing("ok").is_ok());
        assert!(boundary.resolve_for_write("sub/dir/new").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn the_access_list_is_checked_after_resolving_symlinks() {
        let (dir, boundary) = setup(&["$T/allowed"]);
        let allowed = dir.path().join("allowed");
        let forbidden = dir.path().join("forbidden");
        std::fs::create_dir(&allowed).expect("mkdir");
        std::fs::create_dir(&forbidden).expect("mkdir");
        std::fs::write(forbidden.join("f"), "x").expect("write");
        std::fs::write(allowed.join("g"), "x").expect("write");
        std::os::unix::fs::symlink(&forbidden, allowed.join("link")).expect("symlink");
        let path = |p: &Path, name: &str| p.join(name).display().to_string();
        assert!(boundary.resolve_existing(&path(&allowed, "g")).is_ok());
        assert!(matches!(
            boundary.resolve_existing(&path(&allowed, "link/f")),
            Err(PathError::NotAllowed(_))
        ));
        assert!(matches!(
            boundary.resolve_existing(&path(&forbidden, "f")),
            Err(PathError::NotAllowed(_))
        ));
        // Component-wise: a sibling sharing the prefix is not inside.
        let sibling = format!("{}2/x", allowed.display());
        assert!(matches!(
            boundary.resolve_for_write(&sibling),
            Err(PathError::NotAllowed(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn the_runners_own_files_are_refused_but_a_workspace_among_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let (config, state) = (base.join("config"), base.join("state"));
        let workspace = state.join("workspace");
        std::fs::create_dir_all(config.join("credentials")).expect("mkdir");
        std::fs::create_dir_all(&workspace).expect("mkdir");
        std::fs::write(config.join("credentials/token"), "t").expect("write");
        std::fs::write(state.join("runner.lock"), "").expect("write");
        std::fs::write(workspace.join("notes"), "n").expect("write");
        std::os::unix::fs::symlink(&config, base.join("alias")).expect("symlink");
        let boundary = Boundary::new(&workspace, vec!["*".to_owned()])
            .expect("boundary")
            .hiding(vec![config.clone(), state.clone()])
            .with_allowed(vec!["*".to_owned()]);
        let refused = |raw: String| {
            assert_eq!(
                boundary.resolve_existing(&raw),
                Err(PathError::RunnerFile(raw.clone())),
                "{raw}"
            );
        };
        refused(config.join("credentials/token").display().to_string());
        refused(config.display().to_string());
        refused(state.join("runner.lock").display().to_string());
        // Through a symlink, as resolved.
        refused(base.join("alias/credentials/token").display().to_string());
        assert!(matches!(
            boundary.resolve_for_write(&config.join("new").display().to_string()),
            Err(PathError::RunnerFile(_))
        ));
        assert!(boundary.resolve_existing("notes").is_ok());
        assert!(boundary
            .resolve_existing(&workspace.join("notes").display().to_string())
            .is_ok());
        // A workspace holding the config directory does not open it.
        let home = Boundary::new(&base, vec!["*".to_owned()])
            .expect("boundary")
            .hiding(vec![config.clone()]);
        assert!(matches!(
            home.resolve_existing("config/credentials/token"),
            Err(PathError::RunnerFile(_))
        ));
        assert!(home.resolve_existing("state/runner.lock").is_ok());
    }

    #[test]
    fn an_empty_access_list_blocks_file_tools() {
        let (_dir, boundary) = setup(&[]);
        assert_eq!(
            boundary.resolve_for_write("x"),
            Err(PathError::NoFileAccess)
        );
    }

    #[test]
    fn a_missing_relative_file_is_named_with_the_workspace_it_was_looked_up_in() {
        let (dir, boundary) = setup(&["*"]);
        let message = boundary
            .resolve_existing("notes.txt")
            .expect_err("missing")
            .to_string();
        let root = dir.path().join("ws").canonicalize().expect("root");
        assert!(
            message.contains(&format!("relative to the workspace {}", root.display())),
            "{message}"
        );
        let absolute = dir.path().join("absent");
        let message = boundary
            .resolve_existing(&absolute.display().to_string())
            .expect_err("missing")
            .to_string();
        assert!(!message.contains("workspace"), "{message}");
    }
}
