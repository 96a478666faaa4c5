//! The gate: the one place that decides whether a call may run.
//!
//! * the environment's policy as the relay sent it ([`Gate::tool`]: the
//!   relay checks it first; the runner checks again so a compromised
//!   relay cannot widen it);
//! * the workspace boundary and the environment's file-access list for
//!   every path a call names ([`Boundary`]);
//! * the runner's permission file for everything that becomes a command
//!   line, its environment variables included ([`Gate::command`]).
//!
//! A command passes only as a [`CheckedCommand`], which nothing outside
//! this module can make, and the process layer ([`crate::exec`]) runs
//! nothing else: a tool cannot start a process the gate did not see.

pub mod boundary;
mod checked;

use std::collections::HashMap;
use std::path::PathBuf;

use runner_policy::PermissionSet;
use runner_proto::api::Tier;
use runner_proto::ws::{Policy, ToolAccess};

pub use boundary::Boundary;
pub use checked::{CheckedCommand, CommandLine, CommandParts};

use crate::call::{CALL_MARKER_VAR, CALL_OWNER_VAR};

/// What decides whether a call may run: the call's environment's policy,
/// the workspace boundary, and the permission file (`None`: every command
/// allowed, SPEC §5).
#[derive(Debug, Clone, Copy)]
pub struct Gate<'a> {
    pub policy: &'a Policy,
    pub boundary: &'a Boundary,
    pub permissions: Option<&'a PermissionSet>,
}

impl Gate<'_> {
    /// Whether the environment's policy lets `tool` run; `approval`: the
    /// approval a person gave this call, if any.
    pub fn tool(&self, tool: &str, approval: Option<&str>) -> Result<(), String> {
        policy_allows(self.policy, tool, approval)
    }

    /// `line` with the call's `env`, in `workdir` (relative: inside the
    /// workspace; `None`: the workspace root), if the permission file allows
    /// the command line and every variable, and the directory is inside the
    /// boundary. `name` is how a program is named in the permission file
    /// (`git`, `claude`), whatever path it was found at.
    pub fn command(
        &self,
        line: CommandLine,
        name: &str,
        env: HashMap<String, String>,
        workdir: Option<&str>,
    ) -> Result<CheckedCommand, String> {
        check_env_names(&env)?;
        if let Some(permissions) = self.permissions {
            let decision = match &line {
                CommandLine::Script(script) => permissions.check(script),
                CommandLine::Program { args, .. } => {
                    let mut words = vec![name.to_owned()];
                    words.extend(args.iter().cloned());
                    permissions.check_argv(&words)
                }
            };
            if !decision.allowed {
                return Err(denied(&decision.summary()));
            }
            check_env(permissions, &env)?;
        }
        let workdir = self.workdir(workdir)?;
        Ok(self.checked(line, env, workdir))
    }

    /// A command the runner composes itself, with no word or variable of
    /// the call in it (`claude --version`), in the workspace root: it is not
    /// the call's command line, so the permission file is not asked.
    pub fn own_command(&self, program: PathBuf, args: Vec<String>) -> CheckedCommand {
        let workdir = self.boundary.root().to_path_buf();
        self.checked(
            CommandLine::Program {
                path: program,
                args,
            },
            HashMap::new(),
            workdir,
        )
    }

    /// `workdir` through the boundary; the workspace root by default.
    pub fn workdir(&self, workdir: Option<&str>) -> Result<PathBuf, String> {
        match workdir {
            Some(dir) => self
                .boundary
                .resolve_existing(dir)
                .map_err(|error| format!("workdir: {error}")),
            None => Ok(self.boundary.root().to_path_buf()),
        }
    }

    fn checked(
        &self,
        line: CommandLine,
        env: HashMap<String, String>,
        workdir: PathBuf,
    ) -> CheckedCommand {
        CheckedCommand {
            line,
            env,
            workdir,
            workspace: self.boundary.root().to_path_buf(),
        }
    }
}

/// How every refusal by the permission file begins (the runner's metrics
/// count such calls as denied).
pub const DENIED_PREFIX: &str = "denied by the runner's permission file";

/// Whether a call's error is a refusal by this gate (the permission file).
pub fn is_denial(error: &str) -> bool {
    error.starts_with(DENIED_PREFIX)
}

fn denied(summary: &str) -> String {
    format!("{DENIED_PREFIX}: {summary}")
}

