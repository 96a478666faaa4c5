//! `runner policy ...` without the rest of the CLI: compiles the CLI's own
//! `commands/policy.rs` so the conformance script can run against it while
//! the `runner` binary is built elsewhere.
//!
//! Usage: `check policy check --config FILE -- COMMAND`

use std::process::ExitCode;

use clap::Parser;

#[path = "../../cli/src/commands/policy.rs"]
mod policy;

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, clap::Subcommand)]
enum Top {
    /// Permission file tooling
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
}

fn main() -> ExitCode {
    let Top::Policy { command } = Cli::parse().command;
    match policy::run(command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
