//! `/sessions`: create, list, read and end work sessions, and call tools
//! through one (see [`crate::sessions`]).
//!
//! Who sees a session: its creator, the agent it works for, and
//! organisation admins. Who calls through it: its creator and its agent,
//! each under the usual access rules of the locked environment (a member
//! who left the environment's team is refused like on `invoke-tool`).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Json;
use runner_proto::api::Status;
use runner_proto::sessions::{
    CreateSession, MemberRef, Session, SessionEnvironment, SessionList, SessionState,
    ENVIRONMENT_HEADER,
};
use serde::Deserialize;
use time::OffsetDateTime;

use super::auth::{environment_for, usable_environments, Caller, Intent};
use super::call_audit::CallAudit;
use super::error::{ApiError, ApiJson, ApiQuery, RawBody};
use super::invoke::{run_call, Destination};
use super::members::named_member;
use super::origin::{entry, Origin};
use super::sandboxes;
use crate::clock::rfc3339;
use crate::environment::EnvironmentRecord;
use crate::routing::{CallRouter, Presence};
use crate::sandboxes::SandboxSettings;
use crate::sessions::select::{self, Candidate};
use crate::sessions::{new_session_id, Lock, MemberName, Requested, RequestedFrom, WorkSession};
use crate::state::AppState;
use crate::status;
use crate::store::{Member, MemberKind};
use runner_proto::audit::AuditAction;

/// Most sessions one `GET /sessions` lists.
const LIST_LIMIT: u32 = 500;

fn session_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "session_not_found",
        format!("session {id:?} not found"),
    )
}

fn member_ref(member: &MemberName) -> MemberRef {
    MemberRef {
        id: member.id.clone(),
        name: member.name.clone(),
    }
}

fn validate_tags(tags: &[String]) -> Result<(), ApiError> {
    crate::environment::validate_tags(tags).map_err(|error| ApiError::bad_request(error.message))
}

/// The agent a new session works for: the one named (which the caller must
/// be, share a team with, or administer), else the caller if it is one.
async fn session_agent(
    state: &AppState,
    caller: &Member,
    named: Option<&str>,
) -> Result<Option<Member>, ApiError> {
    let Some(text) = named else {
        return Ok((caller.kind == MemberKind::Agent).then(|| caller.clone()));
    };
    let not_an_agent = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "agent_not_found",
            format!("no agent {text:?} (agents are members created with kind \"agent\")"),
        )
    };
    let agent = match named_member(state, text).await {
        Ok(member) if member.kind == MemberKind::Agent => member,
        Ok(_) => return Err(not_an_agent()),
        Err(error) if error.status == StatusCode::NOT_FOUND => return Err(not_an_agent()),
        Err(error) => return Err(error),
    };
    let related = agent.id == caller.id
        || caller.is_admin
        || agent.teams.iter().any(|team| caller.teams.contains(team));
    if !related {
        return Err(ApiError::forbidden(format!(
            "agent {text:?} is in none of your teams"
        )));
    }
    Ok(Some(agent))
}

/// 409: a default environment points at one that was deleted.
fn default_deleted(whose: &str, id: &str, fix: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "default_environment_deleted",
        format!(
            "the default environment of {whose} ({id}) was deleted, so it has no runner tools; \
             {fix}, or name an environment (or \"auto\") in the request"
        ),
    )
}

/// What the session asks for: the request's choice, else the default of
/// the agent (or the caller), then of its first team that has one, else
/// `auto`. A default must still exist (else 409: no silent fall back to
/// `auto`) and be usable by the caller, whose access every call checks.
async fn requested(
    state: &AppState,
    caller: &Member,
    agent: Option<&Member>,
    named: Option<&str>,
) -> Result<(Requested, RequestedFrom), ApiError> {
    if let Some(text) = named {
        let requested = match text {
            runner_proto::sessions::AUTO => Requested::Auto,
            runner_proto::sessions::SANDBOX => Requested::Sandbox,
            _ => {
                let environment = environment_for(state, caller, text, Intent::Use).await?;
                Requested::Environment(environment.id.clone())
            }
        };
        return Ok((requested, RequestedFrom::Request));
    }
    let principal = agent.unwrap_or(caller);
    if let Some(id) = &principal.default_environment {
        if existing_environment(state, caller, id).await?.is_none() {
            return Err(default_deleted(
                &format!("{} {:?}", principal.kind.as_str(), principal.name),
                id,
                &format!("set a new one with PATCH /members/{}", principal.id),
            ));
        }
        return Ok((Requested::Environment(id.clone()), RequestedFrom::Agent));
    }
    for team in &principal.teams {
        let Some(team) = state.store.team(team).await? else {
            continue;
        };
        if let Some(id) = team.default_environment {
            if existing_environment(state, caller, &id).await?.is_none() {
                return Err(default_deleted(
                    &format!("team {:?}", team.name),
                    &id,
                    &format!("set a new one with PATCH /teams/{}", team.name),
                ));
            }
            return Ok((Requested::Environment(id), RequestedFrom::Team));
        }
    }
    Ok((Requested::Auto, RequestedFrom::Auto))
}

