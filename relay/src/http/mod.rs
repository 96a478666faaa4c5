//! The HTTP surface: the API of SPEC §7, the runner endpoints, health
//! probes and the OpenAPI document, with JSON errors everywhere.

mod approvals;
mod audit;
mod auth;
mod call_audit;
mod console;
mod environments;
pub mod error;
mod invocations;
pub mod invoke;
pub mod mcp;
mod members;
pub mod metrics;
pub mod openapi;
mod origin;
mod runner;
pub mod sandboxes;
#[cfg(test)]
mod self_wake;
mod sessions;
mod templates;
mod tokens;
pub mod websocket;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use runner_proto::api::{API_VERSION, API_VERSION_HEADER};
use tracing::Instrument;

use self::error::ApiError;
use crate::state::AppState;

pub use runner_proto::api::MAX_BODY_BYTES;

pub const ENVIRONMENTS: &str = "/execution-environments";
pub const ENVIRONMENT: &str = "/execution-environments/{id}";
pub const STATUS: &str = "/execution-environments/{id}/status";
pub const GENERATE_TOKEN: &str = "/execution-environments/{id}/generate-token";
pub const TOKEN_STATUS: &str = "/execution-environments/{id}/token-status";
pub const REVOKE_TOKEN: &str = "/execution-environments/{id}/revoke-token";
pub const DEPLOY: &str = "/execution-environments/{id}/deploy";
pub const UNDEPLOY: &str = "/execution-environments/{id}/undeploy";
pub const DEPLOYMENT: &str = "/execution-environments/{id}/deployment";
pub const TOOLS: &str = "/execution-environments/{id}/tools";
pub const INVOKE_TOOL: &str = "/execution-environments/{id}/invoke-tool";
pub const INVOCATION: &str = "/invocations/{call_id}";
pub const SESSIONS: &str = "/sessions";
pub const SESSION: &str = "/sessions/{id}";
pub const SESSION_INVOKE_TOOL: &str = "/sessions/{id}/invoke-tool";
pub const SANDBOXES: &str = "/sandboxes";
pub const SANDBOX: &str = "/sandboxes/{id}";
pub const TEAMS: &str = "/teams";
pub const TEAM: &str = "/teams/{name}";
pub const TEAM_MEMBERS: &str = "/teams/{name}/members";
pub const TEAM_MEMBER: &str = "/teams/{name}/members/{member}";
pub const MEMBERS: &str = "/members";
pub const MEMBER: &str = "/members/{id}";
pub const APPROVALS: &str = "/approvals";
pub const APPROVAL: &str = "/approvals/{id}";
pub const APPROVE: &str = "/approvals/{id}/approve";
pub const DENY: &str = "/approvals/{id}/deny";
pub const HEALTHZ: &str = "/healthz";
pub const READYZ: &str = "/readyz";
pub const OPENAPI: &str = "/openapi.json";
pub const METRICS: &str = "/metrics";
pub const AUDIT: &str = "/audit";
pub const TEMPLATES: &str = "/templates";
pub const TEMPLATE: &str = "/templates/{id}";

/// Every (method, path) the router serves; [`router`] is built from the
/// same constants, and a test checks each one against the router and the
/// OpenAPI document.
pub const ROUTES: &[(Method, &str)] = &[
    (Method::GET, ENVIRONMENTS),
    (Method::POST, ENVIRONMENTS),
    (Method::GET, ENVIRONMENT),
    (Method::PATCH, ENVIRONMENT),
    (Method::DELETE, ENVIRONMENT),
    (Method::GET, STATUS),
    (Method::POST, GENERATE_TOKEN),
    (Method::GET, TOKEN_STATUS),
    (Method::POST, REVOKE_TOKEN),
    (Method::POST, DEPLOY),
    (Method::POST, UNDEPLOY),
    (Method::GET, DEPLOYMENT),
    (Method::GET, TOOLS),
    (Method::POST, INVOKE_TOOL),
    (Method::GET, INVOCATION),
    (Method::POST, SESSIONS),
    (Method::GET, SESSIONS),
    (Method::GET, SESSION),
    (Method::DELETE, SESSION),
    (Method::POST, SESSION_INVOKE_TOOL),
    (Method::GET, SANDBOXES),
    (Method::GET, SANDBOX),
    (Method::POST, runner_proto::RUNNER_REGISTER_PATH),
    (Method::GET, runner_proto::RUNNER_REGISTER_PATH),
    (Method::GET, runner_proto::RUNNER_CONNECT_PATH),
    (Method::POST, TEAMS),
    (Method::GET, TEAMS),
    (Method::GET, TEAM),
    (Method::PATCH, TEAM),
    (Method::POST, TEAM_MEMBERS),
    (Method::DELETE, TEAM_MEMBER),
    (Method::POST, MEMBERS),
    (Method::GET, MEMBER),
    (Method::PATCH, MEMBER),
    (Method::GET, APPROVALS),
    (Method::GET, APPROVAL),
    (Method::POST, APPROVE),
    (Method::POST, DENY),
    (Method::GET, HEALTHZ),
    (Method::GET, READYZ),
    (Method::GET, OPENAPI),
    (Method::GET, METRICS),
    (Method::GET, AUDIT),
    (Method::POST, TEMPLATES),
    (Method::GET, TEMPLATES),
    (Method::GET, TEMPLATE),
    (Method::PATCH, TEMPLATE),
    (Method::DELETE, TEMPLATE),
    (Method::POST, mcp::MCP),
    (Method::POST, mcp::MCP_SESSION),
];

