//! How the cost of a check grows with the nesting of substitutions: the
//! measurement behind `MAX_SUBSTITUTION_NESTING` (docs/permission-file.md).
//!
//! Usage: `cargo run -p runner-policy --example nesting_cost`

use std::time::{Duration, Instant};

use runner_policy::{PermissionSet, MAX_SUBSTITUTION_NESTING};

/// Checks per depth; the mean is printed.
const RUNS: u32 = 5;

fn main() {
    let set = match PermissionSet::from_yaml_str("permission:\n  '*': allow\n  'rm *': deny\n") {
        Ok(set) => set,
        Err(error) => {
            eprintln!("error: {error}");
            return;
        }
    };
    let limit = MAX_SUBSTITUTION_NESTING;
    for depth in [1, 2, 4, 8, 16, 24, limit, limit + 1, 48, 64] {
        let script = format!("{}echo x{}", "echo \"$(".repeat(depth), ")\"".repeat(depth));
        let mut total = Duration::ZERO;
        let mut allowed = false;
        for _ in 0..RUNS {
            let start = Instant::now();
            allowed = set.check(&script).allowed;
            total += start.elapsed();
        }
        println!(
            "depth {depth:3}  {:>6} bytes  allowed {allowed:5}  mean {:?}",
            script.len(),
            total / RUNS
        );
    }
}
