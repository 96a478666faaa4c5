//! The relay-side policy check of a call (SPEC §4): allow-list, approval
//! requirements and file paths, decided before anything reaches a runner.

pub mod schema;

use runner_proto::api::Tier;
use runner_proto::ws::{Policy, ToolAccess, ToolSpec};
use serde_json::Value;

pub use runner_proto::tools::FILE_TOOLS;
use runner_proto::tools::{FILE_READ, FILE_WRITE};

/// File tools for which `path` is required (the others default to the
/// workspace root).
const PATH_REQUIRED: [&str; 2] = [FILE_READ, FILE_WRITE];

/// Why a call is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("tool {0:?} is not allowed in this environment")]
    ToolNotAllowed(String),
    #[error("tool {0:?} requires a person's approval and cannot be called directly")]
    ApprovalRequired(String),
    #[error("path {0:?} is outside the environment's allowed file paths")]
    PathNotAllowed(String),
    #[error("file tools are disabled in this environment (no file paths are allowed)")]
    NoFilePaths,
    #[error("{0:?} needs a string argument \"path\"")]
    MissingPath(String),
}

/// The outcome of [`check`] when nothing refused the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// A relative path cannot be resolved without a connected runner's
    /// workspace; with no runner the call fails anyway.
    NeedsWorkspace,
}

/// Whether the policy's allow-list admits this tool.
pub fn tool_allowed(policy: &Policy, tool: &str) -> bool {
    match &policy.tools {
        ToolAccess::All => true,
        ToolAccess::List { tools } => tools.iter().any(|allowed| allowed == tool),
    }
}

/// The announced catalogue filtered by the allow-list.
pub fn visible_tools(policy: &Policy, catalogue: &[ToolSpec]) -> Vec<ToolSpec> {
    catalogue
        .iter()
        .filter(|tool| tool_allowed(policy, &tool.name))
        .cloned()
        .collect()
}

/// Checks a call against the policy. `workspace` is the connected runner's
/// announced workspace root, used to resolve relative paths.
pub fn check(
    policy: &Policy,
    tier: Tier,
    tool: &str,
    args: &Value,
    workspace: Option<&str>,
) -> Result<Verdict, Refusal> {
    let verdict = check_approved(policy, tier, tool, args, workspace)?;
    if approval_rule(policy, tool).is_some() {
        return Err(Refusal::ApprovalRequired(tool.to_owned()));
    }
    Ok(verdict)
}

/// The rule that makes a call of `tool` need a person's approval, if any,
/// in words an approver reads.
pub fn approval_rule(policy: &Policy, tool: &str) -> Option<String> {
    policy
        .approval_required
        .iter()
        .any(|name| name == tool)
        .then(|| format!("the environment requires approval for tool {tool:?}"))
}

/// The refusal every call of `tool` gets, whatever its arguments: not on
/// the allow-list, or a file tool where no file path is allowed. `None`
/// means some call of it could be allowed (what MCP's `tools/list` shows).
pub fn tool_refusal(policy: &Policy, tier: Tier, tool: &str) -> Option<Refusal> {
    if !tool_allowed(policy, tool) {
        return Some(Refusal::ToolNotAllowed(tool.to_owned()));
    }
    let no_paths = policy.file_paths.is_empty() && tier != Tier::Development;
    (FILE_TOOLS.contains(&tool) && no_paths).then_some(Refusal::NoFilePaths)
}

/// [`check`] without the approval requirement: for a call that a person
/// approves (checked again when it runs, as the policy may have changed).
pub fn check_approved(
    policy: &Policy,
    tier: Tier,
    tool: &str,
    args: &Value,
    workspace: Option<&str>,
) -> Result<Verdict, Refusal> {
    if let Some(refusal) = tool_refusal(policy, tier, tool) {
        return Err(refusal);
    }
    if !FILE_TOOLS.contains(&tool) {
        return Ok(Verdict::Allowed);
    }
    let path = match args.get("path") {
        Some(Value::String(path)) => path.as_str(),
        None | Some(Value::Null) if !PATH_REQUIRED.contains(&tool) => "",
        _ => return Err(Refusal::MissingPath(tool.to_owned())),
    };
    check_path(&policy.file_paths, tier, path, workspace)
}