/// The relay's HTTP application.
pub fn router(state: AppState) -> Router {
    let counted = state.metrics.clone();
    let mcp = mcp::routes(&state);
    let console = console::routes(&state);
    Router::new()
        .route(
            ENVIRONMENTS,
            get(environments::list).post(environments::create),
        )
        .route(
            ENVIRONMENT,
            get(environments::get)
                .patch(environments::update)
                .delete(environments::delete),
        )
        .route(STATUS, get(environments::status))
        .route(GENERATE_TOKEN, post(tokens::generate))
        .route(TOKEN_STATUS, get(tokens::status))
        .route(REVOKE_TOKEN, post(tokens::revoke))
        .route(DEPLOY, post(sandboxes::deploy))
        .route(UNDEPLOY, post(sandboxes::undeploy))
        .route(DEPLOYMENT, get(sandboxes::deployment))
        .route(TOOLS, get(environments::tools))
        .route(INVOKE_TOOL, post(invoke::invoke))
        .route(INVOCATION, get(invocations::get))
        .route(SESSIONS, post(sessions::create).get(sessions::list_api))
        .route(SESSION, get(sessions::get).delete(sessions::end))
        .route(SESSION_INVOKE_TOOL, post(sessions::invoke))
        .route(SANDBOXES, get(sandboxes::list_api))
        .route(SANDBOX, get(sandboxes::get))
        .route(
            runner_proto::RUNNER_REGISTER_PATH,
            post(runner::register).get(runner::check),
        )
        .route(runner_proto::RUNNER_CONNECT_PATH, get(runner::connect))
        .route(TEAMS, post(members::create_team).get(members::list_teams))
        .route(TEAM, get(members::get_team).patch(members::update_team))
        .route(TEAM_MEMBERS, post(members::add_team_member))
        .route(TEAM_MEMBER, delete(members::remove_team_member))
        .route(MEMBERS, post(members::create_member))
        .route(
            MEMBER,
            get(members::get_member).patch(members::update_member),
        )
        .route(APPROVALS, get(approvals::list_api))
        .route(APPROVAL, get(approvals::get_api))
        .route(APPROVE, post(approvals::approve))
        .route(DENY, post(approvals::deny))
        .route(HEALTHZ, get(healthz))
        .route(READYZ, get(readyz))
        .route(OPENAPI, get(openapi_document))
        .route(METRICS, get(metrics::scrape))
        .route(AUDIT, get(audit::list))
        .route(TEMPLATES, post(templates::create).get(templates::list))
        .route(
            TEMPLATE,
            get(templates::get)
                .patch(templates::update)
                .delete(templates::delete),
        )
        .merge(mcp)
        .merge(console)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            counted,
            metrics::count_requests,
        ))
        .layer(middleware::from_fn(request_span))
        .with_state(state)
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn readyz(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => Json(serde_json::json!({ "status": "ready" })).into_response(),
        Err(error) => {
            tracing::warn!(%error, "store not reachable");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                "the relay's store is not reachable",
            )
            .into_response()
        }
    }
}

async fn openapi_document() -> Json<serde_json::Value> {
    Json(openapi::document())
}

async fn not_found(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "route_not_found",
        format!("no route for {method} {}", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed on {}", uri.path()),
    )
}

/// The API version header on every answer; with `--access-log`, one span
/// per request and a line per answer (off, neither is built: their cost per
/// `ping` is in BENCHMARKS.md).
async fn request_span(request: Request, next: Next) -> Response {
    let span = tracing::info_span!(
        target: invoke::ACCESS_LOG,
        "request",
        method = %request.method(),
        path = %request.uri().path(),
    );
    async move {
        let started = std::time::Instant::now();
        let mut response = next.run(request).await;
        response
            .headers_mut()
            .insert(API_VERSION_HEADER, HeaderValue::from_static(API_VERSION));
        tracing::info!(
            target: invoke::ACCESS_LOG,
            status = response.status().as_u16(),
            ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "answered"
        );
        response
    }
    .instrument(span)
    .await
}
