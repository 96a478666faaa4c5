//! Helpers shared by the tests.

use runner_policy::PermissionSet;

/// Build a permission set from `(pattern, action)` pairs.
pub fn rules(pairs: &[(&str, &str)]) -> PermissionSet {
    let mut yaml = String::from("permission:\n");
    for (pattern, action) in pairs {
        yaml.push_str(&format!(
            "  {}: {}\n",
            serde_json::to_string(pattern).expect("string"),
            action
        ));
    }
    PermissionSet::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("rules do not load: {e}"))
}

pub fn denylist() -> PermissionSet {
    rules(&[
        ("*", "allow"),
        ("rm *", "deny"),
        ("kubectl delete *", "deny"),
        ("git push *", "deny"),
        ("curl *", "deny"),
        ("chmod *", "deny"),
        ("> /etc/*", "deny"),
    ])
}

pub fn readonly() -> PermissionSet {
    rules(&[
        ("*", "deny"),
        ("ls", "allow"),
        ("ls *", "allow"),
        ("cat", "allow"),
        ("cat *", "allow"),
        ("echo *", "allow"),
        ("grep *", "allow"),
        ("head *", "allow"),
        ("wc *", "allow"),
        ("sort", "allow"),
        ("pwd", "allow"),
        ("true", "allow"),
        ("kubectl get *", "allow"),
        ("git status", "allow"),
        ("git log *", "allow"),
        ("> /tmp/*", "allow"),
    ])
}