pub async fn create(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    ApiJson(request): ApiJson<CreateSession>,
) -> Result<(StatusCode, Json<Session>), ApiError> {
    validate_tags(&request.tags)?;
    let agent = session_agent(&state, &caller, request.agent.as_deref()).await?;
    let (requested, requested_from) = requested(
        &state,
        &caller,
        agent.as_ref(),
        request.environment.as_deref(),
    )
    .await?;
    let template_id = match &request.template {
        Some(_) if !matches!(requested, Requested::Sandbox | Requested::Auto) => {
            return Err(ApiError::bad_request(
                "a template prepares a sandbox: name one only with \"environment\": \"sandbox\" \
                 or \"auto\"",
            ))
        }
        // Checked now (404, or 403 for an admin outside its team), kept by
        // id: a template deleted later leaves the session the defaults.
        Some(name_or_id) => Some(
            super::templates::for_session(&state, &caller, name_or_id)
                .await?
                .id,
        ),
        None => None,
    };
    let now = state.clock.now();
    let session = WorkSession {
        id: new_session_id(),
        created_by: MemberName {
            id: caller.id.clone(),
            name: caller.name.clone(),
        },
        agent: agent.map(|agent| MemberName {
            id: agent.id,
            name: agent.name,
        }),
        requested,
        requested_from,
        tags: request.tags,
        lock: None,
        created_at: now,
        last_used_at: now,
        idle_timeout_s: state.session_idle_timeout_s,
        ended_at: None,
        template_id,
    };
    state.store.insert_work_session(&session).await?;
    state.sessions.keep(&session);
    tracing::info!(session_id = %session.id, requested = session.requested.as_str(), member = %caller.id, "session created");
    state
        .audit
        .record(entry(&state, &origin, &caller, AuditAction::SessionCreate).session(&session.id));
    Ok((StatusCode::CREATED, Json(view(&state, &session).await?)))
}

/// `GET /sessions` filters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only sessions in this state.
    #[serde(default)]
    pub state: Option<SessionState>,
}

/// `GET /sessions`, with a JSON error for a query that does not fit.
pub async fn list_api(
    state: State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    list(state, caller, Query(query)).await
}

pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Query(query): Query<ListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let whose = (!caller.is_admin).then_some(caller.id.as_str());
    let now = state.clock.now();
    let mut sessions = Vec::new();
    for mut session in state.store.list_work_sessions(whose, LIST_LIMIT).await? {
        state.sessions.apply(&mut session);
        if query
            .state
            .is_none_or(|wanted| session.state(now) == wanted)
        {
            sessions.push(view(&state, &session).await?);
        }
    }
    Ok(Json(SessionList { sessions }))
}

