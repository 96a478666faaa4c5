//! `/teams` and `/members`: what `runner-relay admin` does, over the API.
//! Creating members and teams and changing who is in a team is for
//! organisation admins; a new member's API key is in the answer once and
//! never again. Default environments (where sessions that name none go) are
//! set by admins, by a team's members for their team and its agents, and by
//! members for themselves.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use runner_proto::members::{
    AddTeamMember, DefaultEnvironment, MemberView, SetDefaultEnvironment, TeamList, TeamView,
};
use runner_proto::sessions::MemberRef;
use serde::{Deserialize, Serialize};

use super::auth::{environment_for, Caller, Intent};
use super::error::{ApiError, ApiJson};
use super::origin::{entry, Origin};
use crate::access;
use crate::environment::Scope;
use crate::members;
use crate::state::AppState;
use crate::store::{DefaultFor, Member, MemberKind, NewMember, StoreError};
use runner_proto::audit::AuditAction;

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
    /// `person` (default) or `agent`.
    #[serde(default)]
    pub kind: Option<String>,
}

/// Answer of `POST /members`: the only time the key is shown.
#[derive(Debug, Serialize)]
pub struct CreatedMember {
    pub id: String,
    pub name: String,
    pub admin: bool,
    pub teams: Vec<String>,
    pub kind: String,
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

/// Checks a member's or team's name ([`runner_proto::fields::MEMBER_NAME`]).
fn valid_name(kind: &str, name: &str) -> Result<(), ApiError> {
    runner_proto::fields::MEMBER_NAME
        .check(name)
        .map_err(|why| ApiError::bad_request(format!("{kind} name {name:?} {why}")))
}

pub async fn create_team(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    ApiJson(request): ApiJson<CreateTeam>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    require_admin(&caller)?;
    valid_name("team", &request.name)?;
    state
        .store
        .create_team(&request.name, state.clock.now())
        .await?;
    tracing::info!(team = %request.name, by = %caller.id, "team created");
    state
        .audit
        .record(entry(&state, &origin, &caller, AuditAction::TeamCreate).target(&request.name));
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({ "name": request.name })),
    ))
}

pub async fn create_member(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    ApiJson(request): ApiJson<CreateMember>,
) -> Result<(StatusCode, Json<CreatedMember>), ApiError> {
    require_admin(&caller)?;
    valid_name("member", &request.name)?;
    let kind = match request.kind.as_deref() {
        None => MemberKind::Person,
        Some(text) => MemberKind::parse(text).ok_or_else(|| {
            ApiError::bad_request(format!(
                "field \"kind\" must be \"person\" or \"agent\" (got {text:?})"
            ))
        })?,
    };
    let new = NewMember {
        name: request.name,
        is_admin: request.admin,
        teams: request.teams,
        kind,
    };
    let (member, key) = members::create_with_key(state.store.as_ref(), state.clock.as_ref(), &new)
        .await
        .map_err(|error| match error {
            members::MemberError::Store(store) => ApiError::from(store),
            members::MemberError::Randomness(_) => ApiError::internal(),
        })?;
    tracing::info!(member_id = %member.id, admin = member.is_admin, teams = %member.teams.join(","), by = %caller.id, "member created");
    state
        .audit
        .record(entry(&state, &origin, &caller, AuditAction::MemberCreate).target(&member.id));
    Ok((
        StatusCode::CREATED,
        Json(CreatedMember {
            id: member.id,
            name: member.name,
            admin: member.is_admin,
            teams: member.teams,
            kind: member.kind.as_str().to_owned(),
            api_key: key.expose().to_owned(),
        }),
    ))
}

fn member_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "member_not_found",
        format!("member {id:?} not found"),
    )
}

fn team_not_found(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "team_not_found",
        format!("team {name:?} not found"),
    )
}

/// Whether `caller` may read `member` and set its default: itself, an
/// admin, or (for an agent) a member of one of its teams.
fn may_manage_member(caller: &Member, member: &Member) -> bool {
    caller.id == member.id
        || caller.is_admin
        || (member.kind == MemberKind::Agent
            && member.teams.iter().any(|team| caller.teams.contains(team)))
}

fn may_manage_team(caller: &Member, team: &str) -> bool {
    caller.is_admin || caller.teams.iter().any(|t| t == team)
}

