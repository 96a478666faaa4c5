//! What the gate answers with: a value only [`super::Gate`] makes (its
//! fields are private to the gate), so holding one is proof that the call
//! passed it. The process layer runs nothing but a [`CheckedCommand`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// `bash -c SCRIPT`.
    Script(String),
    /// A program run with these arguments, no shell in between.
    Program { path: PathBuf, args: Vec<String> },
}

/// A command line, its environment and its working directory, allowed by
/// the permission file and inside the workspace boundary.
#[derive(Debug, Clone)]
pub struct CheckedCommand {
    pub(super) line: CommandLine,
    pub(super) env: HashMap<String, String>,
    pub(super) workdir: PathBuf,
    pub(super) workspace: PathBuf,
}

/// A [`CheckedCommand`] taken apart by the layer that runs it.
#[derive(Debug)]
pub struct CommandParts {
    pub line: CommandLine,
    /// The call's own variables (on top of the runner's environment).
    pub env: HashMap<String, String>,
    /// An existing directory inside the boundary.
    pub workdir: PathBuf,
    /// The workspace root: where output too long for the result is kept.
    pub workspace: PathBuf,
}

impl CheckedCommand {
    pub fn line(&self) -> &CommandLine {
        &self.line
    }

    pub fn env(&self) -> &HashMap<String, String> {
        &self.env
    }

    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn into_parts(self) -> CommandParts {
        CommandParts {
            line: self.line,
            env: self.env,
            workdir: self.workdir,
            workspace: self.workspace,
        }
    }
}
