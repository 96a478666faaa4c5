#![forbid(unsafe_code)]
use std::process::ExitCode;

use clap::Parser;
use runner_relay::args::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = cli.worker_threads {
        builder.worker_threads(usize::from(threads));
    }
    let outcome = match builder.enable_all().build() {
        Ok(runtime) => runtime.block_on(runner_relay::commands::run(cli)),
        Err(error) => Err(anyhow::Error::from(error).context("starting the async runtime")),
    };
    runner_relay::report::exit_code(outcome)
}