/// A default environment as it stands now, and the notice when deleted.
async fn default_view(
    state: &AppState,
    id: Option<&str>,
) -> Result<(Option<DefaultEnvironment>, Option<String>), ApiError> {
    let Some(id) = id else {
        return Ok((None, None));
    };
    Ok(match state.store.environment(id).await? {
        Some(environment) => (
            Some(DefaultEnvironment {
                id: environment.id,
                name: environment.name,
                deleted: false,
            }),
            None,
        ),
        None => (
            Some(DefaultEnvironment {
                id: id.to_owned(),
                name: String::new(),
                deleted: true,
            }),
            Some(format!(
                "the default environment {id} was deleted: sessions that name no environment \
                 get no runner tools until a new default is set"
            )),
        ),
    })
}

async fn member_view(state: &AppState, member: &Member) -> Result<MemberView, ApiError> {
    let (default_environment, mut notice) =
        default_view(state, member.default_environment.as_deref()).await?;
    if default_environment.is_none() {
        // No default of its own: its first team's that has one applies.
        for team in &member.teams {
            let Some(team) = state.store.team(team).await? else {
                continue;
            };
            if team.default_environment.is_some() {
                let (_, team_notice) =
                    default_view(state, team.default_environment.as_deref()).await?;
                notice = team_notice.map(|text| format!("team {:?}: {text}", team.name));
                break;
            }
        }
    }
    Ok(MemberView {
        id: member.id.clone(),
        name: member.name.clone(),
        kind: member.kind.as_str().to_owned(),
        admin: member.is_admin,
        teams: member.teams.clone(),
        default_environment,
        has_runner_tools: notice.is_none(),
        notice,
    })
}

async fn visible_member(state: &AppState, caller: &Member, id: &str) -> Result<Member, ApiError> {
    state
        .store
        .member(id)
        .await?
        .filter(|member| may_manage_member(caller, member))
        .ok_or_else(|| member_not_found(id))
}

