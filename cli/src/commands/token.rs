//! `runner token generate|status|revoke`.

use anyhow::Result;
use reqwest::Method;
use runner_proto::api::{GeneratedToken, RunnerToken, TokenStatus};
use serde_json::Value;

use crate::args::TokenCommand;
use crate::client::{ApiClient, REQUEST_TIMEOUT};
use crate::config::Dirs;
use crate::output;

pub async fn run(dirs: &Dirs, command: TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Generate(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let env = client.resolve_env(&args.env).await?;
            if args.grace_hours == 0 && !args.yes {
                output::confirm(
                    &format!(
                        "Generate a new token for {} ({}) with no grace period? The current token stops working now and a connected runner is cut off until it is registered with the new one.",
                        env.name, env.id
                    ),
                    "rotate with no grace period",
                )?;
            }
            let token: GeneratedToken = client
                .request::<(), _>(
                    Method::POST,
                    &format!(
                        "/execution-environments/{}/generate-token?grace_hours={}",
                        env.id, args.grace_hours
                    ),
                    None,
                    REQUEST_TIMEOUT,
                )
                .await?;
            if args.api.json {
                output::json(&token)?;
            } else {
                // The token is data: stdout. Everything around it: stderr.
                output::note(&format!(
                    "registration token for {} ({}); shown once, store it now:",
                    env.name, env.id
                ));
                println!("{}", token.token);
                if let Some(until) = &token.previous_valid_until {
                    output::note(&format!("the previous token keeps working until {until}"));
                }
                output::note(&format!(
                    "on the machine: RUNNER_TOKEN=<token> runner register --url {}",
                    client.base_url()
                ));
            }
        }
        TokenCommand::Status(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let env = client.resolve_env(&target.env).await?;
            let status: TokenStatus = client
                .get(&format!("/execution-environments/{}/token-status", env.id))
                .await?;
            if target.api.json {
                output::json(&status)?;
            } else if !status.has_token {
                output::fields(&[
                    ("environment", format!("{} ({})", env.name, env.id)),
                    (
                        "token",
                        "none (generate one with `runner token generate`)".to_owned(),
                    ),
                    ("runner connected", yes_no(status.runner_connected)),
                ])?;
            } else {
                let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "never".to_owned());
                let days =
                    |v: Option<i64>| v.map(|d| d.to_string()).unwrap_or_else(|| "-".to_owned());
                output::fields(&[
                    ("environment", format!("{} ({})", env.name, env.id)),
                    ("token", status.hint.clone().unwrap_or_default()),
                    ("created", opt(&status.created_at)),
                    ("age (days)", days(status.age_days)),
                    ("last used", opt(&status.last_used_at)),
                    ("days until expiry", days(status.days_until_expiry)),
                    ("runner connected", yes_no(status.runner_connected)),
                    (
                        "runner uses token",
                        status
                            .runner_token
                            .as_ref()
                            .map_or_else(|| "-".to_owned(), describe_runner_token),
                    ),
                ])?;
            }
        }
        TokenCommand::Revoke(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let env = client.resolve_env(&target.env).await?;
            if !target.yes {
                output::confirm_by_name(
                    &format!(
                        "Revoke every token of {} ({})? Its runner is disconnected and needs a new token.",
                        env.name, env.id
                    ),
                    [env.name.as_str(), env.id.as_str()],
                    "revoke",
                )?;
            }
            let answer: Value = client
                .request::<(), _>(
                    Method::POST,
                    &format!("/execution-environments/{}/revoke-token", env.id),
                    None,
                    REQUEST_TIMEOUT,
                )
                .await?;
            if target.api.json {
                output::json(&answer)?;
            } else {
                output::note(&format!(
                    "revoked every token of {} ({}); its runner was disconnected",
                    env.name, env.id
                ));
            }
        }
    }
    Ok(())
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}

/// Which token the connected runner uses, for people: `rnrt_…9f3a
/// (current)`, or a previous one with when it stops working and what to do.
pub fn describe_runner_token(token: &RunnerToken) -> String {
    if token.current {
        return format!("{} (current)", token.hint);
    }
    match &token.valid_until {
        Some(until) => format!(
            "{} (previous, valid until {until}; register the runner with the new token before then)",
            token.hint
        ),
        None => format!("{} (previous)", token.hint),
    }
}
