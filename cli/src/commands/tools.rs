//! `runner tools ENV`.

use anyhow::Result;
use runner_proto::api::ToolList;

use crate::args::EnvTarget;
use crate::client::ApiClient;
use crate::config::Dirs;
use crate::output;

pub async fn run(dirs: &Dirs, target: EnvTarget) -> Result<()> {
    let client = ApiClient::from_args(dirs, &target.api).await?;
    let env = client.resolve_env(&target.env).await?;
    let list: ToolList = client
        .get(&format!("/execution-environments/{}/tools", env.id))
        .await?;
    if target.api.json {
        return output::json(&list);
    }
    if !list.runner_connected {
        output::note(&format!(
            "no runner is connected to {} ({}): no tools to list",
            env.name, env.id
        ));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = list
        .tools
        .iter()
        .map(|tool| vec![tool.name.clone(), tool.description.clone()])
        .collect();
    output::table(&["TOOL", "DESCRIPTION"], &rows)
}
