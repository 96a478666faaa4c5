//! The management tools of `/mcp`: environments and their status, tokens,
//! approvals and work sessions, and the compact `list_tools`/`run_tool`.
//!
//! Each one calls the HTTP API's own handler, so the rules (who sees,
//! manages, decides) and the audit entries are the API's. A tool is listed
//! only to members it could serve: the token tools to those who manage
//! some environment they can see, `decide_approval` to people who do.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::Json;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use runner_proto::approvals::{Decide, OnApproval};
use runner_proto::sessions::CreateSession;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::catalogue::{self, Usable};
use super::results::{self, structured};
use crate::access;
use crate::enforcement;
use crate::http::approvals;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, ApiJson, RawBody};
use crate::http::origin::Origin;
use crate::http::{environments, invoke, sessions, tokens};
use crate::state::AppState;
use crate::store::{Member, MemberKind};
use runner_proto::api::InvokeRequest;

/// A management tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manage {
    ListEnvironments,
    EnvironmentStatus,
    TokenStatus,
    GenerateToken,
    ListApprovals,
    GetApproval,
    DecideApproval,
    StartSession,
    EndSession,
    /// Compact mode: the tools of the environments.
    ListTools,
    /// Compact mode: call one.
    RunTool,
}

/// The tools every member may be shown, in listing order.
const ALWAYS: [Manage; 6] = [
    Manage::ListEnvironments,
    Manage::EnvironmentStatus,
    Manage::ListApprovals,
    Manage::GetApproval,
    Manage::StartSession,
    Manage::EndSession,
];

impl Manage {
    pub fn name(self) -> &'static str {
        match self {
            Self::ListEnvironments => "list_environments",
            Self::EnvironmentStatus => "environment_status",
            Self::TokenStatus => "token_status",
            Self::GenerateToken => "generate_token",
            Self::ListApprovals => "list_approvals",
            Self::GetApproval => "get_approval",
            Self::DecideApproval => "decide_approval",
            Self::StartSession => "start_session",
            Self::EndSession => "end_session",
            Self::ListTools => "list_tools",
            Self::RunTool => "run_tool",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::ListEnvironments,
            Self::EnvironmentStatus,
            Self::TokenStatus,
            Self::GenerateToken,
            Self::ListApprovals,
            Self::GetApproval,
            Self::DecideApproval,
            Self::StartSession,
            Self::EndSession,
            Self::ListTools,
            Self::RunTool,
        ]
        .into_iter()
        .find(|tool| tool.name() == name)
    }

    fn description(self) -> &'static str {
        match self {
            Self::ListEnvironments => "List the execution environments (machines) you can see, with their status (pending, online, degraded, offline), tags and runner.",
            Self::EnvironmentStatus => "Show one environment's live status: connected, last heartbeat, why it is degraded, its registration token's state.",
            Self::TokenStatus => "Show the state of an environment's registration token (never the token itself).",
            Self::GenerateToken => "Generate a new registration token for an environment (shown once; the previous one stays valid for a grace period). Only for members who manage the environment.",
            Self::ListApprovals => "List approvals: calls waiting for a person's decision (status pending), or decided ones.",
            Self::GetApproval => "Show an approval; with wait_s, wait up to that many seconds (at most 300) until it is decided and its call has run, and return the call's result.",
            Self::DecideApproval => "Approve or deny a pending approval. Nobody decides their own request; agents never decide.",
            Self::StartSession => "Start a work session: the relay picks a machine (or uses the environment you name) at the first call and keeps every later call on it. Returns the session and its own MCP endpoint, whose tools are that machine's.",
            Self::EndSession => "End a work session.",
            Self::ListTools => "List the tools of the environments you may use (all, or one environment's), with their argument schemas.",
            Self::RunTool => "Call a tool of an environment: name the environment (name or id), the tool and its arguments.",
        }
    }

    fn read_only(self) -> bool {
        matches!(
            self,
            Self::ListEnvironments
                | Self::EnvironmentStatus
                | Self::TokenStatus
                | Self::ListApprovals
                | Self::GetApproval
                | Self::ListTools
        )
    }

    fn schema(self) -> Arc<JsonObject> {
        let schema = match self {
            Self::ListEnvironments => schema_of::<NoArgs>(),
            Self::EnvironmentStatus | Self::TokenStatus | Self::GenerateToken => {
                schema_of::<EnvironmentArg>()
            }
            Self::ListApprovals => schema_of::<ListApprovalsArgs>(),
            Self::GetApproval => schema_of::<GetApprovalArgs>(),
            Self::DecideApproval => schema_of::<DecideArgs>(),
            Self::StartSession => schema_of::<CreateSession>(),
            Self::EndSession => schema_of::<EndSessionArgs>(),
            Self::ListTools => schema_of::<ListToolsArgs>(),
            Self::RunTool => schema_of::<RunToolArgs>(),
        };
        Arc::new(schema)
    }

    pub fn tool(self) -> Tool {
        let mut tool = Tool::new(self.name(), self.description(), self.schema());
        let read_only = self.read_only();
        tool = tool.with_annotations(
            ToolAnnotations::new()
                .read_only(read_only)
                .destructive(!read_only && self == Self::RunTool),
        );
        tool
    }
}

