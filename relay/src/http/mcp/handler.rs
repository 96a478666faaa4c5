//! The MCP server: `initialize`, `tools/list` and `tools/call` for the
//! member whose API key came with the request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::request::Parts;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use runner_proto::api::InvokeRequest;
use runner_proto::approvals::OnApproval;
use serde_json::Value;

use super::catalogue::{self, SlugCache};
use super::manage::{self, Manage};
use super::{names, results, Endpoint};
use crate::audit::client_name;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, RawBody};
use crate::http::origin::Origin;
use crate::http::sessions;
use crate::state::AppState;
use crate::store::Member;

/// The relay's MCP server; one per request (the transport is stateless),
/// sharing what requests have in common.
#[derive(Debug, Clone)]
pub struct McpServer {
    state: AppState,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    slugs: SlugCache,
    /// The client each API key last named in `initialize`, for the audit
    /// log of later calls (which, stateless, do not repeat it).
    clients: Mutex<HashMap<Arc<str>, String>>,
}

/// Keys above which the remembered client names are forgotten.
const MAX_CLIENTS: usize = 10_000;

/// Who sent a request, through which endpoint.
pub(super) struct Request {
    caller: Arc<Member>,
    origin: Origin,
    endpoint: Endpoint,
}

impl McpServer {
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            shared: Arc::default(),
        }
    }

    /// Whether `Host` values are checked (`--mcp-allowed-host`).
    pub(super) fn checks_hosts(&self) -> bool {
        !self.state.mcp.allowed_hosts.is_empty()
    }

    /// What [`super::authenticate`] left in the request the SDK handles.
    fn request(&self, context: &RequestContext<RoleServer>) -> Result<Request, ErrorData> {
        let parts = context
            .extensions
            .get::<Parts>()
            .ok_or_else(|| ErrorData::internal_error("request without its HTTP parts", None))?;
        self.request_of(parts, context.meta.client_info())
    }

    /// What [`super::authenticate`] left in `parts`; `client` is what the
    /// request's `_meta` names, if anything.
    pub(super) fn request_of(
        &self,
        parts: &Parts,
        client: Option<Implementation>,
    ) -> Result<Request, ErrorData> {
        let Caller(caller) = parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("unauthenticated request", None))?;
        let endpoint = parts
            .extensions
            .get::<Endpoint>()
            .cloned()
            .unwrap_or(Endpoint::All);
        let origin = if self.state.audit.enabled() {
            let mut origin = Origin::of(parts);
            origin.client = Some(self.client(client, &origin));
            origin
        } else {
            Origin::default()
        };
        Ok(Request {
            caller,
            origin,
            endpoint,
        })
    }

    /// The MCP client's name for the audit log: the one the request
    /// carries (protocol 2026-07-28 and later), else the one this key last
    /// gave in `initialize`, else its `User-Agent`.
    fn client(&self, client: Option<Implementation>, origin: &Origin) -> String {
        let named = client
            .map(|info| format!("{} {}", info.name, info.version))
            .or_else(|| {
                let key = origin.key_id.as_ref()?;
                self.shared.clients.lock().ok()?.get(key).cloned()
            })
            .or_else(|| origin.client.clone())
            .unwrap_or_else(|| "unnamed client".to_owned());
        client_name(&format!("mcp: {named}")).unwrap_or_default()
    }

    fn remember_client(&self, parts: Option<&Parts>, info: &Implementation) {
        let Some(key) =
            parts.and_then(|parts| parts.extensions.get::<crate::http::origin::KeyId>())
        else {
            return;
        };
        if let Ok(mut clients) = self.shared.clients.lock() {
            if clients.len() >= MAX_CLIENTS {
                clients.clear();
            }
            clients.insert(key.0.clone(), format!("{} {}", info.name, info.version));
        }
    }

    async fn tools(&self, request: &Request) -> Result<Vec<Tool>, ApiError> {
        match &request.endpoint {
            Endpoint::Session(id) => self.session_tools(request, id).await,
            Endpoint::All => self.all_tools(&request.caller).await,
        }
    }

    /// `/mcp`: every usable environment's callable tools (or the compact
    /// pair), then management.
    async fn all_tools(&self, caller: &Member) -> Result<Vec<Tool>, ApiError> {
        let usable = catalogue::usable(&self.state, caller, true).await?;
        let compact = usable.len() > self.state.mcp.max_environments;
        let mut tools = Vec::new();
        if !compact {
            for usable in &usable {
                let Some(presence) = &usable.presence else {
                    continue;
                };
                for spec in catalogue::callable(&usable.environment, presence) {
                    let name = names::tool_name(&usable.slug, &spec.name);
                    tools.push(catalogue::mcp_tool(
                        name,
                        spec,
                        &usable.environment,
                        presence,
                    ));
                }
            }
        }
        tools.extend(manage::listed(caller, &usable, compact));
        Ok(tools)
    }

    /// `/mcp/sessions/{id}`: the session's environment's callable tools,
    /// under their own names. A session not yet on a machine is placed
    /// now, as its first call would.
    async fn session_tools(&self, request: &Request, id: &str) -> Result<Vec<Tool>, ApiError> {
        let (environment, presence) =
            sessions::placed_environment(&self.state, &request.caller, id).await?;
        Ok(catalogue::callable(&environment, &presence)
            .map(|spec| catalogue::mcp_tool(spec.name.clone(), spec, &environment, &presence))
            .collect())
    }

    pub(super) async fn call(
        &self,
        request: &Request,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, ErrorData> {
        let name = params.name.as_ref();
        let arguments = params.arguments.unwrap_or_default();
        let invoke = |tool: &str| InvokeRequest {
            tool_name: tool.to_owned(),
            args: Value::Object(arguments.clone()),
            timeout_s: None,
            call_id: None,
            on_approval: OnApproval::Wait,
            approval_wait_s: None,
        };
        match &request.endpoint {
            Endpoint::Session(id) => {
                let body = serde_json::to_vec(&invoke(name))
                    .map_err(|_| ErrorData::internal_error("arguments not serialisable", None))?;
                let answer = sessions::invoke(
                    axum::extract::State(self.state.clone()),
                    Caller(request.caller.clone()),
                    request.origin.clone(),
                    axum::extract::Path(id.clone()),
                    axum::http::HeaderMap::new(),
                    RawBody(body.into()),
                )
                .await;
                Ok(results::from_answer(answer).await)
            }
            Endpoint::All => {
                if let Some(tool) = Manage::parse(name) {
                    return self.manage(request, tool, arguments).await;
                }
                let unknown = || {
                    ErrorData::invalid_params(
                        format!("unknown tool {name:?}: tools/list shows the tools you may call"),
                        None,
                    )
                };
                let (slug, tool) = names::split(name).ok_or_else(unknown)?;
                let resolved = self
                    .shared
                    .slugs
                    .resolve(&self.state, &request.caller, slug)
                    .await
                    .map_err(protocol_error)?;
                // In compact mode these names are not listed, so not callable.
                let environment_id = resolved
                    .id
                    .filter(|_| resolved.usable <= self.state.mcp.max_environments)
                    .ok_or_else(unknown)?;
                let answer = manage::invoke_environment(
                    &self.state,
                    &request.caller,
                    &request.origin,
                    &environment_id,
                    &invoke(tool),
                )
                .await;
                Ok(results::from_answer(answer).await)
            }
        }
    }

    async fn manage(
        &self,
        request: &Request,
        tool: Manage,
        arguments: rmcp::model::JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let usable = catalogue::usable(&self.state, &request.caller, false)
            .await
            .map_err(protocol_error)?;
        let compact = usable.len() > self.state.mcp.max_environments;
        let listed = manage::listed(&request.caller, &usable, compact);
        if !listed.iter().any(|listed| listed.name == tool.name()) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}: tools/list shows the tools you may call",
                    tool.name()
                ),
                None,
            ));
        }
        let context = manage::Context {
            state: &self.state,
            caller: &request.caller,
            origin: &request.origin,
        };
        Ok(manage::call(&context, tool, arguments).await)
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("runner-relay", env!("CARGO_PKG_VERSION"))
                    .with_title("runner relay"),
            )
            .with_instructions(
                "Tools named <environment>__<tool> run on that environment's machine. \
                 list_environments shows the machines and their status; start_session pins \
                 a machine for a series of calls. A call that needs a person's approval \
                 returns an approval id: wait for it with get_approval.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.remember_client(context.extensions.get::<Parts>(), &request.client_info);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let request = self.request(&context)?;
        let tools = self.tools(&request).await.map_err(protocol_error)?;
        // Each member's own list, that changes whenever a runner's
        // catalogue or a policy does: nobody else may keep it, and it is
        // asked for afresh.
        Ok(ListToolsResult::with_all_items(tools)
            .with_cache_scope(CacheScope::Private)
            .with_ttl_ms(0))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let request = self.request(&context)?;
        self.call(&request, params)
            .await
            .map(CallToolResponse::from)
    }
}

/// An API error met while listing: the client sees its message.
fn protocol_error(error: ApiError) -> ErrorData {
    let data = serde_json::json!({"code": error.code});
    if error.status.is_client_error() {
        ErrorData::invalid_request(error.message, Some(data))
    } else {
        ErrorData::internal_error(error.message, Some(data))
    }
}