pub async fn get(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<Session>, ApiError> {
    let session = visible_session(&state, &caller, &id).await?;
    Ok(Json(view(&state, &session).await?))
}

pub async fn end(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let session = visible_session(&state, &caller, &id).await?;
    let ended = state
        .store
        .end_work_session(&session.id, state.clock.now())
        .await?;
    state.sessions.forget(&session.id);
    if ended {
        tracing::info!(session_id = %session.id, member = %caller.id, "session ended");
        state
            .audit
            .record(entry(&state, &origin, &caller, AuditAction::SessionEnd).session(&session.id));
        sandboxes::session_ended(&state, &caller, &session.id).await;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A session the caller may see (404 otherwise, learning nothing), with
/// this relay's last use applied.
async fn visible_session(
    state: &AppState,
    caller: &Member,
    id: &str,
) -> Result<WorkSession, ApiError> {
    let session = match state.sessions.copy(id) {
        Some(session) => session,
        None => {
            let mut session = state
                .store
                .work_session(id)
                .await?
                .ok_or_else(|| session_not_found(id))?;
            state.sessions.keep(&session);
            state.sessions.apply(&mut session);
            session
        }
    };
    if session.may_call(&caller.id) || caller.is_admin {
        Ok(session)
    } else {
        Err(session_not_found(id))
    }
}

/// The API's view of a session, with its environment's status now.
async fn view(state: &AppState, session: &WorkSession) -> Result<Session, ApiError> {
    let sandbox = match &session.lock {
        Some(lock) if session.requested_sandbox(&lock.environment_id) => state
            .store
            .sandbox(&lock.environment_id)
            .await?
            .map(|record| sandboxes::view(&record)),
        _ => None,
    };
    let environment = match &session.lock {
        None => None,
        Some(lock) => Some(match state.store.environment(&lock.environment_id).await? {
            Some(environment) => {
                let standing = standing(state, &environment).await;
                SessionEnvironment {
                    id: environment.id,
                    name: environment.name,
                    status: Some(standing.status),
                    reason: standing.reason,
                    deleted: false,
                }
            }
            None => SessionEnvironment {
                id: lock.environment_id.clone(),
                name: lock.environment_name.clone(),
                status: None,
                reason: Some("the environment was deleted".to_owned()),
                deleted: true,
            },
        }),
    };
    Ok(Session {
        id: session.id.clone(),
        state: session.state(state.clock.now()),
        requested: session.requested.as_str().to_owned(),
        requested_from: session.requested_from.as_str().to_owned(),
        tags: session.tags.clone(),
        created_by: member_ref(&session.created_by),
        agent: session.agent.as_ref().map(member_ref),
        environment,
        selection_reason: session.lock.as_ref().map(|lock| lock.reason.clone()),
        created_at: rfc3339(session.created_at),
        locked_at: session.lock.as_ref().map(|lock| rfc3339(lock.at)),
        last_used_at: rfc3339(session.last_used_at),
        expires_at: rfc3339(session.expires_at()),
        ended_at: session.ended_at.map(rfc3339),
        idle_timeout_s: session.idle_timeout_s,
        template_id: session.template_id.clone(),
        sandbox,
    })
}

/// An environment `caller` may use, `None` when it was deleted; the usual
/// 404/403 when it exists but the caller may not use it (e.g. it left the
/// team). Sessions and defaults name environments by id, and a deleted one
/// must be told apart from one the caller cannot see.
async fn existing_environment(
    state: &AppState,
    caller: &Member,
    id: &str,
) -> Result<Option<Arc<EnvironmentRecord>>, ApiError> {
    match environment_for(state, caller, id, Intent::Use).await {
        Ok(environment) => Ok(Some(environment)),
        Err(error)
            if error.status == StatusCode::NOT_FOUND
                && state.store.environment(id).await?.is_none() =>
        {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// A session's environment, for a call by `caller`: `410
/// session_environment_deleted` (with `deleted`'s message) when it is gone,
/// so the session cannot go on.
async fn session_environment(
    state: &AppState,
    caller: &Member,
    id: &str,
    deleted: impl FnOnce() -> String,
) -> Result<Arc<EnvironmentRecord>, ApiError> {
    existing_environment(state, caller, id)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::GONE, "session_environment_deleted", deleted()))
}

/// How an environment stands for a session: its status now and why.
struct Standing {
    presence: Option<Arc<Presence>>,
    status: Status,
    reason: Option<String>,
    last_seen: Option<OffsetDateTime>,
}

async fn standing(state: &AppState, environment: &EnvironmentRecord) -> Standing {
    let presence = state.router.presence(&environment.id).await;
    let mut environment = environment.clone();
    state.seen.apply(&mut environment);
    let (status, reason) = status::compute(
        &environment,
        presence.as_deref(),
        &state.health,
        state.clock.now(),
    );
    Standing {
        presence,
        status,
        reason,
        last_seen: environment.last_seen,
    }
}

fn describe(status: Status, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("{} ({reason})", status.as_str()),
        None => status.as_str().to_owned(),
    }
}

/// Picks and records the environment of a session's first call; of two
/// first calls racing, both get the lock the store kept.
async fn lock(
    state: &AppState,
    caller: &Member,
    session: &WorkSession,
) -> Result<WorkSession, ApiError> {
    let (environment, reason) = match &session.requested {
        Requested::Sandbox => (
            sandbox_for(state, caller, session).await?,
            "a sandbox, as the session asked".to_owned(),
        ),
        Requested::Environment(id) => {
            let environment = session_environment(state, caller, id, || {
                format!("the environment {id:?} this session asked for was deleted; start a new session")
            })
            .await?;
            let standing = standing(state, &environment).await;
            if !select::selectable(standing.status) {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "environment_not_selectable",
                    format!(
                        "environment {:?} ({}) cannot be selected: it is {}",
                        environment.name,
                        environment.id,
                        describe(standing.status, standing.reason.as_deref())
                    ),
                ));
            }
            let reason = match session.requested_from {
                RequestedFrom::Agent => {
                    "the default environment of the session's agent (or creator)".to_owned()
                }
                RequestedFrom::Team => {
                    "the default environment of the agent's (or creator's) team".to_owned()
                }
                RequestedFrom::Request | RequestedFrom::Auto => {
                    "named when the session was created".to_owned()
                }
            };
            (environment, reason)
        }
        Requested::Auto => {
            let environments = usable_environments(state, caller).await?;
            let mut standings = Vec::with_capacity(environments.len());
            for environment in &environments {
                standings.push(standing(state, environment).await);
            }
            let candidates: Vec<Candidate<'_>> = environments
                .iter()
                .zip(&standings)
                .map(|(environment, standing)| Candidate {
                    environment,
                    status: standing.status,
                    load: standing.presence.as_ref().map_or(0, |presence| {
                        u64::from(presence.heartbeat.in_flight)
                            + u64::from(presence.heartbeat.backlog)
                    }),
                    last_seen: standing.last_seen,
                })
                .collect();
            match select::auto(&candidates, &session.tags) {
                Some(choice) => {
                    let environment = environments[choice.index].clone();
                    (Arc::new(environment), choice.reason)
                }
                None if sandboxes::any_host(state).await? => (
                    sandbox_for(state, caller, session).await?,
                    format!(
                        "a sandbox: no usable runner was online (of {} environments you may use)",
                        environments.len()
                    ),
                ),
                None => {
                    return Err(ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "no_usable_runner",
                        format!(
                            "no usable runner online (of {} environments you may use) and no \
                             sandbox host online",
                            environments.len()
                        ),
                    ))
                }
            }
        }
    };
    let lock = Lock {
        environment_id: environment.id.clone(),
        environment_name: environment.name.clone(),
        reason,
        at: state.clock.now(),
    };
    let mut locked = state
        .store
        .lock_work_session(&session.id, &lock)
        .await?
        .ok_or_else(|| session_not_found(&session.id))?;
    state.sessions.keep(&locked);
    state.sessions.apply(&mut locked);
    if let Some(lock) = &locked.lock {
        tracing::info!(session_id = %locked.id, environment_id = %lock.environment_id, reason = %lock.reason, "session locked");
        if environment.env_type == runner_proto::sandbox::SANDBOX_ROLE
            && lock.environment_id != environment.id
        {
            // A first call racing this one locked the session to its own
            // sandbox: this one serves nobody.
            sandboxes::discard(state, caller, &environment.id).await;
        }
    }
    Ok(locked)
}

