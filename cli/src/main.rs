fn main() -> std::process::ExitCode {
    runner_cli::main()
}
