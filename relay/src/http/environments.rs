//! `/execution-environments`: create, list, read, update, delete, status and
//! tools.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use runner_proto::api::{
    CreateEnvironment, Environment, EnvironmentList, EnvironmentStatus, ToolList, UpdateEnvironment,
};
use runner_proto::audit::AuditAction;
use runner_proto::sandbox::{DESTROY_TOOL, HOST_ROLE, SANDBOX_ROLE, START_TOOL};

use super::auth::{environment_for, Caller, Intent};
use super::error::{ApiError, ApiJson};
use super::origin::{entry, Origin};
use crate::access;
use crate::enforcement;
use crate::environment::{
    default_policy, host_policy, new_environment_id, validate_labels, validate_name,
    validate_policy, EnvironmentRecord, Scope,
};
use crate::routing::{announced_tools, CallRouter, Catalogue};
use crate::state::AppState;
use crate::status;

fn invalid(error: crate::environment::InvalidField) -> ApiError {
    ApiError::bad_request(error.message)
}

pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
) -> Result<Json<EnvironmentList>, ApiError> {
    let mut environments = Vec::new();
    for mut environment in state.store.list_environments().await? {
        if access::can_see(&caller, &environment) {
            state.seen.apply(&mut environment);
            environments.push(with_status(&state, &environment).await);
        }
    }
    Ok(Json(EnvironmentList { environments }))
}

/// The API's view of an environment, with its live status (every answer
/// that carries an environment carries it).
async fn with_status(state: &AppState, environment: &EnvironmentRecord) -> Environment {
    let presence = state.router.presence(&environment.id).await;
    let (status, _) = status::compute(
        environment,
        presence.as_deref(),
        &state.health,
        state.clock.now(),
    );
    let mut view = environment.to_api();
    view.status = Some(status);
    view
}

pub async fn create(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    ApiJson(request): ApiJson<CreateEnvironment>,
) -> Result<(StatusCode, Json<Environment>), ApiError> {
    let scope = Scope::parse(request.scope.as_deref().unwrap_or("shared")).map_err(invalid)?;
    if !access::can_manage(&caller, &scope) {
        return Err(ApiError::forbidden(match &scope {
            Scope::Shared => "only organisation admins may create shared environments".to_owned(),
            Scope::Team(team) => format!("you are not a member of team {team:?}"),
        }));
    }
    validate_name(&request.name, true).map_err(invalid)?;
    let env_type = request.env_type.unwrap_or_else(|| "Local".to_owned());
    validate_labels(&request.description, &env_type, &request.tags).map_err(invalid)?;
    if let Some(policy) = &request.policy {
        validate_policy(policy).map_err(invalid)?;
    }
    let host = env_type == HOST_ROLE;
    if env_type == SANDBOX_ROLE {
        return Err(ApiError::bad_request(format!(
            "type {SANDBOX_ROLE:?} is the relay's own: sandboxes are started for sessions \
             (\"environment\": \"sandbox\")"
        )));
    }
    if host && (scope != Scope::Shared || request.policy.is_some()) {
        return Err(ApiError::bad_request(format!(
            "a sandbox host ({HOST_ROLE:?}) serves every session: its scope is shared and its \
             policy is the relay's (it runs only {START_TOOL} and {DESTROY_TOOL})"
        )));
    }
    let record = EnvironmentRecord {
        id: new_environment_id(),
        name: request.name,
        description: request.description,
        env_type,
        tags: request.tags,
        scope,
        tier: request.tier,
        install_browser_tools: request.install_browser_tools,
        policy: if host {
            host_policy()
        } else {
            request
                .policy
                .unwrap_or_else(|| default_policy(request.tier))
        },
        created_at: state.clock.now(),
        last_seen: None,
        runner: None,
    };
    state.store.insert_environment(&record).await?;
    tracing::info!(environment_id = %record.id, name = %record.name, scope = %record.scope, "environment created");
    state.audit.record(
        entry(&state, &origin, &caller, AuditAction::EnvironmentCreate).environment(&record.id),
    );
    Ok((
        StatusCode::CREATED,
        Json(with_status(&state, &record).await),
    ))
}