/// A new sandbox for the session, prepared as its template says.
async fn sandbox_for(
    state: &AppState,
    caller: &Member,
    session: &WorkSession,
) -> Result<Arc<EnvironmentRecord>, ApiError> {
    let settings = match &session.template_id {
        // A template deleted since the session began: the defaults.
        Some(id) => state
            .store
            .template(id)
            .await?
            .map(|template| template.sandbox_settings())
            .unwrap_or_default(),
        None => SandboxSettings::default(),
    };
    sandboxes::provision(
        state,
        caller,
        sandboxes::Purpose::Session(session),
        settings,
    )
    .await
}

/// 410 for a session that no longer takes calls.
fn closed(session: &WorkSession, state: SessionState, now: OffsetDateTime) -> ApiError {
    match state {
        SessionState::Ended => ApiError::new(
            StatusCode::GONE,
            "session_ended",
            format!("session {} was ended; start a new one", session.id),
        ),
        _ => ApiError::new(
            StatusCode::GONE,
            "session_expired",
            format!(
                "session {} expired: unused for {} s (its idle timeout is {} s); start a new one",
                session.id,
                (now - session.last_used_at).whole_seconds(),
                session.idle_timeout_s
            ),
        ),
    }
}

/// A session's environment for a call by `caller`, with the environment's
/// standing: the session placed on a machine first if it is not yet (as
/// its first call does), and refused when it is closed, its machine is
/// gone or cannot take calls (a session never moves).
async fn call_destination(
    state: &AppState,
    caller: &Member,
    id: &str,
) -> Result<(WorkSession, Arc<EnvironmentRecord>, Standing), ApiError> {
    let mut session = visible_session(state, caller, id).await?;
    if !session.may_call(&caller.id) {
        return Err(ApiError::forbidden(format!(
            "only the member who created session {id} (or its agent) may call tools through it"
        )));
    }
    let now = state.clock.now();
    match session.state(now) {
        SessionState::Open => {}
        closed_state => return Err(closed(&session, closed_state, now)),
    }
    if session.lock.is_none() {
        session = lock(state, caller, &session).await?;
    }
    let Some(lock) = &session.lock else {
        return Err(session_not_found(id));
    };
    if session.requested_sandbox(&lock.environment_id) {
        return sandbox_destination(state, &session, lock).await;
    }
    let environment = session_environment(state, caller, &lock.environment_id, || {
        format!(
            "session {} is locked to environment {:?} ({}), which was deleted; \
             a session never moves to another machine: start a new session",
            session.id, lock.environment_name, lock.environment_id
        )
    })
    .await?;
    let standing = standing(state, &environment).await;
    if standing.presence.is_none() || !select::selectable(standing.status) {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "session_environment_unavailable",
            format!(
                "session {} is locked to environment {:?} ({}), which is {}; a session never \
                 moves to another machine: retry when its runner is back, or start a new session",
                session.id,
                environment.name,
                environment.id,
                describe(standing.status, standing.reason.as_deref())
            ),
        ));
    }
    Ok((session, environment, standing))
}

