//! `/templates`: create, list, read, update and delete sandbox templates
//! (docs/templates.md). Who may do what follows the template's scope, as
//! for environments; a path names a template by id or by name.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use runner_proto::audit::AuditAction;
use runner_proto::templates::{
    CreateTemplate, Template, TemplateList, UpdateTemplate, DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_LIFETIME_S,
};

use super::auth::Caller;
use super::error::{ApiError, ApiJson};
use super::origin::{entry, Origin};
use crate::access;
use crate::environment::Scope;
use crate::sessions::MemberName;
use crate::state::AppState;
use crate::store::Member;
use crate::templates::{self, Intent, InvalidTemplate, TemplateRecord};

pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
) -> Result<Json<TemplateList>, ApiError> {
    let templates = visible(&state, &caller)
        .await?
        .iter()
        .map(TemplateRecord::to_api)
        .collect();
    Ok(Json(TemplateList { templates }))
}

/// Creates a template from a request `caller` may make; the handler and
/// the console both go through here.
pub async fn create_template(
    state: &AppState,
    caller: &Member,
    origin: &Origin,
    request: CreateTemplate,
) -> Result<TemplateRecord, ApiError> {
    let scope = Scope::parse(request.scope.as_deref().unwrap_or("shared"))
        .map_err(|error| ApiError::bad_request(error.message))?;
    may_create(caller, &scope)?;
    let now = state.clock.now();
    let mut record = TemplateRecord {
        id: templates::new_template_id(),
        name: request.name,
        description: request.description,
        scope,
        network: request.network.unwrap_or_default(),
        allowed_domains: request.allowed_domains,
        env_text: request.env_text,
        entries: Vec::new(),
        setup_script: request.setup_script,
        idle_timeout_s: request.idle_timeout_s.unwrap_or(DEFAULT_IDLE_TIMEOUT_S),
        max_lifetime_s: request.max_lifetime_s.unwrap_or(DEFAULT_MAX_LIFETIME_S),
        created_by: MemberName {
            id: caller.id.clone(),
            name: caller.name.clone(),
        },
        created_at: now,
        updated_at: now,
    };
    record.check()?;
    state.store.insert_template(&record).await?;
    tracing::info!(template_id = %record.id, name = %record.name, scope = %record.scope, "template created");
    state
        .audit
        .record(entry(state, origin, caller, AuditAction::TemplateCreate).target(&record.id));
    Ok(record)
}

pub async fn create(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    ApiJson(request): ApiJson<CreateTemplate>,
) -> Result<(StatusCode, Json<Template>), ApiError> {
    let record = create_template(&state, &caller, &origin, request).await?;
    Ok((StatusCode::CREATED, Json(record.to_api())))
}

