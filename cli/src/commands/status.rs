//! `runner status ENV`.

use anyhow::Result;
use runner_proto::api::EnvironmentStatus;

use crate::args::EnvTarget;
use crate::client::ApiClient;
use crate::config::Dirs;
use crate::output;

pub async fn run(dirs: &Dirs, target: EnvTarget) -> Result<()> {
    let client = ApiClient::from_args(dirs, &target.api).await?;
    let env = client.resolve_env(&target.env).await?;
    let status: EnvironmentStatus = client
        .get(&format!("/execution-environments/{}/status", env.id))
        .await?;
    if target.api.json {
        return output::json(&status);
    }
    let mut rows = vec![
        ("environment", format!("{} ({})", status.name, status.id)),
        ("status", status.status.as_str().to_owned()),
    ];
    if let Some(reason) = &status.reason {
        rows.push(("reason", reason.clone()));
    }
    rows.push((
        "last seen",
        status
            .last_seen
            .clone()
            .unwrap_or_else(|| "never".to_owned()),
    ));
    if let Some(runner) = &status.runner {
        rows.push((
            "runner",
            format!(
                "{} {} ({}/{})",
                runner.hostname, runner.version, runner.os, runner.arch
            ),
        ));
    }
    if let Some(token) = &status.token {
        rows.push(("token", token.hint.clone()));
    }
    output::fields(&rows)
}