/// Whether the environment's policy lets `tool` run: on the allow-list,
/// and approved by a person if the policy says it must be.
pub fn policy_allows(policy: &Policy, tool: &str, approval: Option<&str>) -> Result<(), String> {
    if tool == runner_proto::tools::PING {
        return Ok(());
    }
    if let ToolAccess::List { tools } = &policy.tools {
        if !tools.iter().any(|t| t == tool) {
            return Err(format!(
                "tool {tool:?} is not allowed by the environment's policy"
            ));
        }
    }
    if approval.is_none() && policy.approval_required.iter().any(|t| t == tool) {
        return Err(format!(
            "tool {tool:?} needs a person's approval and cannot be called directly"
        ));
    }
    Ok(())
}

/// The directories file tools may reach under `policy` on an environment
/// of `tier` (SPEC §4, the rule the relay applies too): the policy's list,
/// except that an empty one on a development tier environment means every
/// path. An unknown tier (a relay that does not say) keeps an empty list
/// empty: no path.
pub fn file_paths(policy: &Policy, tier: Option<Tier>) -> Vec<String> {
    if policy.file_paths.is_empty() && tier == Some(Tier::Development) {
        return vec!["*".to_owned()];
    }
    policy.file_paths.clone()
}

/// Variables a process can be given: a name without `=` or NUL, a value
/// without NUL, and never the call marker or owner, which the runner sets.
fn check_env_names(env: &HashMap<String, String>) -> Result<(), String> {
    let mut names: Vec<&String> = env.keys().collect();
    names.sort();
    for key in names {
        let value = &env[key];
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            return Err(format!("env {key:?} is not a valid variable"));
        }
        if key == CALL_MARKER_VAR || key == CALL_OWNER_VAR {
            return Err(format!("env {key:?} is set by the runner"));
        }
    }
    Ok(())
}

/// Checks every variable of a call's `env` argument against the permission
/// file ([`PermissionSet::check_env`]: `NAME=VALUE`, like a leading
/// assignment): the command's words are not all that decides what runs
/// (`BASH_ENV`, `BASH_FUNC_ls%%`, `LD_PRELOAD`, `GIT_CONFIG_*` …).
fn check_env(permissions: &PermissionSet, env: &HashMap<String, String>) -> Result<(), String> {
    let mut names: Vec<&String> = env.keys().collect();
    names.sort();
    for name in names {
        let decision = permissions.check_env(name, &env[name]);
        if !decision.allowed {
            return Err(denied(&decision.summary()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists_and_approvals_are_enforced_locally_too() {
        let policy = Policy {
            tools: ToolAccess::List {
                tools: vec!["shell".into(), "git".into()],
            },
            file_paths: vec![],
            approval_required: vec!["git".into()],
        };
        assert!(policy_allows(&policy, "shell", None).is_ok());
        assert!(policy_allows(&policy, "ping", None).is_ok());
        assert!(policy_allows(&policy, "file_write", None).is_err());
        assert!(policy_allows(&policy, "git", None).is_err());
        assert!(policy_allows(&policy, "git", Some("apr_1")).is_ok());
        assert!(
            policy_allows(&policy, "file_write", Some("apr_1")).is_err(),
            "an approval does not widen the allow-list"
        );
    }

    #[test]
    fn an_empty_file_list_means_every_path_on_a_development_tier_only() {
        let policy = |paths: &[&str]| Policy {
            tools: ToolAccess::All,
            file_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            approval_required: vec![],
        };
        let every = vec!["*".to_owned()];
        assert_eq!(file_paths(&policy(&[]), Some(Tier::Development)), every);
        assert!(file_paths(&policy(&[]), Some(Tier::Production)).is_empty());
        assert!(
            file_paths(&policy(&[]), None).is_empty(),
            "unknown: fail closed"
        );
        assert_eq!(
            file_paths(&policy(&["/srv"]), Some(Tier::Development)),
            ["/srv"],
            "a list that is set is the list"
        );
    }

    #[test]
    fn the_marker_variable_cannot_be_overridden() {
        let env = |name: &str| HashMap::from([(name.to_owned(), "b".to_owned())]);
        assert!(check_env_names(&env(CALL_MARKER_VAR)).is_err());
        assert!(check_env_names(&env(CALL_OWNER_VAR)).is_err());
        assert!(check_env_names(&env("A")).is_ok());
        assert!(check_env_names(&env("A=")).is_err());
        assert!(check_env_names(&env("")).is_err());
    }
}