/// The management tools `caller` is shown, given what they may use.
pub fn listed(caller: &Member, usable: &[Usable], compact: bool) -> Vec<Tool> {
    let mut tools: Vec<Manage> = ALWAYS.to_vec();
    let manages_some = caller.is_admin
        || usable
            .iter()
            .any(|usable| access::can_manage(caller, &usable.environment.scope));
    if manages_some {
        tools.extend([Manage::TokenStatus, Manage::GenerateToken]);
    }
    if manages_some && caller.kind != MemberKind::Agent {
        tools.push(Manage::DecideApproval);
    }
    if compact {
        tools.extend([Manage::ListTools, Manage::RunTool]);
    }
    tools.into_iter().map(Manage::tool).collect()
}

fn schema_of<T: JsonSchema>() -> JsonObject {
    match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(Value::Object(mut schema)) => {
            schema.remove("$schema");
            schema.remove("title");
            schema
        }
        _ => JsonObject::new(),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EnvironmentArg {
    /// The environment's name or id.
    environment: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListApprovalsArgs {
    /// `pending`, `approved`, `denied`, `expired` or `all` (default: all).
    #[serde(default)]
    status: Option<String>,
    /// Only this environment's (its id).
    #[serde(default)]
    environment: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetApprovalArgs {
    approval_id: String,
    /// Seconds to wait until it is decided and its call has run (at most 300).
    #[serde(default)]
    wait_s: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Deny,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DecideArgs {
    approval_id: String,
    decision: Decision,
    /// Why, for the record.
    #[serde(default)]
    comment: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EndSessionArgs {
    session_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListToolsArgs {
    /// Only this environment's tools (name or id).
    #[serde(default)]
    environment: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunToolArgs {
    /// The environment's name or id.
    environment: String,
    /// The tool's name, as `list_tools` shows it.
    tool: String,
    /// The tool's arguments.
    #[serde(default)]
    args: Option<JsonObject>,
    /// Seconds before the call is cancelled (default 300).
    #[serde(default)]
    timeout_s: Option<u64>,
}

/// Who calls a management tool, from where.
pub struct Context<'a> {
    pub state: &'a AppState,
    pub caller: &'a Arc<Member>,
    pub origin: &'a Origin,
}

/// Runs management tool `tool` with `arguments`.
pub async fn call(
    context: &Context<'_>,
    tool: Manage,
    arguments: JsonObject,
) -> rmcp::model::CallToolResult {
    match run(context, tool, arguments).await {
        Ok(result) => result,
        Err(error) => results::from_error(&error),
    }
}

fn parse<T: DeserializeOwned>(tool: Manage, arguments: JsonObject) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(arguments)).map_err(|error| {
        ApiError::bad_request(format!("invalid arguments for {}: {error}", tool.name()))
    })
}

async fn run(
    context: &Context<'_>,
    tool: Manage,
    arguments: JsonObject,
) -> Result<rmcp::model::CallToolResult, ApiError> {
    let Context {
        state,
        caller,
        origin,
    } = context;
    let state = (*state).clone();
    let who = Caller(Arc::clone(caller));
    Ok(match tool {
        Manage::ListEnvironments => {
            parse::<NoArgs>(tool, arguments)?;
            let Json(list) = environments::list(State(state), who).await?;
            structured(&list)
        }
        Manage::EnvironmentStatus => {
            let EnvironmentArg { environment } = parse(tool, arguments)?;
            let Json(status) = environments::status(State(state), who, Path(environment)).await?;
            structured(&status)
        }
        Manage::TokenStatus => {
            let EnvironmentArg { environment } = parse(tool, arguments)?;
            let Json(status) = tokens::status(State(state), who, Path(environment)).await?;
            structured(&status)
        }
        Manage::GenerateToken => {
            let EnvironmentArg { environment } = parse(tool, arguments)?;
            let Json(token) = tokens::generate(
                State(state),
                who,
                (*origin).clone(),
                Path(environment),
                Ok(Query(HashMap::new())),
            )
            .await?;
            structured(&token)
        }
        Manage::ListApprovals => {
            let ListApprovalsArgs {
                status,
                environment,
            } = parse(tool, arguments)?;
            let query = approvals::ListQuery {
                status,
                environment,
                limit: None,
            };
            let Json(list) = approvals::list(State(state), who, Query(query)).await?;
            structured(&list)
        }
        Manage::GetApproval => {
            let GetApprovalArgs {
                approval_id,
                wait_s,
            } = parse(tool, arguments)?;
            // The tool says "at most 300": a longer wait is cut, not refused.
            let query = approvals::GetQuery {
                wait: wait_s
                    .map(|seconds| seconds.min(runner_proto::approvals::MAX_APPROVAL_WAIT_S)),
            };
            let Json(approval) =
                approvals::get(State(state), who, Path(approval_id), Query(query)).await?;
            structured(&approval)
        }
        Manage::DecideApproval => {
            let DecideArgs {
                approval_id,
                decision,
                comment,
            } = parse(tool, arguments)?;
            let body = ApiJson(Decide { comment });
            let origin = (*origin).clone();
            let Json(approval) = match decision {
                Decision::Approve => {
                    approvals::approve(State(state), who, origin, Path(approval_id), body).await?
                }
                Decision::Deny => {
                    approvals::deny(State(state), who, origin, Path(approval_id), body).await?
                }
            };
            structured(&approval)
        }
        Manage::StartSession => {
            let request: CreateSession = parse(tool, arguments)?;
            let public = state.public_url.clone();
            let (_, Json(session)) =
                sessions::create(State(state), who, (*origin).clone(), ApiJson(request)).await?;
            let endpoint = format!(
                "{}/mcp/sessions/{}",
                public.as_deref().unwrap_or(""),
                session.id
            );
            let mut value = serde_json::to_value(&session).map_err(|_| ApiError::internal())?;
            value["mcp_endpoint"] = json!(endpoint);
            rmcp::model::CallToolResult::structured(value)
        }
        Manage::EndSession => {
            let EndSessionArgs { session_id } = parse(tool, arguments)?;
            sessions::end(
                State(state),
                who,
                (*origin).clone(),
                Path(session_id.clone()),
            )
            .await?;
            structured(&json!({"session_id": session_id, "ended": true}))
        }
        Manage::ListTools => {
            let ListToolsArgs { environment } = parse(tool, arguments)?;
            structured(&tool_list(&state, caller, environment.as_deref()).await?)
        }
        Manage::RunTool => {
            let RunToolArgs {
                environment,
                tool: name,
                args,
                timeout_s,
            } = parse(tool, arguments)?;
            let request = InvokeRequest {
                tool_name: name,
                args: Value::Object(args.unwrap_or_default()),
                timeout_s,
                call_id: None,
                on_approval: OnApproval::Wait,
                approval_wait_s: None,
            };
            results::from_answer(
                invoke_environment(&state, caller, origin, &environment, &request).await,
            )
            .await
        }
    })
}

/// `invoke-tool` on environment `id` (an id or a name), as the HTTP API
/// runs it.
pub async fn invoke_environment(
    state: &AppState,
    caller: &Arc<Member>,
    origin: &Origin,
    id: &str,
    request: &InvokeRequest,
) -> Result<axum::response::Response, ApiError> {
    let body = serde_json::to_vec(request).map_err(|_| ApiError::internal())?;
    invoke::invoke(
        State(state.clone()),
        Caller(Arc::clone(caller)),
        origin.clone(),
        Path(id.to_owned()),
        HeaderMap::new(),
        RawBody(body.into()),
    )
    .await
}

/// Compact mode's `list_tools`.
#[derive(Debug, Serialize)]
struct ToolListing {
    environments: Vec<EnvironmentTools>,
}

#[derive(Debug, Serialize)]
struct EnvironmentTools {
    environment: String,
    environment_id: String,
    connected: bool,
    host: Option<String>,
    tools: Vec<ToolEntry>,
}

#[derive(Debug, Serialize)]
struct ToolEntry {
    tool: String,
    description: String,
    needs_approval: bool,
    input_schema: Value,
}

/// Every callable tool, by environment (or of the one named `only`).
async fn tool_list(
    state: &AppState,
    caller: &Member,
    only: Option<&str>,
) -> Result<ToolListing, ApiError> {
    let mut environments = Vec::new();
    for usable in catalogue::usable(state, caller, true).await? {
        let Usable {
            slug,
            environment,
            presence,
        } = usable;
        if only
            .is_some_and(|only| only != environment.id && only != environment.name && only != slug)
        {
            continue;
        }
        let tools = presence.as_deref().map_or_else(Vec::new, |presence| {
            catalogue::callable(&environment, presence)
                .map(|tool| ToolEntry {
                    tool: tool.name.clone(),
                    description: tool.description.clone(),
                    needs_approval: enforcement::approval_rule(&environment.policy, &tool.name)
                        .is_some(),
                    input_schema: tool.input_schema.clone(),
                })
                .collect()
        });
        environments.push(EnvironmentTools {
            connected: presence.is_some(),
            host: presence
                .as_ref()
                .map(|presence| presence.host.hostname.clone()),
            environment: environment.name,
            environment_id: environment.id,
            tools,
        });
    }
    match only {
        Some(only) if environments.is_empty() => Err(ApiError::environment_not_found(only)),
        _ => Ok(ToolListing { environments }),
    }
}
