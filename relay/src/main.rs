#![forbid(unsafe_code)]
use std::process::ExitCode;

use clap::Parser;
use runner_relay::args::Cli;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match runner_relay::commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            for cause in error.chain().skip(1) {
                eprintln!("  Caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
