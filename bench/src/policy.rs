//! Section 6: microseconds per policy check against 100 rules, in-process,
//! exactly as the runner calls it (`PermissionSet::check`). The rules and
//! commands are those of `policy/benches/check.rs`.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use runner_policy::PermissionSet;
use serde_json::{json, Map, Value};

use crate::stats::Summary;

pub async fn run(quick: bool) -> anyhow::Result<Value> {
    tokio::task::spawn_blocking(move || measure_all(quick))
        .await
        .context("joining the policy benchmark")?
}

fn rules() -> anyhow::Result<PermissionSet> {
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
        let action = if extra == "rm *" { "deny" } else { "allow" };
        yaml.push_str(&format!("  '{extra}': {action}\n"));
    }
    let set = PermissionSet::from_yaml_str(&yaml).context("loading the benchmark rules")?;
    if set.rules().len() != 100 {
        bail!("expected 100 rules, got {}", set.rules().len());
    }
    Ok(set)
}

/// A script of at least 4 KiB of typical shell (conditionals, pipelines,
/// substitutions).
pub fn script_4k() -> String {
    let mut script = String::new();
    let mut i = 0;
    while script.len() < 4096 {
        script.push_str(&format!(
            "if grep -q \"pattern{i}\" file{i}.txt; then\n  cat file{i}.txt | head -n {i} | wc -l > /dev/null\nfi\necho \"done $((1 + {i}))\" $(ls dir{i})\n"
        ));
        i += 1;
    }
    script
}

fn measure_all(quick: bool) -> anyhow::Result<Value> {
    let set = rules()?;
    let scale = if quick { 5 } else { 1 };
    let cases: Vec<(&str, String, usize)> = vec![
        (
            "simple_command",
            "kubectl get pods -A".to_owned(),
            50_000 / scale,
        ),
        (
            "pipeline_5_stage",
            "cat app.log | grep ERROR | sort | head -n 20 | wc -l".to_owned(),
            50_000 / scale,
        ),
        (
            "pipeline_5_stage_quoted",
            "cat 'app.log' | grep \"ERROR\" | sort | head -n 20 | wc -l".to_owned(),
            50_000 / scale,
        ),
        ("script_4k", script_4k(), 5_000 / scale),
    ];
    let mut out = Map::new();
    for (name, command, iterations) in cases {
        let expected = set.check(&command).allowed;
        // Warm caches and the allocator.
        for _ in 0..iterations / 10 {
            std::hint::black_box(set.check(std::hint::black_box(&command)));
        }
        let mut samples: Vec<Duration> = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let start = Instant::now();
            let decision = set.check(std::hint::black_box(&command));
            samples.push(start.elapsed());
            if decision.allowed != expected {
                bail!("{name}: the decision changed between runs");
            }
        }
        let mut value = Summary::of(&samples).to_json();
        value["bytes"] = json!(command.len());
        value["allowed"] = json!(expected);
        out.insert(name.into(), value);
    }
    Ok(json!({"rules": 100, "cases": out}))
}