fn check_path(
    allowed: &[String],
    tier: Tier,
    path: &str,
    workspace: Option<&str>,
) -> Result<Verdict, Refusal> {
    // SPEC §4: on a development environment an empty list means every path.
    if allowed.iter().any(|entry| entry == "*") || (allowed.is_empty() && tier == Tier::Development)
    {
        return Ok(Verdict::Allowed);
    }
    if allowed.is_empty() {
        return Err(Refusal::NoFilePaths);
    }
    let Some(target) = resolve(path, workspace) else {
        return Ok(Verdict::NeedsWorkspace);
    };
    let permitted = allowed
        .iter()
        .filter_map(|entry| resolve(entry, workspace))
        .any(|dir| target.starts_with(&dir));
    if permitted {
        Ok(Verdict::Allowed)
    } else {
        Err(Refusal::PathNotAllowed(path.to_owned()))
    }
}

/// Absolute, lexically normalised path components (`.` dropped, `..`
/// folded, never above the root). A relative path is joined to the
/// workspace first; `None` when that is needed but unknown.
pub fn resolve(path: &str, workspace: Option<&str>) -> Option<Vec<String>> {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        let workspace = workspace.filter(|w| w.starts_with('/'))?;
        format!("{workspace}/{path}")
    };
    let mut components: Vec<String> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                components.pop();
            }
            other => components.push(other.to_owned()),
        }
    }
    Some(components)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(paths: &[&str]) -> Policy {
        Policy {
            tools: ToolAccess::All,
            file_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            approval_required: vec!["shell".into()],
        }
    }

    fn read(path: &str, paths: &[&str]) -> Result<Verdict, Refusal> {
        check(
            &policy(paths),
            Tier::Production,
            "file_read",
            &json!({ "path": path }),
            Some("/home/u/ws"),
        )
    }

    #[test]
    fn paths_are_checked_component_wise() {
        assert_eq!(read("/etc/hosts", &["/etc"]), Ok(Verdict::Allowed));
        assert!(read("/etc2/hosts", &["/etc"]).is_err());
        assert!(read("/etc/../root/x", &["/etc"]).is_err());
        assert_eq!(read("notes.txt", &["/home/u/ws"]), Ok(Verdict::Allowed));
        assert!(read("../secret", &["/home/u/ws"]).is_err());
        assert_eq!(read("/anything", &["*"]), Ok(Verdict::Allowed));
        assert_eq!(read("/etc/hosts", &[]), Err(Refusal::NoFilePaths));
        assert_eq!(read("/etc/", &["/etc/"]), Ok(Verdict::Allowed));
    }

    #[test]
    fn relative_path_without_workspace_defers() {
        let verdict = check(
            &policy(&["/srv"]),
            Tier::Production,
            "file_read",
            &json!({"path": "x"}),
            None,
        );
        assert_eq!(verdict, Ok(Verdict::NeedsWorkspace));
    }

    #[test]
    fn approval_and_allow_list() {
        let mut p = policy(&[]);
        assert!(matches!(
            check(&p, Tier::Production, "shell", &json!({}), None),
            Err(Refusal::ApprovalRequired(_))
        ));
        p.tools = ToolAccess::List {
            tools: vec!["git".into()],
        };
        assert!(matches!(
            check(&p, Tier::Production, "kubectl", &json!({}), None),
            Err(Refusal::ToolNotAllowed(_))
        ));
        assert_eq!(
            check(&p, Tier::Production, "git", &json!({}), None),
            Ok(Verdict::Allowed)
        );
    }
}
