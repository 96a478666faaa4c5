//! Microseconds per check against 100 rules: a simple command, a 5-stage
//! pipeline (fast path), the same pipeline with quoting (full parser), and a
//! 4 KiB script. Reports p50 and p99 over many iterations.
//!
//! Run: `cargo bench -p runner-policy --bench check`

use runner_policy::PermissionSet;
use std::time::Instant;

fn rules() -> PermissionSet {
    let mut yaml = String::from("permission:\n  '*': deny\n");
    let tools = [
        "kubectl", "git", "ls", "cat", "grep", "head", "wc", "sort", "echo", "helm",
    ];
    let verbs = [
        "get", "describe", "logs", "status", "log", "diff", "show", "list", "top", "version",
    ];
    for tool in tools {
        for verb in verbs.iter().take(9) {
            yaml.push_str(&format!("  '{tool} {verb} *': allow\n"));
        }
    }
    for extra in [
        "ls", "ls *", "cat *", "grep *", "head *", "wc *", "sort", "echo *", "rm *",
    ] {
        yaml.push_str(&format!(
            "  '{extra}': {}\n",
            if extra == "rm *" { "deny" } else { "allow" }
        ));
    }
    let set = PermissionSet::from_yaml_str(&yaml).expect("bench rules load");
    assert_eq!(set.rules().len(), 100);
    set
}

fn measure(name: &str, set: &PermissionSet, script: &str, iterations: usize) {
    let expected = set.check(script).allowed;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let decision = set.check(std::hint::black_box(script));
        samples.push(start.elapsed().as_nanos() as f64 / 1000.0);
        assert_eq!(decision.allowed, expected);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let p50 = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    println!(
        "{name:<28} {:>6} bytes  p50 {p50:>8.2} µs  p99 {p99:>8.2} µs  ({})",
        script.len(),
        if expected { "allowed" } else { "denied" }
    );
}

fn main() {
    let set = rules();
    measure("simple command", &set, "kubectl get pods -A", 20_000);
    measure(
        "5-stage pipeline",
        &set,
        "cat app.log | grep ERROR | sort | head -n 20 | wc -l",
        20_000,
    );
    measure(
        "5-stage pipeline, quoted",
        &set,
        "cat 'app.log' | grep \"ERROR\" | sort | head -n 20 | wc -l",
        20_000,
    );
    let mut script = String::new();
    let mut i = 0;
    while script.len() < 4096 {
        script.push_str(&format!(
            "if grep -q \"pattern{i}\" file{i}.txt; then\n  cat file{i}.txt | head -n {i} | wc -l > /dev/null\nfi\necho \"done $((1 + {i}))\" $(ls dir{i})\n"
        ));
        i += 1;
    }
    measure("4 KiB script", &set, &script, 2_000);
}
