//! What a member sees through MCP: the environments they may use, their
//! slugs, and the tools a call could be allowed to, as MCP tools.
//!
//! Listing is authorisation: a tool is listed iff [`enforcement::tool_refusal`]
//! (the part of `invoke-tool`'s check that does not depend on arguments)
//! lets it through for an environment the member may use, on a runner that
//! offers it. Tools that need a person's approval are listed and marked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use runner_proto::tools::{self, MCP_SEPARATOR};
use runner_proto::ws::ToolSpec;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::names;
use crate::enforcement;
use crate::environment::EnvironmentRecord;
use crate::http::auth::usable_environments;
use crate::http::error::ApiError;
use crate::read_cache::Generation;
use crate::routing::{CallRouter, Presence};
use crate::state::AppState;
use crate::store::Member;

/// An environment the member may use, as MCP shows it.
pub struct Usable {
    pub slug: String,
    pub environment: EnvironmentRecord,
    pub presence: Option<Arc<Presence>>,
}

/// The environments `caller` may use, by name, with their slugs and (when
/// `with_presence`) their runners.
pub async fn usable(
    state: &AppState,
    caller: &Member,
    with_presence: bool,
) -> Result<Vec<Usable>, ApiError> {
    let mut environments = usable_environments(state, caller).await?;
    environments.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    let slugs = names::slugs(
        environments
            .iter()
            .map(|environment| (environment.id.as_str(), environment.name.as_str())),
    );
    let mut usable = Vec::with_capacity(environments.len());
    for (environment, slug) in environments.into_iter().zip(slugs) {
        let presence = if with_presence {
            state.router.presence(&environment.id).await
        } else {
            None
        };
        usable.push(Usable {
            slug,
            environment,
            presence,
        });
    }
    Ok(usable)
}

/// The tools of `presence` a call could be allowed to in `environment`.
pub fn callable<'a>(
    environment: &'a EnvironmentRecord,
    presence: &'a Presence,
) -> impl Iterator<Item = &'a ToolSpec> + 'a {
    presence.tools.iter().filter(|tool| {
        enforcement::tool_refusal(&environment.policy, environment.tier, &tool.name).is_none()
    })
}

/// `spec` as the MCP tool `name`: the runner's schema, a description that
/// names the machine, and hints from the tool's nature.
pub fn mcp_tool(
    name: String,
    spec: &ToolSpec,
    environment: &EnvironmentRecord,
    presence: &Presence,
) -> Tool {
    let approval = enforcement::approval_rule(&environment.policy, &spec.name).is_some();
    let mut description = format!(
        "{} (on {}, environment {:?}, {}/{})",
        spec.description.trim_end_matches('.'),
        presence.host.hostname,
        environment.name,
        presence.host.os,
        presence.host.arch,
    );
    if approval {
        description.push_str(
            ". Needs a person's approval: a call answers with an approval id to wait for",
        );
    }
    let mut tool = Tool::new_with_raw(name, Some(description.into()), input_schema(spec));
    if let Some(annotations) = annotations(&spec.name) {
        tool = tool.with_annotations(annotations);
    }
    if approval {
        let mut meta = rmcp::model::MetaObject::new();
        meta.0
            .insert("runner/approval_required".to_owned(), Value::Bool(true));
        tool.meta = Some(meta);
    }
    tool
}

/// The runner's argument schema, or an open object if it sent none.
fn input_schema(spec: &ToolSpec) -> Arc<JsonObject> {
    match &spec.input_schema {
        Value::Object(schema) if !schema.is_empty() => Arc::new(schema.clone()),
        _ => match json!({"type": "object"}) {
            Value::Object(schema) => Arc::new(schema),
            _ => Arc::default(),
        },
    }
}

/// Tools that only read are marked so; those that change the machine as
/// destructive. A relayed MCP server's tool is left to the client's
/// defaults: its nature is not known here.
fn annotations(tool: &str) -> Option<ToolAnnotations> {
    const READ_ONLY: [&str; 7] = [
        tools::PING,
        tools::FILE_READ,
        tools::LIST,
        tools::GLOB,
        tools::GREP,
        tools::CLAUDE_SESSIONS,
        tools::CLAUDE_STATUS,
    ];
    if tool.contains(MCP_SEPARATOR) {
        return None;
    }
    let read_only = READ_ONLY.contains(&tool);
    Some(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(!read_only),
    )
}

/// How long a member's slugs are reused (calls resolve names with them).
const SLUGS_TTL: Duration = Duration::from_secs(5);

/// A member's slugs → environment ids, kept briefly so that a call does not
/// list every environment to find its own. Kept only where the relay's
/// read copies are (one relay on SQLite), and dropped as soon as any
/// environment changes; a name not found is looked up afresh.
#[derive(Debug, Default)]
pub struct SlugCache {
    members: Mutex<HashMap<String, Slugs>>,
}

#[derive(Debug)]
struct Slugs {
    generation: Generation,
    until: Instant,
    ids: Arc<HashMap<String, String>>,
}

/// A slug looked up for a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The environment it names, if any.
    pub id: Option<String>,
    /// How many environments the member may use (the compact-mode test).
    pub usable: usize,
}

/// Members above which the cache is emptied rather than grown.
const MAX_MEMBERS: usize = 10_000;

impl SlugCache {
    /// The environment `slug` names for `caller`, if any.
    pub async fn resolve(
        &self,
        state: &AppState,
        caller: &Member,
        slug: &str,
    ) -> Result<Resolved, ApiError> {
        let generation = state.reads.generation();
        if let Some(ids) = self.fresh(&caller.id, generation) {
            if let Some(id) = ids.get(slug) {
                return Ok(Resolved {
                    id: Some(id.clone()),
                    usable: ids.len(),
                });
            }
        }
        let ids: HashMap<String, String> = usable(state, caller, false)
            .await?
            .into_iter()
            .map(|usable| (usable.slug, usable.environment.id))
            .collect();
        let found = Resolved {
            id: ids.get(slug).cloned(),
            usable: ids.len(),
        };
        if state.reads.enabled() {
            let mut members = self
                .members
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if members.len() >= MAX_MEMBERS {
                members.clear();
            }
            members.insert(
                caller.id.clone(),
                Slugs {
                    generation,
                    until: Instant::now() + SLUGS_TTL,
                    ids: Arc::new(ids),
                },
            );
        }
        Ok(found)
    }

    fn fresh(&self, member: &str, generation: Generation) -> Option<Arc<HashMap<String, String>>> {
        let members = self
            .members
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        members
            .get(member)
            .filter(|slugs| slugs.generation == generation && slugs.until > Instant::now())
            .map(|slugs| slugs.ids.clone())
    }
}
