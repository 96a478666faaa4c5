//! The permission playground: a permission file and commands in, the
//! decision per command out, with the rule and candidate that decided and
//! the file's lint warnings. It runs the `policy` crate, the code the
//! runner enforces and `runner policy check` runs.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Html;
use axum::Form;
use runner_policy::{Action, PermissionSet};
use serde::Deserialize;

use super::page::{render, Chrome, Failure, Section, Signed};

/// Largest permission file the playground takes.
const MAX_FILE_BYTES: usize = 64 * 1024;
/// Most commands decided at once.
const MAX_COMMANDS: usize = 200;

const EXAMPLE_FILE: &str = "permission:\n  \"git status\": allow\n  \"git log *\": allow\n  \"ls *\": allow\n  \"rm *\": deny\n";
const EXAMPLE_COMMANDS: &str = "git status\nls -la && rm -rf build\ngit push origin main\n";

/// One candidate of a command, as a row.
pub struct CandidateRow {
    pub allowed: bool,
    pub kind: String,
    pub text: String,
    pub rule: String,
    pub reason: String,
}

/// One command's decision.
pub struct CommandResult {
    pub command: String,
    pub allowed: bool,
    pub summary: String,
    pub candidates: Vec<CandidateRow>,
}

#[derive(Template)]
#[template(path = "console/playground.html")]
struct PlaygroundPage {
    chrome: Chrome,
    file: String,
    commands: String,
    refused: Option<String>,
    warnings: Vec<String>,
    results: Vec<CommandResult>,
    decided: bool,
}

pub async fn page(signed: Signed) -> Result<Html<String>, Failure> {
    render(&PlaygroundPage {
        chrome: signed.chrome(Section::Playground),
        file: EXAMPLE_FILE.to_owned(),
        commands: EXAMPLE_COMMANDS.to_owned(),
        refused: None,
        warnings: Vec::new(),
        results: Vec::new(),
        decided: false,
    })
}

#[derive(Debug, Deserialize)]
pub struct PlaygroundForm {
    #[serde(default)]
    file: String,
    #[serde(default)]
    commands: String,
}

/// What the engine says about `file` and each line of `commands`.
pub struct Verdicts {
    pub refused: Option<String>,
    pub warnings: Vec<String>,
    pub results: Vec<CommandResult>,
}

pub fn decide_all(file: &str, commands: &str) -> Verdicts {
    let set = match PermissionSet::from_yaml_str(file) {
        Ok(set) => set,
        Err(error) => {
            return Verdicts {
                refused: Some(error.to_string()),
                warnings: Vec::new(),
                results: Vec::new(),
            }
        }
    };
    let results = commands
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .take(MAX_COMMANDS)
        .map(|command| {
            let decision = set.check(command);
            CommandResult {
                command: command.to_owned(),
                allowed: decision.allowed,
                summary: decision.summary(),
                candidates: decision
                    .candidates
                    .iter()
                    .map(|candidate| CandidateRow {
                        allowed: candidate.verdict == Action::Allow,
                        kind: candidate.kind.to_string(),
                        text: candidate.text.clone(),
                        rule: candidate.rule.clone().unwrap_or_default(),
                        reason: candidate.reason.clone().unwrap_or_default(),
                    })
                    .collect(),
            }
        })
        .collect();
    Verdicts {
        refused: None,
        warnings: set.lint().iter().map(ToString::to_string).collect(),
        results,
    }
}

pub async fn decide(
    signed: Signed,
    Form(form): Form<PlaygroundForm>,
) -> Result<Html<String>, Failure> {
    if form.file.len() > MAX_FILE_BYTES {
        return Err(Failure::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the permission file is over {} KiB", MAX_FILE_BYTES / 1024),
        ));
    }
    let (file, commands) = (form.file.clone(), form.commands.clone());
    // Parsing is CPU work: off the request threads.
    let verdicts = tokio::task::spawn_blocking(move || decide_all(&file, &commands))
        .await
        .map_err(|_| Failure::new(StatusCode::INTERNAL_SERVER_ERROR, "the check failed"))?;
    render(&PlaygroundPage {
        chrome: signed.chrome(Section::Playground),
        file: form.file,
        commands: form.commands,
        refused: verdicts.refused,
        warnings: verdicts.warnings,
        results: verdicts.results,
        decided: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_decides_each_line_with_its_rule() {
        let verdicts = decide_all(EXAMPLE_FILE, EXAMPLE_COMMANDS);
        assert_eq!(verdicts.refused, None);
        let allowed: Vec<bool> = verdicts.results.iter().map(|r| r.allowed).collect();
        assert_eq!(allowed, [true, false, false]);
        let rm = &verdicts.results[1];
        assert!(rm
            .candidates
            .iter()
            .any(|c| !c.allowed && c.rule == "rm *" && c.text.starts_with("rm")));
    }

    #[test]
    fn a_broken_file_is_refused_with_the_engines_words() {
        let verdicts = decide_all("permisions:\n  ls: allow\n", "ls");
        assert!(verdicts.refused.is_some());
        assert!(verdicts.results.is_empty());
    }
}
