//! `GET /invocations/{call_id}`: a call's journal entry, so a result that
//! arrived after the caller stopped waiting (a 504, a relay that died
//! mid-call) can still be fetched, from any relay.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use runner_proto::api::{Invocation, InvocationState};

use super::auth::{environment_for, Caller, Intent};
use super::error::ApiError;
use crate::clock::rfc3339;
use crate::state::AppState;

fn not_found(call_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("call {call_id:?} not found"),
    )
}

pub async fn get(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(call_id): Path<String>,
) -> Result<Json<Invocation>, ApiError> {
    let mut entry = state.store.invocation(&call_id).await?;
    if entry
        .as_ref()
        .is_none_or(|entry| entry.state != InvocationState::Done)
    {
        // Steps this relay has not written yet (they are batched) would
        // make an answer it already gave look unknown or unfinished.
        state.journal.flush().await;
        entry = state.store.invocation(&call_id).await?;
    }
    let entry = entry.ok_or_else(|| not_found(&call_id))?;
    // Whoever may use the environment may read its calls; to everyone else
    // the call does not exist.
    environment_for(&state, &caller, &entry.environment_id, Intent::Use)
        .await
        .map_err(|error| match error.status {
            StatusCode::NOT_FOUND | StatusCode::FORBIDDEN => not_found(&call_id),
            _ => error,
        })?;
    Ok(Json(Invocation {
        call_id: entry.call_id,
        environment_id: entry.environment_id,
        tool_name: entry.tool_name,
        state: entry.state,
        epoch: entry.epoch,
        created_at: rfc3339(entry.created_at),
        finished_at: entry.finished_at.map(rfc3339),
        result: entry.result,
        exit_code: entry.exit_code,
        error: entry.error,
        error_code: entry.error_code,
    }))
}
