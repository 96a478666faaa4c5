//! `/teams` and `/members`: what `runner-relay admin` does, over the API
//! (organisation admins only). A new member's API key is in the answer once
//! and never again.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::auth::Caller;
use super::error::{ApiError, ApiJson};
use crate::members;
use crate::state::AppState;
use crate::store::NewMember;

/// `POST /teams`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTeam {
    pub name: String,
}

/// `POST /members`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateMember {
    pub name: String,
    /// Organisation admin.
    #[serde(default)]
    pub admin: bool,
    /// Teams (must exist).
    #[serde(default)]
    pub teams: Vec<String>,
}

/// Answer of `POST /members`: the only time the key is shown.
#[derive(Debug, Serialize)]
pub struct CreatedMember {
    pub id: String,
    pub name: String,
    pub admin: bool,
    pub teams: Vec<String>,
    pub api_key: String,
}

fn require_admin(caller: &crate::store::Member) -> Result<(), ApiError> {
    if caller.is_admin {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "only organisation admins manage teams and members",
        ))
    }
}

fn valid_name(kind: &str, name: &str) -> Result<(), ApiError> {
    if name.trim().is_empty() || name.chars().count() > 128 || name.chars().any(char::is_whitespace)
    {
        return Err(ApiError::bad_request(format!(
            "{kind} name {name:?} must be 1–128 characters without spaces"
        )));
    }
    Ok(())
}

pub async fn create_team(
    State(state): State<AppState>,
    Caller(caller): Caller,
    ApiJson(request): ApiJson<CreateTeam>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    require_admin(&caller)?;
    valid_name("team", &request.name)?;
    state
        .store
        .create_team(&request.name, state.clock.now())
        .await?;
    tracing::info!(team = %request.name, by = %caller.id, "team created");
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({ "name": request.name })),
    ))
}

pub async fn create_member(
    State(state): State<AppState>,
    Caller(caller): Caller,
    ApiJson(request): ApiJson<CreateMember>,
) -> Result<(StatusCode, Json<CreatedMember>), ApiError> {
    require_admin(&caller)?;
    valid_name("member", &request.name)?;
    let new = NewMember {
        name: request.name,
        is_admin: request.admin,
        teams: request.teams,
    };
    let (member, key) = members::create_with_key(state.store.as_ref(), state.clock.as_ref(), &new)
        .await
        .map_err(|error| match error {
            members::MemberError::Store(store) => ApiError::from(store),
            members::MemberError::Randomness(_) => ApiError::internal(),
        })?;
    tracing::info!(member_id = %member.id, admin = member.is_admin, teams = ?member.teams, by = %caller.id, "member created");
    Ok((
        StatusCode::CREATED,
        Json(CreatedMember {
            id: member.id,
            name: member.name,
            admin: member.is_admin,
            teams: member.teams,
            api_key: key.expose().to_owned(),
        }),
    ))
}
