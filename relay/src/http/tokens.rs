//! Registration token endpoints: generate (rotate), status, revoke.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::Json;
use runner_proto::api::{GeneratedToken, RevokedTokens, TokenStatus};
use runner_proto::audit::AuditAction;

use super::auth::{environment_for, Caller, Intent};
use super::error::ApiError;
use super::origin::{entry, Origin};
use crate::registration::{self, DEFAULT_GRACE_HOURS, MAX_GRACE_HOURS};
use crate::routing::CallRouter;
use crate::state::AppState;

fn grace_hours(query: &HashMap<String, String>) -> Result<i64, ApiError> {
    let Some(text) = query.get("grace_hours") else {
        return Ok(DEFAULT_GRACE_HOURS);
    };
    text.parse::<i64>()
        .ok()
        .filter(|hours| (0..=MAX_GRACE_HOURS).contains(hours))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "grace_hours must be an integer from 0 to {MAX_GRACE_HOURS} (got {text:?})"
            ))
        })
}

pub async fn generate(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<GeneratedToken>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Manage).await?;
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let grace = grace_hours(&query)?;
    let (_secret, answer) = registration::generate(
        state.store.as_ref(),
        &environment.id,
        grace,
        state.clock.now(),
    )
    .await?;
    tracing::info!(environment_id = %environment.id, hint = %answer.hint, grace_hours = grace, "registration token generated");
    let action = if answer.previous_valid_until.is_some() {
        AuditAction::TokenRotate
    } else {
        AuditAction::TokenGenerate
    };
    state.audit.record(
        entry(&state, &origin, &caller, action)
            .environment(&environment.id)
            .target(&answer.hint),
    );
    Ok(Json(answer))
}

pub async fn status(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<TokenStatus>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Manage).await?;
    let token = state.store.current_token(&environment.id).await?;
    let presence = state.router.presence(&environment.id).await;
    let runner_token = registration::runner_token(
        state.store.as_ref(),
        presence
            .as_ref()
            .map(|presence| presence.token_hash.as_str()),
        token.as_ref(),
    )
    .await?;
    Ok(Json(registration::status(
        &environment.id,
        token.as_ref(),
        presence.is_some(),
        runner_token,
        state.clock.now(),
    )))
}

pub async fn revoke(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
) -> Result<Json<RevokedTokens>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Manage).await?;
    let revoked = state.store.revoke_tokens(&environment.id).await?;
    state.reads.forget_environment(&environment.id);
    let disconnected = state
        .router
        .disconnect(
            &environment.id,
            runner_proto::close::REVOKED,
            "registration token revoked",
        )
        .await;
    tracing::info!(environment_id = %environment.id, revoked, disconnected, "registration tokens revoked");
    state.audit.record(
        entry(&state, &origin, &caller, AuditAction::TokenRevoke).environment(&environment.id),
    );
    Ok(Json(RevokedTokens {
        environment_id: environment.id.clone(),
        revoked_tokens: revoked,
        runner_disconnected: disconnected,
    }))
}
