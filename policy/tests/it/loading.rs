//! Load errors name the problem, the value at fault and the line.

use rstest::rstest;
use runner_policy::PermissionSet;

#[rstest]
#[case(
    "permission:\n  '*': deny\n  ls *: allow\n  ls *: deny\n",
    "line 4: duplicate pattern \"ls *\""
)]
#[case(
    "permission:\n  '*': deny\n  'ls ?': allow\n",
    "line 3: pattern \"ls ?\" contains '?'"
)]
#[case("permission:\n  '*': deny\n  'ls {a,b}': allow\n", "contains '{'")]
#[case("permission:\n  '*': deny\n  ls: yes\n", "invalid action \"yes\"")]
#[case("permission:\n  '*': deny\n  ls: true\n", "is not a string")]
#[case("permission:\n  '*': deny\n  ls: Allow\n", "invalid action \"Allow\"")]
#[case("permission:\n  '*': deny\n  '': allow\n", "empty pattern")]
#[case(
    "permission:\n  '*': deny\n  42: allow\n",
    "pattern 42 is not a string"
)]
#[case("permission: [\n", "invalid YAML")]
#[case("other: 1\n", "no `permission` key")]
#[case(
    "permissions:\n  '*': deny\n",
    "line 1: no `permission` key (found \"permissions\": did you mean \"permission\"?)"
)]
#[case(
    "# rules\nPermission:\n  '*': deny\n",
    "line 2: no `permission` key (found \"Permission\": did you mean \"permission\"?)"
)]
#[case("permision:\n  '*': deny\n", "did you mean \"permission\"?")]
#[case(
    "permisions:\n  '*': deny\n",
    "line 1: no `permission` key (found \"permisions\": did you mean \"permission\"?)"
)]
#[case("permission: {}\n", "no rules under `permission`")]
#[case("permission:\n", "found null")]
#[case("permission: 3\n", "found a number")]
#[case("- a\n", "top level")]
#[case("", "top level")]
#[case(
    "permission:\n  '*': deny\npermission:\n  '*': allow\n",
    "duplicate top-level key"
)]
fn refused(#[case] yaml: &str, #[case] message: &str) {
    // A key far from `permission` gets no suggestion.
    if yaml == "other: 1\n" {
        let text = PermissionSet::from_yaml_str(yaml)
            .expect_err("must be refused")
            .to_string();
        assert!(!text.contains("did you mean"), "{text}");
    }
    let error = PermissionSet::from_yaml_str(yaml).expect_err("must be refused");
    let text = error.to_string();
    assert!(text.starts_with("permission file '<inline>': "), "{text}");
    assert!(
        text.contains(message),
        "{text:?} does not contain {message:?}"
    );
}

#[test]
fn missing_and_non_utf8_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.yaml");
    let error = PermissionSet::load(&missing).expect_err("missing");
    assert!(error.to_string().contains("cannot read"), "{error}");
    let binary = dir.path().join("bin.yaml");
    std::fs::write(&binary, b"permission:\n  ls: \xffallow\n").expect("write");
    let error = PermissionSet::load(&binary).expect_err("binary");
    assert!(error.to_string().contains("not valid UTF-8"), "{error}");
}

#[test]
fn lint_reports_useless_rules() {
    let set = crate::support::rules(&[
        ("*", "deny"),
        ("ls *", "allow"),
        ("ls -la *", "allow"),
        ("cat *", "deny"),
    ]);
    let warnings = set.lint();
    let patterns: Vec<&str> = warnings.iter().map(|w| w.pattern.as_str()).collect();
    assert!(patterns.contains(&"ls -la *"), "{warnings:?}");
    assert!(patterns.contains(&"cat *"), "{warnings:?}");
    assert!(!patterns.contains(&"ls *"), "{warnings:?}");
    let clean = crate::support::rules(&[("*", "deny"), ("ls *", "allow")]);
    assert!(clean.lint().is_empty());
}