/// A session's sandbox for a call: the session is the authority (a
/// sandbox is nobody else's to use), and a sandbox that is gone is named
/// with why, never replaced.
async fn sandbox_destination(
    state: &AppState,
    session: &WorkSession,
    lock: &Lock,
) -> Result<(WorkSession, Arc<EnvironmentRecord>, Standing), ApiError> {
    let gone = |why: String| {
        ApiError::new(
            StatusCode::GONE,
            "session_sandbox_gone",
            format!(
                "session {} ran in sandbox {}, which is gone: {why}; a session never moves \
                 to another machine: start a new session",
                session.id, lock.environment_id
            ),
        )
    };
    let Some(environment) = state.store.environment(&lock.environment_id).await? else {
        let why = match state.store.sandbox(&lock.environment_id).await? {
            Some(sandbox) => sandbox
                .reason
                .unwrap_or_else(|| format!("it is {}", sandbox.state.as_str())),
            None => "it was deleted".to_owned(),
        };
        return Err(gone(why));
    };
    let standing = standing(state, &environment).await;
    if standing.presence.is_none() {
        let why = match state.store.sandbox(&environment.id).await? {
            Some(mut record) => sandboxes::reconcile(state, &mut record).await,
            None => None,
        };
        return Err(gone(
            why.unwrap_or_else(|| "its runner is offline".to_owned()),
        ));
    }
    Ok((session.clone(), Arc::new(environment), standing))
}

/// The environment a session's calls go to, and its runner: see
/// [`call_destination`]. For MCP's per-session endpoint.
pub async fn placed_environment(
    state: &AppState,
    caller: &Member,
    id: &str,
) -> Result<(Arc<EnvironmentRecord>, Arc<Presence>), ApiError> {
    let (session, environment, standing) = call_destination(state, caller, id).await?;
    let presence = standing
        .presence
        .ok_or_else(|| session_not_found(&session.id))?;
    Ok((environment, presence))
}

pub async fn invoke(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let (session, environment, standing) = call_destination(&state, &caller, &id).await?;
    let now = state.clock.now();
    let notice: Option<Arc<str>> = (standing.status == Status::Degraded).then(|| {
        format!(
            "environment {:?} is degraded ({}): you can continue, responses may be slower",
            environment.name,
            standing.reason.as_deref().unwrap_or("no reason given")
        )
        .into()
    });
    state.sessions.note_use(&session.id, now);
    let destination = Destination {
        environment: &environment,
        presence: standing.presence,
        notice,
        session_id: Some(&session.id),
        audit: CallAudit::start(
            &state,
            &origin,
            &caller,
            &environment.id,
            Some(session.id.as_str()),
        ),
    };
    let mut response = run_call(&state, &caller, destination, &headers, &body, started).await?;
    if let Ok(value) = HeaderValue::from_str(&environment.id) {
        response.headers_mut().insert(ENVIRONMENT_HEADER, value);
    }
    Ok(response)
}