pub async fn get_member(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<MemberView>, ApiError> {
    // `me`: the key's own member, whoever it is (`runner doctor` reports
    // whose key it checked).
    if id == ME {
        return Ok(Json(member_view(&state, &caller).await?));
    }
    let member = visible_member(&state, &caller, &id).await?;
    Ok(Json(member_view(&state, &member).await?))
}

/// The id `GET /members/{id}` takes for the caller itself.
pub const ME: &str = "me";

/// The environment a default names, checked usable by `scope_ok`.
async fn default_target(
    state: &AppState,
    caller: &Member,
    request: &SetDefaultEnvironment,
    usable: impl Fn(&Scope) -> bool,
    whom: &str,
) -> Result<Option<String>, ApiError> {
    let Some(text) = &request.default_environment else {
        return Ok(None);
    };
    let environment = environment_for(state, caller, text, Intent::Read).await?;
    if !usable(&environment.scope) {
        return Err(ApiError::bad_request(format!(
            "environment {:?} ({}) is scoped {} and cannot be used by {whom}",
            environment.name, environment.id, environment.scope
        )));
    }
    Ok(Some(environment.id.clone()))
}

pub async fn update_member(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<SetDefaultEnvironment>,
) -> Result<Json<MemberView>, ApiError> {
    let member = visible_member(&state, &caller, &id).await?;
    let whom = format!("{} {:?}", member.kind.as_str(), member.name);
    let target = default_target(
        &state,
        &caller,
        &request,
        |scope| access::can_use(&member, scope),
        &whom,
    )
    .await?;
    if !state
        .store
        .set_default_environment(DefaultFor::Member(&member.id), target.as_deref())
        .await?
    {
        return Err(member_not_found(&id));
    }
    state.reads.forget_members();
    tracing::info!(member_id = %member.id, default_environment = %target.as_deref().unwrap_or("none"), by = %caller.id, "default environment set");
    let mut record = entry(&state, &origin, &caller, AuditAction::MemberUpdate).target(&member.id);
    record.environment_id = target.clone();
    state.audit.record(record);
    let member = visible_member(&state, &caller, &member.id).await?;
    Ok(Json(member_view(&state, &member).await?))
}

pub async fn list_teams(
    State(state): State<AppState>,
    Caller(caller): Caller,
) -> Result<Json<TeamList>, ApiError> {
    let teams = state
        .store
        .list_teams()
        .await?
        .into_iter()
        .filter(|team| may_manage_team(&caller, team))
        .collect();
    Ok(Json(TeamList { teams }))
}

async fn team_view(state: &AppState, caller: &Member, name: &str) -> Result<TeamView, ApiError> {
    if !may_manage_team(caller, name) {
        return Err(team_not_found(name));
    }
    let team = state
        .store
        .team(name)
        .await?
        .ok_or_else(|| team_not_found(name))?;
    let (default_environment, notice) =
        default_view(state, team.default_environment.as_deref()).await?;
    Ok(TeamView {
        name: team.name,
        members: team
            .members
            .into_iter()
            .map(|member| MemberRef {
                id: member.id,
                name: member.name,
            })
            .collect(),
        default_environment,
        has_runner_tools: notice.is_none(),
        notice,
    })
}

pub async fn get_team(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(name): Path<String>,
) -> Result<Json<TeamView>, ApiError> {
    Ok(Json(team_view(&state, &caller, &name).await?))
}

pub async fn update_team(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<SetDefaultEnvironment>,
) -> Result<Json<TeamView>, ApiError> {
    if !may_manage_team(&caller, &name) {
        return Err(team_not_found(&name));
    }
    let target = default_target(
        &state,
        &caller,
        &request,
        |scope| match scope {
            Scope::Shared => true,
            Scope::Team(team) => *team == name,
        },
        &format!("team {name:?}"),
    )
    .await?;
    if !state
        .store
        .set_default_environment(DefaultFor::Team(&name), target.as_deref())
        .await?
    {
        return Err(team_not_found(&name));
    }
    tracing::info!(team = %name, default_environment = %target.as_deref().unwrap_or("none"), by = %caller.id, "team default environment set");
    let mut record = entry(&state, &origin, &caller, AuditAction::TeamUpdate).target(&name);
    record.environment_id = target.clone();
    state.audit.record(record);
    Ok(Json(team_view(&state, &caller, &name).await?))
}

/// The member a request names: an id, or a name only one member has.
pub(super) async fn named_member(state: &AppState, text: &str) -> Result<Member, ApiError> {
    members::find(state.store.as_ref(), text)
        .await
        .map_err(|error| match error {
            members::FindError::NotFound(_) => member_not_found(text),
            // The request is well formed; the store holds several such names.
            members::FindError::Ambiguous { .. } => {
                ApiError::new(StatusCode::CONFLICT, "ambiguous_member", error.to_string())
            }
            members::FindError::Store(error) => error.into(),
        })
}

pub async fn add_team_member(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<AddTeamMember>,
) -> Result<(StatusCode, Json<TeamView>), ApiError> {
    require_admin(&caller)?;
    let member = named_member(&state, &request.member).await?;
    let added = match state.store.add_team_member(&name, &member.id).await {
        Err(StoreError::UnknownTeam(_)) => return Err(team_not_found(&name)),
        Err(StoreError::NotFound) => return Err(member_not_found(&request.member)),
        other => other?,
    };
    state.reads.forget_members();
    tracing::info!(team = %name, member_id = %member.id, added, by = %caller.id, "team member added");
    if added {
        state.audit.record(
            entry(&state, &origin, &caller, AuditAction::TeamMemberAdd)
                .target(&format!("{name}/{}", member.id)),
        );
    }
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(team_view(&state, &caller, &name).await?)))
}

pub async fn remove_team_member(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path((name, member)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    require_admin(&caller)?;
    let member = named_member(&state, &member).await?;
    if state.store.team(&name).await?.is_none() {
        return Err(team_not_found(&name));
    }
    let removed = state.store.remove_team_member(&name, &member.id).await?;
    state.reads.forget_members();
    if !removed {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_a_member",
            format!("member {:?} is not in team {name:?}", member.name),
        ));
    }
    tracing::info!(team = %name, member_id = %member.id, by = %caller.id, "team member removed");
    state.audit.record(
        entry(&state, &origin, &caller, AuditAction::TeamMemberRemove)
            .target(&format!("{name}/{}", member.id)),
    );
    Ok(StatusCode::NO_CONTENT)
}
