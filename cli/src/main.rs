#![forbid(unsafe_code)]
fn main() -> std::process::ExitCode {
    runner_cli::main()
}
