//! The result of a check: the verdict and, for every candidate text that was
//! matched, which rule decided it. Serializable for `--json`.

use crate::rules::Action;
use serde::Serialize;

/// What part of the script a candidate text stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateKind {
    /// A simple command as written (or one of its normalised forms).
    Command,
    /// The command a wrapper such as `sudo` or `xargs` runs.
    WrappedCommand,
    /// A code string run by a shell, `eval`, `trap`, ... (or a dynamic one).
    CodeString,
    /// A write redirect, matched as `> TARGET`.
    WriteRedirect,
    /// A variable a call sets for its process, matched as `NAME=VALUE`.
    Environment,
    /// A wrapper or shell started as an interactive or login shell
    /// (`sudo -i`, `su -`, `bash -l`): allowed only by a rule naming it.
    InteractiveShell,
}

impl std::fmt::Display for CandidateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CandidateKind::Command => "command",
            CandidateKind::WrappedCommand => "wrapped command",
            CandidateKind::CodeString => "code string",
            CandidateKind::WriteRedirect => "write redirect",
            CandidateKind::Environment => "environment variable",
            CandidateKind::InteractiveShell => "interactive shell",
        })
    }
}

/// One text that had to be allowed for the script to be allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// The normalised text; dynamic parts are shown as written in the script.
    pub text: String,
    /// What the text stands for.
    pub kind: CandidateKind,
    /// True when the text has parts only known at run time.
    pub dynamic: bool,
    /// The pattern of the rule that decided, if a rule did.
    pub rule: Option<String>,
    /// The verdict for this candidate.
    pub verdict: Action,
    /// Why, when no rule alone explains it (no match, dynamic part, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {:?}", self.verdict, self.kind, self.text)?;
        match &self.rule {
            Some(rule) => write!(f, " by rule \"{rule}\"")?,
            None => f.write_str(" (no rule)")?,
        }
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        Ok(())
    }
}

/// The verdict on a script, with its reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// True only if there was no error and every candidate was allowed.
    pub allowed: bool,
    /// Every candidate text, in script order (duplicates removed).
    pub candidates: Vec<Candidate>,
    /// Parse error or degenerate-input reason; always a denial.
    pub error: Option<String>,
}

impl Decision {
    pub(crate) fn refused(reason: impl Into<String>) -> Decision {
        Decision {
            allowed: false,
            candidates: Vec::new(),
            error: Some(reason.into()),
        }
    }

    /// One line: for a denial, which part was denied and by which rule.
    pub fn summary(&self) -> String {
        if let Some(error) = &self.error {
            return format!("denied: {error}");
        }
        if self.allowed {
            return format!(
                "allowed: {} candidate{} allowed",
                self.candidates.len(),
                if self.candidates.len() == 1 { "" } else { "s" }
            );
        }
        match self.candidates.iter().find(|c| c.verdict == Action::Deny) {
            Some(c) => {
                let mut line = format!("denied: {} {:?}", c.kind, c.text);
                match &c.rule {
                    Some(rule) => line.push_str(&format!(" by rule \"{rule}\"")),
                    None => line.push_str(" (no rule allows it)"),
                }
                if let Some(reason) = &c.reason {
                    line.push_str(&format!(": {reason}"));
                }
                line
            }
            None => "denied".to_owned(),
        }
    }
}
