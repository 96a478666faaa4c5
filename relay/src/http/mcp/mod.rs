//! `/mcp`: the relay as an MCP server (docs/mcp.md).
//!
//! MCP over streamable HTTP, served by the official SDK (`rmcp`) in its
//! stateless mode: every POST stands alone, so a client that drops (or
//! never keeps) the `Mcp-Session-Id` header keeps working, on any relay of
//! a cluster. Answers are plain JSON where the call allows.
//!
//! * `/mcp`: the tools of every environment the API key's member may use
//!   (`<environment>__<tool>`, or the compact `run_tool`/`list_tools` when
//!   there are more than `--mcp-max-environments`), plus management.
//! * `/mcp/sessions/{id}`: the tools of one work session's environment,
//!   under their own names.
//!
//! Authentication is the API's: `Authorization: Bearer rnrk_…`, checked
//! here before the SDK sees the request, so a member's key shows exactly
//! that member's view. Every tool call goes through the same functions as
//! `invoke-tool` (policy, approvals, audit, metrics).

mod catalogue;
mod fast_call;
mod handler;
mod manage;
mod names;
mod results;

use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::auth::Caller;
use super::error::ApiError;
use super::MAX_BODY_BYTES;
use crate::state::AppState;

pub use handler::McpServer;

/// The MCP endpoint of every environment the caller may use.
pub const MCP: &str = "/mcp";
/// The MCP endpoint of one work session.
pub const MCP_SESSION: &str = "/mcp/sessions/{id}";
const SESSION_PREFIX: &str = "/mcp/sessions/";

/// Which endpoint a request came to (left in the request by
/// [`authenticate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `/mcp`.
    All,
    /// `/mcp/sessions/{id}`.
    Session(String),
}

/// The two MCP routes, or none with `serve --no-mcp`.
pub fn routes(state: &AppState) -> Router<AppState> {
    let settings = &state.mcp;
    if !settings.enabled {
        return Router::new();
    }
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(state.shutdown.child_token());
    // A bearer key is the only credential: a page in a browser cannot send
    // it on its own, so neither DNS rebinding nor a forged form gets in
    // with a member's rights. Browsers name their page in `Origin`; none
    // is let in unless listed. `Host` is checked only when listed, so a
    // relay behind a proxy or under its own domain works as deployed.
    config = if settings.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(settings.allowed_hosts.clone())
    };
    config = if settings.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(settings.allowed_origins.clone())
    };
    let server = McpServer::new(state.clone());
    let factory = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let entry = Entry {
        server,
        service,
        fast: settings.fast_call,
    };
    Router::new()
        .route(MCP, any(serve).with_state(entry.clone()))
        .route(MCP_SESSION, any(serve).with_state(entry))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
}

/// What both MCP routes serve with.
#[derive(Clone)]
struct Entry {
    server: McpServer,
    service: StreamableHttpService<McpServer, NeverSessionManager>,
    /// Plain `tools/call`s answered by [`fast_call`].
    fast: bool,
}

/// A plain `tools/call` by [`fast_call`], everything else by the SDK.
async fn serve(State(entry): State<Entry>, request: Request) -> Response {
    let request = if entry.fast && request.method() == Method::POST {
        let (parts, body) = request.into_parts();
        let Ok(body) = to_bytes(body, MAX_BODY_BYTES).await else {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("an MCP message is at most {MAX_BODY_BYTES} bytes"),
            )
            .into_response();
        };
        if let Some(answer) = fast_call::answer(&entry.server, &parts, &body).await {
            return answer;
        }
        Request::from_parts(parts, Body::from(body))
    } else {
        request
    };
    entry.service.handle(request).await.map(Body::new)
}

/// Lets in requests with a valid API key, and tells the handler who made
/// them and through which endpoint. A refused key gets the API's 401, with
/// `WWW-Authenticate` as MCP clients expect.
async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let caller = match <Caller as FromRequestParts<AppState>>::from_request_parts(
        &mut parts, &state,
    )
    .await
    {
        Ok(Caller(caller)) => caller,
        Err(error) => {
            let mut response = error.into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"runner-relay\""),
            );
            return response;
        }
    };
    let endpoint = endpoint_of(&parts);
    parts.extensions.insert(Caller(caller));
    parts.extensions.insert(endpoint);
    next.run(Request::from_parts(parts, body)).await
}

fn endpoint_of(parts: &Parts) -> Endpoint {
    match parts.uri.path().strip_prefix(SESSION_PREFIX) {
        Some(id) if !id.is_empty() => Endpoint::Session(id.trim_end_matches('/').to_owned()),
        _ => Endpoint::All,
    }
}
