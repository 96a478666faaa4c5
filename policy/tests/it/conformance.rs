//! Every case of `shared/policy-cases.yaml` (override the path with
//! `RUNNER_POLICY_CASES`). A missing file fails the test: it is the spec.

use runner_policy::PermissionSet;
use serde_norway::{Mapping, Value};
use std::path::PathBuf;

fn cases_path() -> PathBuf {
    if let Ok(path) = std::env::var("RUNNER_POLICY_CASES") {
        return PathBuf::from(path);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // <workspace>/policy -> <workspace>/../shared
    manifest
        .parent()
        .and_then(|p| p.parent())
        .map(|p| p.join("shared").join("policy-cases.yaml"))
        .unwrap_or_else(|| PathBuf::from("../../shared/policy-cases.yaml"))
}

fn corpus() -> Value {
    let path = cases_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "conformance corpus {} is missing ({e}); it is the spec of the engine. \
             Set RUNNER_POLICY_CASES to its path.",
            path.display()
        )
    });
    serde_norway::from_str(&text).expect("the corpus is valid YAML")
}

fn rules_of(case: &Value, sets: &Mapping) -> PermissionSet {
    let rules = match &case["rules"] {
        Value::String(name) => sets
            .get(name.as_str())
            .unwrap_or_else(|| panic!("unknown rule set {name}"))
            .clone(),
        inline => inline.clone(),
    };
    let mut doc = Mapping::new();
    doc.insert(Value::String("permission".into()), rules);
    let yaml = serde_norway::to_string(&doc).expect("serialisable");
    PermissionSet::from_yaml_str(&yaml)
        .unwrap_or_else(|e| panic!("case {:?}: rules refused: {e}", case["id"]))
}

fn command_of(case: &Value) -> String {
    if let Some(command) = case["command"].as_str() {
        return command.to_owned();
    }
    let generate = &case["generate"];
    let prefix = generate["prefix"].as_str().unwrap_or("");
    let repeat = generate["repeat"].as_str().expect("repeat");
    let times = generate["times"].as_u64().expect("times") as usize;
    let suffix = generate["suffix"].as_str().unwrap_or("");
    format!("{prefix}{}{suffix}", repeat.repeat(times))
}

#[test]
fn every_conformance_case_passes() {
    let corpus = corpus();
    let sets = corpus["rule_sets"].as_mapping().expect("rule_sets").clone();
    let cases = corpus["cases"].as_sequence().expect("cases");
    assert!(!cases.is_empty(), "the corpus has no cases");
    let mut failures = Vec::new();
    for case in cases {
        let set = rules_of(case, &sets);
        let command = command_of(case);
        let decision = set.check(&command);
        let got = if decision.allowed { "allow" } else { "deny" };
        let want = case["expect"].as_str().expect("expect");
        if got != want {
            failures.push(format!(
                "{:?}: want {want}, got {got}: {}",
                case["id"],
                decision.summary()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Concrete files for the startup cases, keyed by words of their description.
fn startup_file(config: &str) -> Option<Option<&'static str>> {
    let table: &[(&str, Option<&str>)] = &[
        ("no permission file configured", None),
        ("file missing", Some("<missing>")),
        ("not valid YAML", Some("permission: [\n")),
        ("without a `permission` key", Some("rules:\n  '*': allow\n")),
        ("`permission: {}`", Some("permission: {}\n")),
        ("null value", Some("permission:\n")),
        ("is a list", Some("permission:\n  - ls\n")),
        (
            "action other than",
            Some("permission:\n  '*': deny\n  ls: ask\n"),
        ),
        (
            "other case",
            Some("permission:\n  '*': deny\n  ls: ALLOW\n"),
        ),
        (
            "duplicate pattern",
            Some("permission:\n  '*': deny\n  ls *: allow\n  ls *: deny\n"),
        ),
        (
            "empty or whitespace-only",
            Some("permission:\n  '*': deny\n  '  ': allow\n"),
        ),
        (
            "pattern containing ?",
            Some("permission:\n  '*': deny\n  'ls ?': allow\n"),
        ),
        (
            "non-string key",
            Some("permission:\n  '*': deny\n  42: allow\n"),
        ),
        ("not UTF-8", Some("<binary>")),
    ];
    table
        .iter()
        .find(|(key, _)| config.contains(key))
        .map(|(_, file)| *file)
}

#[test]
fn startup_cases_refuse_or_start() {
    let corpus = corpus();
    let cases = corpus["startup_cases"]
        .as_sequence()
        .expect("startup_cases");
    let dir = tempfile::tempdir().expect("tempdir");
    for case in cases {
        let config = case["config"].as_str().expect("config");
        let expect = case["expect"].as_str().expect("expect");
        let file = startup_file(config)
            .unwrap_or_else(|| panic!("no concrete file for startup case {config:?}"));
        let Some(content) = file else {
            assert_eq!(expect, "start", "{config}");
            continue; // no file configured: the runner allows everything
        };
        let path = dir.path().join("permission.yaml");
        let _ = std::fs::remove_file(&path);
        match content {
            "<missing>" => {}
            "<binary>" => std::fs::write(&path, b"permission:\n  '*': \xff\xfe\n").expect("write"),
            text => std::fs::write(&path, text).expect("write"),
        }
        let result = PermissionSet::load(&path);
        let got = if result.is_ok() { "start" } else { "refuse" };
        assert_eq!(
            got,
            expect,
            "startup case {config:?}: {:?}",
            result.err().map(|e| e.to_string())
        );
        // Each refused variant but one also has a sibling that starts: make
        // sure a well-formed file does.
    }
    let ok = "permission:\n  '*': deny\n  ls: allow\n";
    assert!(PermissionSet::from_yaml_str(ok).is_ok());
}
