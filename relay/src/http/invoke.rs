//! `invoke-tool`: check, relay one call to the environment's runner, wait
//! for its result, and cancel it on the runner when the wait ends early.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use runner_proto::api::{InvokeRequest, InvokeResponse, DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S};
use runner_proto::ws::Call;
use serde_json::Value;
use tracing::Instrument;

use super::auth::{environment_for, Caller, Intent};
use super::error::{ApiError, RawBody};
use crate::enforcement::{self, Refusal};
use crate::routing::{CallRouter, RouteError};
use crate::state::AppState;

/// Parses the body by hand so that every shape error names its field.
pub fn parse_request(body: &[u8]) -> Result<InvokeRequest, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!("request body is not valid JSON: {error}"))
    })?;
    let Value::Object(mut fields) = value else {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    };
    let tool_name = match fields.remove("tool_name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        Some(Value::String(_)) => {
            return Err(ApiError::bad_request(
                "field \"tool_name\" must not be empty",
            ))
        }
        None => return Err(ApiError::bad_request("missing field \"tool_name\"")),
        Some(_) => {
            return Err(ApiError::bad_request(
                "field \"tool_name\" must be a string",
            ))
        }
    };
    let args = match fields.remove("args") {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(args @ Value::Object(_)) => args,
        Some(_) => {
            return Err(ApiError::bad_request(
                "field \"args\" must be a JSON object",
            ))
        }
    };
    let timeout_s = match fields.remove("timeout_s") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_S,
        Some(value) => value
            .as_u64()
            .filter(|seconds| (1..=MAX_TIMEOUT_S).contains(seconds))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "field \"timeout_s\" must be an integer from 1 to {MAX_TIMEOUT_S} (got {value})"
                ))
            })?,
    };
    if let Some(unknown) = fields.keys().next() {
        return Err(ApiError::bad_request(format!(
            "unknown field {unknown:?}; expected \"tool_name\", \"args\", \"timeout_s\""
        )));
    }
    Ok(InvokeRequest {
        tool_name,
        args,
        timeout_s: Some(timeout_s),
    })
}

fn refusal(refusal: Refusal) -> ApiError {
    let code = match refusal {
        Refusal::ToolNotAllowed(_) => "tool_not_allowed",
        Refusal::ApprovalRequired(_) => "approval_required",
        Refusal::PathNotAllowed(_) | Refusal::NoFilePaths => "path_not_allowed",
        Refusal::MissingPath(_) => return ApiError::bad_request(refusal.to_string()),
    };
    ApiError::new(StatusCode::FORBIDDEN, code, refusal.to_string())
}

fn not_connected(environment_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "runner_not_connected",
        format!("no runner is connected to environment {environment_id:?}"),
    )
}

/// Cancels the call on the runner if the handler stops waiting for any
/// reason other than a result (timeout, or the HTTP client went away and
/// axum dropped this future).
struct CancelOnDrop {
    router: Arc<dyn CallRouter>,
    environment_id: String,
    call_id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let router = self.router.clone();
        let environment_id = std::mem::take(&mut self.environment_id);
        let call_id = std::mem::take(&mut self.call_id);
        tracing::info!(%environment_id, %call_id, "cancelling call on the runner");
        // Drop cannot await: the cancel frame goes out from its own task.
        tokio::spawn(async move { router.cancel(&environment_id, &call_id).await });
    }
}

pub async fn invoke(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
    RawBody(body): RawBody,
) -> Result<Json<InvokeResponse>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Use).await?;
    let request = parse_request(&body)?;
    let timeout_s = request.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    let presence = state.router.presence(&environment.id).await;
    let workspace = presence
        .as_ref()
        .map(|presence| presence.host.workspace.as_str())
        .filter(|workspace| !workspace.is_empty());
    enforcement::check(
        &environment.policy,
        environment.tier,
        &request.tool_name,
        &request.args,
        workspace,
    )
    .map_err(refusal)?;
    let presence = presence.ok_or_else(|| not_connected(&environment.id))?;
    if !presence
        .tools
        .iter()
        .any(|tool| tool.name == request.tool_name)
    {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_tool",
            format!(
                "the runner of environment {:?} does not offer tool {:?}",
                environment.id, request.tool_name
            ),
        ));
    }

    let call_id = uuid::Uuid::new_v4().to_string();
    let span = tracing::info_span!(
        "call",
        environment_id = %environment.id,
        %call_id,
        tool = %request.tool_name,
        timeout_s
    );
    relay_call(&state, &environment.id, &call_id, request, timeout_s)
        .instrument(span)
        .await
}

async fn relay_call(
    state: &AppState,
    environment_id: &str,
    call_id: &str,
    request: InvokeRequest,
    timeout_s: u64,
) -> Result<Json<InvokeResponse>, ApiError> {
    let call = Call {
        call_id: call_id.to_owned(),
        tool: request.tool_name,
        args: request.args,
        timeout_s,
    };
    let handle = state
        .router
        .start_call(environment_id, call)
        .await
        .map_err(|error| match error {
            RouteError::NotConnected(_) => not_connected(environment_id),
            RouteError::Disconnected(_) => disconnected(call_id),
        })?;
    let mut guard = CancelOnDrop {
        router: state.router.clone(),
        environment_id: environment_id.to_owned(),
        call_id: call_id.to_owned(),
        armed: true,
    };
    tracing::info!("call relayed");
    match tokio::time::timeout(Duration::from_secs(timeout_s), handle.result).await {
        Ok(Ok(result)) => {
            guard.armed = false;
            state.health.record_success(environment_id);
            tracing::info!(exit_code = ?result.exit_code, failed = result.error.is_some(), "call finished");
            Ok(Json(InvokeResponse {
                call_id: call_id.to_owned(),
                result: result.result,
                exit_code: result.exit_code,
                error: result.error,
            }))
        }
        Ok(Err(_closed)) => {
            guard.armed = false;
            tracing::warn!("runner disconnected during the call");
            Err(disconnected(call_id))
        }
        Err(_elapsed) => {
            // The guard sends the cancel as it drops.
            state
                .health
                .record_timeout(environment_id, timeout_s, state.clock.now());
            tracing::warn!("call timed out");
            Err(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                format!("the call did not finish within {timeout_s} s; the runner was told to cancel it"),
            )
            .with_call_id(call_id))
        }
    }
}

fn disconnected(call_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "runner_disconnected",
        "the runner disconnected before the call finished",
    )
    .with_call_id(call_id)
}
