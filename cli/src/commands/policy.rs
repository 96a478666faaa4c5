//! `runner policy`: check a command against a local permission file, and
//! lint a permission file, with the same engine the runner enforces.
//!
//! Exit codes: `check` 0 allowed, 1 denied, 2 the file was refused;
//! `lint` 0 clean, 1 warnings, 2 refused.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::Context;
use runner_policy::{Decision, PermissionSet};

pub use crate::args::{CheckArgs, LintArgs, PolicyCommand};

const ALLOWED: u8 = 0;
const DENIED: u8 = 1;
const REFUSED: u8 = 2;

pub fn run(command: PolicyCommand) -> anyhow::Result<ExitCode> {
    match command {
        PolicyCommand::Check(args) => check(args),
        PolicyCommand::Lint(args) => lint(args),
    }
}

fn refused(error: &runner_policy::LoadError, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        let value = serde_json::json!({ "refused": true, "error": error.to_string(), "line": error.line() });
        print_json(&value)?;
    }
    let _ = writeln!(std::io::stderr(), "error: {error}");
    Ok(ExitCode::from(REFUSED))
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let set = match PermissionSet::load(&args.config) {
        Ok(set) => set,
        Err(error) => return refused(&error, args.json),
    };
    let decision = if args.stdin {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading the command from standard input")?;
        match String::from_utf8(bytes) {
            Ok(script) => set.check(&script),
            Err(_) => Decision {
                allowed: false,
                candidates: Vec::new(),
                error: Some("the command is not valid UTF-8".to_owned()),
            },
        }
    } else {
        set.check(&args.command.join(" "))
    };
    if args.json {
        print_json(&decision)?;
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", decision.summary())?;
        for candidate in &decision.candidates {
            writeln!(out, "  {candidate}")?;
        }
    }
    Ok(ExitCode::from(if decision.allowed {
        ALLOWED
    } else {
        DENIED
    }))
}

fn lint(args: LintArgs) -> anyhow::Result<ExitCode> {
    let set = match PermissionSet::load(&args.file) {
        Ok(set) => set,
        Err(error) => return refused(&error, args.json),
    };
    let warnings = set.lint();
    if args.json {
        let rules: Vec<_> = set
            .rules()
            .iter()
            .map(|r| serde_json::json!({ "pattern": r.pattern(), "action": r.action(), "line": r.line() }))
            .collect();
        print_json(&serde_json::json!({ "refused": false, "rules": rules, "warnings": warnings }))?;
    } else {
        let mut out = std::io::stdout().lock();
        if warnings.is_empty() {
            writeln!(out, "ok: {} rules, none useless", set.rules().len())?;
        }
        for warning in &warnings {
            writeln!(out, "warning: {warning}")?;
        }
    }
    Ok(ExitCode::from(if warnings.is_empty() {
        ALLOWED
    } else {
        DENIED
    }))
}

fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
