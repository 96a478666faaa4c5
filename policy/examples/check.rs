//! Check commands against a permission file with the policy crate alone,
//! through its public API, so the conformance script can run against the
//! engine without building the `runner` binary.
//!
//! Usage: `check policy check --config FILE -- COMMAND...` (the shape of
//! `runner policy check`, which `shared/run-policy-cases.py` calls). Exit
//! code 0 allowed, 1 denied, 2 the file was refused or the usage is wrong.

use std::path::Path;
use std::process::ExitCode;

use runner_policy::PermissionSet;

const USAGE: &str = "usage: check policy check --config FILE -- COMMAND...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, command) = match args.as_slice() {
        [policy, check, flag, config, dashes, command @ ..]
            if policy == "policy" && check == "check" && flag == "--config" && dashes == "--" =>
        {
            (config, command)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let set = match PermissionSet::load(Path::new(config)) {
        Ok(set) => set,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let decision = set.check(&command.join(" "));
    println!("{}", decision.summary());
    for candidate in &decision.candidates {
        println!("  {candidate}");
    }
    ExitCode::from(if decision.allowed { 0 } else { 1 })
}
