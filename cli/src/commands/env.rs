//! `runner env create|list|show|update|delete`.

use anyhow::Result;
use reqwest::Method;
use runner_proto::api::{
    CreateEnvironment, Environment, EnvironmentList, Status, Tier, UpdateEnvironment,
};
use runner_proto::sandbox::{self, Deploy, SandboxInfo, SandboxState};
use runner_proto::ws::{Policy, ToolAccess};
use serde_json::Value;

use crate::args::{EnvCommand, PolicyFlags, TierArg};
use crate::client::{ApiClient, REQUEST_TIMEOUT};
use crate::config::Dirs;
use crate::output;

pub async fn run(dirs: &Dirs, command: EnvCommand) -> Result<()> {
    match command {
        EnvCommand::Create(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            // A sandbox host's policy is the relay's to set.
            let host = args.env_type.as_deref() == Some(sandbox::HOST_ROLE);
            let body = CreateEnvironment {
                name: args.name,
                description: args.description,
                env_type: args.env_type,
                tags: args.tags,
                scope: args.scope,
                tier: tier(args.tier),
                install_browser_tools: false,
                policy: (!host)
                    .then(|| policy_from_flags(&args.policy, tier_default_policy(tier(args.tier))))
                    .flatten(),
            };
            let created: Environment = client
                .request(
                    Method::POST,
                    "/execution-environments",
                    Some(&body),
                    REQUEST_TIMEOUT,
                )
                .await?;
            show(&created, args.api.json)?;
            if !args.api.json {
                let next = if host {
                    "run `runner sandbox-host` on the host with it"
                } else {
                    "register a runner with it"
                };
                output::note(&format!(
                    "next: `runner token generate {}` and {next}",
                    created.id
                ));
            }
        }
        EnvCommand::List(api) => {
            let client = ApiClient::from_args(dirs, &api).await?;
            let list: EnvironmentList = client.get("/execution-environments").await?;
            if api.json {
                output::json(&list)?;
            } else {
                let rows: Vec<Vec<String>> = list
                    .environments
                    .iter()
                    .map(|env| {
                        vec![
                            env.id.clone(),
                            env.name.clone(),
                            env.status.map_or("-", Status::as_str).to_owned(),
                            tier_name(env.tier).to_owned(),
                            env.scope.clone(),
                            env.last_seen.clone().unwrap_or_else(|| "never".to_owned()),
                        ]
                    })
                    .collect();
                output::table(
                    &["ID", "NAME", "STATUS", "TIER", "SCOPE", "LAST SEEN"],
                    &rows,
                )?;
            }
        }
        EnvCommand::Show(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let env = client.resolve_env(&target.env).await?;
            show(&env, target.api.json)?;
        }
        EnvCommand::Update(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let env = client.resolve_env(&args.env).await?;
            let body = UpdateEnvironment {
                name: args.name,
                description: args.description,
                env_type: None,
                tags: (!args.tags.is_empty()).then_some(args.tags),
                tier: args.tier.map(tier),
                install_browser_tools: None,
                policy: policy_from_flags(&args.policy, env.policy.clone()),
                scope: None,
            };
            let updated: Environment = client
                .request(
                    Method::PATCH,
                    &format!("/execution-environments/{}", env.id),
                    Some(&body),
                    REQUEST_TIMEOUT,
                )
                .await?;
            show(&updated, args.api.json)?;
        }
        EnvCommand::Delete(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let env = client.resolve_env(&args.env).await?;
            if !args.yes {
                output::confirm_by_name(
                    &format!(
                        "Delete environment {} ({})? This cannot be undone; its runner will stop.",
                        env.name, env.id
                    ),
                    [env.name.as_str(), env.id.as_str()],
                    "delete",
                )?;
            }
            let _: Value = client
                .request::<(), Value>(
                    Method::DELETE,
                    &format!("/execution-environments/{}", env.id),
                    None,
                    REQUEST_TIMEOUT,
                )
                .await?;
            if args.api.json {
                output::json(&serde_json::json!({"deleted": env.id}))?;
            } else {
                output::note(&format!("deleted environment {} ({})", env.name, env.id));
            }
        }
        EnvCommand::Deploy(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let env = client.resolve_env(&args.env).await?;
            output::note(&format!(
                "deploying {} onto the least loaded sandbox host…",
                env.name
            ));
            let body = Deploy {
                grace_hours: Some(args.grace_hours),
            };
            let deployed: SandboxInfo = client
                .request(
                    Method::POST,
                    &format!("/execution-environments/{}/deploy", env.id),
                    Some(&body),
                    DEPLOY_TIMEOUT,
                )
                .await?;
            show_deployment(&env.name, &deployed, args.api.json)?;
        }
        EnvCommand::Undeploy(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let env = client.resolve_env(&target.env).await?;
            let stopped: SandboxInfo = client
                .request::<(), SandboxInfo>(
                    Method::POST,
                    &format!("/execution-environments/{}/undeploy", env.id),
                    None,
                    REQUEST_TIMEOUT,
                )
                .await?;
            show_deployment(&env.name, &stopped, target.api.json)?;
        }
        EnvCommand::Deployment(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let env = client.resolve_env(&target.env).await?;
            let deployment: SandboxInfo = client
                .get(&format!("/execution-environments/{}/deployment", env.id))
                .await?;
            show_deployment(&env.name, &deployment, target.api.json)?;
        }
    }
    Ok(())
}