pub async fn get(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<Template>, ApiError> {
    let template = template_for(&state, &caller, &id, Intent::Read).await?;
    Ok(Json(template.to_api()))
}

/// Applies a change `caller` may make to the template `id` names.
pub async fn update_template(
    state: &AppState,
    caller: &Member,
    origin: &Origin,
    id: &str,
    request: UpdateTemplate,
) -> Result<TemplateRecord, ApiError> {
    let mut template = template_for(state, caller, id, Intent::Manage).await?;
    if request.scope.is_some() {
        return Err(ApiError::bad_request(
            "scope is fixed at creation; create a new template to change it",
        ));
    }
    if let Some(name) = request.name {
        template.name = name;
    }
    if let Some(description) = request.description {
        template.description = description;
    }
    if let Some(network) = request.network {
        template.network = network;
        // Leaving the allowlist drops its domains unless new ones are given
        // (which the check then refuses): one request switches the mode.
        if request.allowed_domains.is_none() && network != runner_proto::sandbox::Network::Allowlist
        {
            template.allowed_domains.clear();
        }
    }
    if let Some(domains) = request.allowed_domains {
        template.allowed_domains = domains;
    }
    if let Some(env_text) = request.env_text {
        template.env_text = env_text;
    }
    if let Some(setup_script) = request.setup_script {
        template.setup_script = setup_script;
    }
    if let Some(seconds) = request.idle_timeout_s {
        template.idle_timeout_s = seconds;
    }
    if let Some(seconds) = request.max_lifetime_s {
        template.max_lifetime_s = seconds;
    }
    template.check()?;
    template.updated_at = state.clock.now();
    state.store.update_template(&template).await?;
    state
        .audit
        .record(entry(state, origin, caller, AuditAction::TemplateUpdate).target(&template.id));
    Ok(template)
}

pub async fn update(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<UpdateTemplate>,
) -> Result<Json<Template>, ApiError> {
    let template = update_template(&state, &caller, &origin, &id, request).await?;
    Ok(Json(template.to_api()))
}

/// Deletes the template `id` names, if `caller` may.
pub async fn delete_template(
    state: &AppState,
    caller: &Member,
    origin: &Origin,
    id: &str,
) -> Result<TemplateRecord, ApiError> {
    let template = template_for(state, caller, id, Intent::Manage).await?;
    if !state.store.delete_template(&template.id).await? {
        return Err(not_found(id));
    }
    tracing::info!(template_id = %template.id, "template deleted");
    state
        .audit
        .record(entry(state, origin, caller, AuditAction::TemplateDelete).target(&template.id));
    Ok(template)
}

pub async fn delete(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    delete_template(&state, &caller, &origin, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

impl From<InvalidTemplate> for ApiError {
    fn from(error: InvalidTemplate) -> Self {
        ApiError::bad_request(error.0)
    }
}

/// Whether `member` may create a template of `scope`: 403's message if not.
pub fn may_create(member: &Member, scope: &Scope) -> Result<(), ApiError> {
    if access::can_manage(member, scope) {
        return Ok(());
    }
    Err(ApiError::forbidden(match scope {
        Scope::Shared => "only organisation admins may create shared templates".to_owned(),
        Scope::Team(team) => format!("you are not a member of team {team:?}"),
    }))
}

pub fn not_found(id: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "template_not_found",
        format!("template {id:?} not found"),
    )
}

/// Loads a template, by id or by name, the caller may act on: 404 if it
/// does not exist or the caller cannot see it, 403 if they see it but may
/// not do this.
pub async fn template_for(
    state: &AppState,
    caller: &Member,
    name_or_id: &str,
    intent: Intent,
) -> Result<TemplateRecord, ApiError> {
    let found = match state.store.template(name_or_id).await? {
        Some(template) => Some(template),
        // Names are unique, so a path may name one instead of an id.
        None => state.store.template_by_name(name_or_id).await?,
    };
    let template = found
        .filter(|template| access::can_see_template(caller, template))
        .ok_or_else(|| not_found(name_or_id))?;
    let allowed = match intent {
        Intent::Read => true,
        Intent::Use => access::can_use(caller, &template.scope),
        Intent::Manage => access::can_manage(caller, &template.scope),
    };
    if !allowed {
        return Err(ApiError::forbidden(match &template.scope {
            Scope::Shared => "only organisation admins may change shared templates".to_owned(),
            Scope::Team(team) => format!("only members of team {team:?} may act on its templates"),
        }));
    }
    Ok(template)
}

/// The template a session names for its sandboxes, if `caller` may use
/// it: 404 when it does not exist or the caller cannot see it, 403 when an
/// admin sees a team's template but is not in the team.
pub async fn for_session(
    state: &AppState,
    caller: &Member,
    name_or_id: &str,
) -> Result<TemplateRecord, ApiError> {
    template_for(state, caller, name_or_id, Intent::Use).await
}

/// Every template `caller` may see, by name.
pub async fn visible(state: &AppState, caller: &Member) -> Result<Vec<TemplateRecord>, ApiError> {
    Ok(state
        .store
        .list_templates()
        .await?
        .into_iter()
        .filter(|template| access::can_see_template(caller, template))
        .collect())
}
