#![forbid(unsafe_code)]
use std::process::ExitCode;

use clap::Parser;
use runner_relay::args::Cli;

/// mimalloc gives memory back after a burst (a reconnect storm) where
/// glibc's malloc keeps it; see relay/Cargo.toml.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