pub async fn get(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<Environment>, ApiError> {
    let mut environment =
        Arc::unwrap_or_clone(environment_for(&state, &caller, &id, Intent::Read).await?);
    state.seen.apply(&mut environment);
    Ok(Json(with_status(&state, &environment).await))
}

pub async fn update(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<UpdateEnvironment>,
) -> Result<Json<Environment>, ApiError> {
    let mut environment =
        Arc::unwrap_or_clone(environment_for(&state, &caller, &id, Intent::Manage).await?);
    if request.scope.is_some() {
        return Err(ApiError::bad_request(
            "scope is fixed at creation; create a new environment to change it",
        ));
    }
    if let Some(name) = request.name {
        validate_name(&name, false).map_err(invalid)?;
        environment.name = name;
    }
    if let Some(description) = request.description {
        environment.description = description;
    }
    if let Some(env_type) = request.env_type {
        if env_type != environment.env_type
            && (access::is_machinery_type(&env_type) || access::is_machinery(&environment))
        {
            return Err(ApiError::bad_request(format!(
                "the types {HOST_ROLE:?} and {SANDBOX_ROLE:?} are given at creation (hosts) or \
                 by the relay (sandboxes), and never changed"
            )));
        }
        environment.env_type = env_type;
    }
    if request.policy.is_some() && environment.env_type == HOST_ROLE {
        return Err(ApiError::bad_request(format!(
            "a sandbox host's policy is the relay's: it runs only {START_TOOL} and {DESTROY_TOOL}"
        )));
    }
    if let Some(tags) = request.tags {
        environment.tags = tags;
    }
    if let Some(tier) = request.tier {
        environment.tier = tier;
    }
    let browser_tools_changed = request
        .install_browser_tools
        .is_some_and(|install| install != environment.install_browser_tools);
    if let Some(install) = request.install_browser_tools {
        environment.install_browser_tools = install;
    }
    validate_labels(
        &environment.description,
        &environment.env_type,
        &environment.tags,
    )
    .map_err(invalid)?;
    let policy_changed = request.policy.is_some();
    if let Some(policy) = request.policy {
        validate_policy(&policy).map_err(invalid)?;
        environment.policy = policy;
    }
    state.store.update_environment(&environment).await?;
    state.reads.forget_environment(&environment.id);
    state.audit.record(
        entry(&state, &origin, &caller, AuditAction::EnvironmentUpdate)
            .environment(&environment.id),
    );
    if policy_changed || browser_tools_changed {
        // Restrictions apply at once anyway (every call is checked here);
        // pushing lets a connected runner pick up newly allowed tools too,
        // and start installing a browser when asked to.
        state
            .router
            .push_policy(
                &environment.id,
                environment.policy.clone(),
                Some(environment.install_browser_tools),
            )
            .await;
    }
    state.seen.apply(&mut environment);
    Ok(Json(with_status(&state, &environment).await))
}

pub async fn delete(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Manage).await?;
    super::sandboxes::environment_deleted(&state, &caller, &environment.id).await;
    let deleted = state.store.delete_environment(&environment.id).await;
    state.reads.forget_environment(&environment.id);
    if !deleted? {
        return Err(ApiError::environment_not_found(&id));
    }
    state
        .router
        .disconnect(
            &environment.id,
            runner_proto::close::DELETED,
            "environment deleted",
        )
        .await;
    state.health.forget(&environment.id);
    state.seen.forget(&environment.id);
    tracing::info!(environment_id = %environment.id, "environment deleted");
    state.audit.record(
        entry(&state, &origin, &caller, AuditAction::EnvironmentDelete)
            .environment(&environment.id),
    );
    Ok(StatusCode::NO_CONTENT)
}

pub async fn status(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<EnvironmentStatus>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Read).await?;
    Ok(Json(state.environment_status(&environment).await?))
}

pub async fn tools(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<ToolList>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Read).await?;
    let (announced, runner_connected) = announced_catalogue(&state, &environment).await?;
    Ok(Json(ToolList {
        environment_id: environment.id.clone(),
        runner_connected,
        tools: enforcement::visible_tools(&environment.policy, &announced),
    }))
}

/// The tools the environment's runner announced, before the allow-list:
/// the connected runner's, else (calls still fail with 503) the catalogue
/// its runner announced last, so agents and people can see what the
/// machine offers. The flag says whether a runner is connected.
pub async fn announced_catalogue(
    state: &AppState,
    environment: &EnvironmentRecord,
) -> Result<(Catalogue, bool), ApiError> {
    if let Some(presence) = state.router.presence(&environment.id).await {
        return Ok((presence.tools.clone(), true));
    }
    let announced = state
        .store
        .session(&environment.id)
        .await?
        .and_then(|session| announced_tools(&session.presence))
        .unwrap_or_default();
    Ok((announced.into(), false))
}