/// How long `env deploy` waits: the host runs the runner and it connects.
const DEPLOY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A deployment's state in the seed's words.
fn deployment_state(state: SandboxState) -> &'static str {
    match state {
        SandboxState::Provisioning | SandboxState::SettingUp => "deploying",
        SandboxState::Ready | SandboxState::Busy => "running",
        SandboxState::Stopped => "stopped",
        SandboxState::Failed => "failed",
    }
}

fn show_deployment(name: &str, deployment: &SandboxInfo, json: bool) -> Result<()> {
    if json {
        return output::json(deployment);
    }
    let state = deployment_state(deployment.state);
    match &deployment.reason {
        Some(reason) => println!(
            "{name}: {state} on sandbox host {} ({}): {reason}",
            deployment.host_name, deployment.id
        ),
        None => println!(
            "{name}: {state} on sandbox host {} ({})",
            deployment.host_name, deployment.id
        ),
    }
    Ok(())
}

fn tier(arg: TierArg) -> Tier {
    match arg {
        TierArg::Production => Tier::Production,
        TierArg::Development => Tier::Development,
    }
}

fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Production => "production",
        Tier::Development => "development",
    }
}

/// Builds a policy from the flags, starting from `current` (the
/// environment's policy for an update; the tier's default for a create).
/// `None` when no policy flag was given, so the relay keeps (or picks) it.
/// A list flag given only as `''` empties its list: `--require-approval ''`
/// clears the approvals instead of storing an empty tool name.
fn policy_from_flags(flags: &PolicyFlags, current: Policy) -> Option<Policy> {
    let touched = flags.allow_all_tools
        || !flags.allow_tool.is_empty()
        || !flags.file_path.is_empty()
        || !flags.require_approval.is_empty();
    if !touched {
        return None;
    }
    let mut policy = current;
    if flags.allow_all_tools {
        policy.tools = ToolAccess::All;
    } else if !flags.allow_tool.is_empty() {
        policy.tools = ToolAccess::List {
            tools: without_empty(&flags.allow_tool),
        };
    }
    if !flags.file_path.is_empty() {
        policy.file_paths = without_empty(&flags.file_path);
    }
    if !flags.require_approval.is_empty() {
        policy.approval_required = without_empty(&flags.require_approval);
    }
    Some(policy)
}

/// A repeated flag's values without the empty ones (`''` means "none").
fn without_empty(values: &[String]) -> Vec<String> {
    values
        .iter()
        .filter(|value| !value.trim().is_empty())
        .cloned()
        .collect()
}

/// The policy a new environment of `tier` gets from the relay (SPEC §4).
fn tier_default_policy(tier: Tier) -> Policy {
    match tier {
        Tier::Production => Policy {
            tools: ToolAccess::List {
                tools: runner_proto::tools::DEFAULT_PRODUCTION_TOOLS
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
            },
            file_paths: Vec::new(),
            approval_required: Vec::new(),
        },
        Tier::Development => Policy {
            tools: ToolAccess::All,
            file_paths: vec!["*".to_owned()],
            approval_required: Vec::new(),
        },
    }
}

fn show(env: &Environment, json: bool) -> Result<()> {
    if json {
        return output::json(env);
    }
    let tools = match &env.policy.tools {
        ToolAccess::All => "all announced tools".to_owned(),
        ToolAccess::List { tools } if tools.is_empty() => "none".to_owned(),
        ToolAccess::List { tools } => tools.join(", "),
    };
    let or_none = |list: &[String]| {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    output::fields(&[
        ("id", env.id.clone()),
        ("name", env.name.clone()),
        ("tier", tier_name(env.tier).to_owned()),
        ("scope", env.scope.clone()),
        ("tags", or_none(&env.tags)),
        ("allowed tools", tools),
        ("file paths", or_none(&env.policy.file_paths)),
        ("needs approval", or_none(&env.policy.approval_required)),
        ("created", env.created_at.clone()),
        (
            "last seen",
            env.last_seen.clone().unwrap_or_else(|| "never".to_owned()),
        ),
    ])
}
