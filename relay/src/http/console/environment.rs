//! One environment: status and recent activity, its token (rotate,
//! revoke), tool access, file paths and approval requirements, settings,
//! and delete. Every change goes through the API's own handler.

use std::collections::BTreeSet;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use runner_proto::api::{EnvironmentStatus, Tier, TokenStatus, UpdateEnvironment};
use runner_proto::ws::{Policy, ToolAccess, ToolSpec};
use serde::Deserialize;

use super::audit::{entry_rows, EntryRow};
use super::page::{render, Chrome, Failure, Section, Signed};
use super::view::EnvironmentRow;
use crate::access;
use crate::audit::AuditQuery;
use crate::http::audit::AuditParams;
use crate::http::auth::{environment_for, Caller, Intent};
use crate::http::error::ApiJson;
use crate::http::origin::Origin;
use crate::http::{environments, tokens};
use crate::registration::{DEFAULT_GRACE_HOURS, MAX_GRACE_HOURS};
use crate::state::AppState;
use runner_proto::audit::AuditAction;

/// A tool of the last announced catalogue, with its ticks.
pub struct ToolChoice {
    pub name: String,
    pub description: String,
    pub allowed: bool,
    pub approval: bool,
}

#[derive(Template)]
#[template(path = "console/environment.html")]
struct EnvironmentPage {
    chrome: Chrome,
    row: EnvironmentRow,
    tier: &'static str,
    env_type: String,
    install_browser_tools: bool,
    manage: bool,
    status: EnvironmentStatus,
    token: Option<TokenStatus>,
    all_tools: bool,
    tools: Vec<ToolChoice>,
    /// Allowed or approval-gated names the catalogue does not hold.
    other_tools: String,
    other_approvals: String,
    file_paths: String,
    history: Vec<EntryRow>,
    notice: Option<String>,
    max_grace: i64,
    default_grace: i64,
}

#[derive(Template)]
#[template(path = "console/environment_status.html")]
struct StatusPartial {
    row: EnvironmentRow,
    status: EnvironmentStatus,
}

fn choices(policy: &Policy, catalogue: &[ToolSpec]) -> (Vec<ToolChoice>, String, String) {
    let listed: BTreeSet<&str> = match &policy.tools {
        ToolAccess::All => BTreeSet::new(),
        ToolAccess::List { tools } => tools.iter().map(String::as_str).collect(),
    };
    let approvals: BTreeSet<&str> = policy
        .approval_required
        .iter()
        .map(String::as_str)
        .collect();
    let known: BTreeSet<&str> = catalogue.iter().map(|tool| tool.name.as_str()).collect();
    let tools = catalogue
        .iter()
        .map(|tool| ToolChoice {
            name: tool.name.clone(),
            description: tool.description.clone(),
            allowed: matches!(policy.tools, ToolAccess::All) || listed.contains(tool.name.as_str()),
            approval: approvals.contains(tool.name.as_str()),
        })
        .collect();
    let others = |names: &BTreeSet<&str>| {
        names
            .iter()
            .filter(|name| !known.contains(**name))
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    };
    (tools, others(&listed), others(&approvals))
}

#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    #[serde(default)]
    done: String,
}

fn notice_text(done: &str) -> Option<String> {
    Some(
        match done {
            "rotated" => {
                "A new token was made; the previous one works until its grace period ends."
            }
            "revoked" => "Every token of this environment was revoked and its runner disconnected.",
            "policy" => "Tool access saved; it applies to the next call.",
            "settings" => "Settings saved.",
            _ => return None,
        }
        .to_owned(),
    )
}

/// Entries of the environment's history shown.
const HISTORY: u32 = 15;

/// The environment's history: for organisation admins every audit entry
/// naming it; for others (who may not read the audit log) its runner's
/// connects, disconnects and degraded periods.
async fn history(
    state: &AppState,
    member: &std::sync::Arc<crate::store::Member>,
    environment_id: &str,
) -> Result<Vec<EntryRow>, Failure> {
    if member.is_admin {
        return entry_rows(
            state,
            member,
            AuditParams {
                environment: Some(environment_id.to_owned()),
                limit: Some(HISTORY),
                order: Some("desc".to_owned()),
                ..AuditParams::default()
            },
        )
        .await;
    }
    state.audit.flush().await;
    let mut entries = Vec::new();
    for action in [
        AuditAction::RunnerConnect,
        AuditAction::RunnerDisconnect,
        AuditAction::RunnerDegraded,
        AuditAction::RunnerRecovered,
    ] {
        let query = AuditQuery {
            environment_id: Some(environment_id.to_owned()),
            action: Some(action),
            descending: true,
            limit: HISTORY,
            ..AuditQuery::default()
        };
        entries.extend(
            state
                .store
                .audit_entries(&query)
                .await
                .map_err(crate::http::error::ApiError::from)?,
        );
    }
    entries.sort_by_key(|entry| std::cmp::Reverse(entry.seq));
    entries.truncate(HISTORY as usize);
    let now = state.clock.now();
    Ok(entries
        .iter()
        .map(|entry| EntryRow::of(entry.to_api(), now))
        .collect())
}

async fn environment_page(
    state: &AppState,
    signed: &Signed,
    id: &str,
    notice: Option<String>,
) -> Result<Html<String>, Failure> {
    let environment = environment_for(state, &signed.member, id, Intent::Read).await?;
    let manage = access::can_manage(&signed.member, &environment.scope);
    let status = state
        .environment_status(&environment)
        .await
        .map_err(crate::http::error::ApiError::from)?;
    let token = if manage {
        Some(
            tokens::status(
                State(state.clone()),
                Caller(signed.member.clone()),
                Path(environment.id.clone()),
            )
            .await?
            .0,
        )
    } else {
        None
    };
    let (catalogue, _) = environments::announced_catalogue(state, &environment).await?;
    let (tools, other_tools, other_approvals) = choices(&environment.policy, &catalogue);
    let history = history(state, &signed.member, &environment.id).await?;
    render(&EnvironmentPage {
        chrome: signed.chrome(Section::Environments),
        tier: match environment.tier {
            Tier::Production => "production",
            Tier::Development => "development",
        },
        env_type: environment.env_type.clone(),
        install_browser_tools: environment.install_browser_tools,
        manage,
        status,
        token,
        all_tools: matches!(environment.policy.tools, ToolAccess::All),
        tools,
        other_tools,
        other_approvals,
        file_paths: environment.policy.file_paths.join("\n"),
        history,
        notice,
        max_grace: MAX_GRACE_HOURS,
        default_grace: DEFAULT_GRACE_HOURS,
        row: EnvironmentRow::of(state, (*environment).clone()).await,
    })
}

pub async fn page(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
    Query(notice): Query<Notice>,
) -> Result<Html<String>, Failure> {
    environment_page(&state, &signed, &id, notice_text(&notice.done)).await
}

/// The status card alone, refreshed every 10 s.
pub async fn status(
    State(state): State<AppState>,
    signed: Signed,
    Path(id): Path<String>,
) -> Result<Html<String>, Failure> {
    let environment = environment_for(&state, &signed.member, &id, Intent::Read).await?;
    let status = state
        .environment_status(&environment)
        .await
        .map_err(crate::http::error::ApiError::from)?;
    render(&StatusPartial {
        row: EnvironmentRow::of(&state, (*environment).clone()).await,
        status,
    })
}

fn back(id: &str, done: &str) -> Response {
    Redirect::to(&format!(
        "/console/environments/{}?done={done}",
        form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
    ))
    .into_response()
}

#[derive(Debug, Deserialize)]
pub struct RotateForm {
    #[serde(default)]
    grace_hours: String,
}

pub async fn rotate(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<RotateForm>,
) -> Result<Html<String>, Failure> {
    let grace = Some(form.grace_hours.trim()).filter(|hours| !hours.is_empty());
    // The new token is shown once, in the setup guide's commands.
    super::setup::guide_with_new_token(&state, &signed, origin, &headers, &id, grace).await
}

#[derive(Debug, Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    confirm: String,
}

pub async fn revoke(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(form): Form<RevokeForm>,
) -> Result<Response, Failure> {
    if form.confirm != "yes" {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            "Tick the box that says the runner is disconnected, then revoke.",
        ));
    }
    let _ = tokens::revoke(
        State(state),
        Caller(signed.member.clone()),
        origin,
        Path(id.clone()),
    )
    .await?;
    Ok(back(&id, "revoked"))
}

/// The tool access form: `access` is `all` or `list`; ticked tools come
/// as repeated `tool` and `approval` fields.
pub async fn policy(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response, Failure> {
    let values = |name: &str| {
        fields
            .iter()
            .filter(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
            .collect::<Vec<_>>()
    };
    let lines = |name: &str| {
        values(name)
            .into_iter()
            .flat_map(str::lines)
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let ticked = |name: &str| {
        values(name)
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let tools = if values("access").first() == Some(&"all") {
        ToolAccess::All
    } else {
        let mut tools = ticked("tool");
        tools.extend(lines("other_tools"));
        tools.sort();
        tools.dedup();
        ToolAccess::List { tools }
    };
    let mut approval_required = ticked("approval");
    approval_required.extend(lines("other_approvals"));
    approval_required.sort();
    approval_required.dedup();
    let policy = Policy {
        tools,
        file_paths: lines("file_paths"),
        approval_required,
    };
    update(
        &state,
        &signed,
        origin,
        &id,
        UpdateEnvironment {
            policy: Some(policy),
            ..UpdateEnvironment::default()
        },
    )
    .await?;
    Ok(back(&id, "policy"))
}

#[derive(Debug, Deserialize)]
pub struct SettingsForm {
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: String,
    #[serde(default)]
    install_browser_tools: String,
}

pub async fn settings(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(form): Form<SettingsForm>,
) -> Result<Response, Failure> {
    let tags = super::environments::split_tags(&form.tags);
    update(
        &state,
        &signed,
        origin,
        &id,
        UpdateEnvironment {
            description: Some(form.description.trim().to_owned()),
            tags: Some(tags),
            install_browser_tools: Some(form.install_browser_tools == "on"),
            ..UpdateEnvironment::default()
        },
    )
    .await?;
    Ok(back(&id, "settings"))
}

async fn update(
    state: &AppState,
    signed: &Signed,
    origin: Origin,
    id: &str,
    request: UpdateEnvironment,
) -> Result<(), Failure> {
    let _ = environments::update(
        State(state.clone()),
        Caller(signed.member.clone()),
        origin,
        Path(id.to_owned()),
        ApiJson(request),
    )
    .await?;
    Ok(())
}

#[derive(Debug, Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    confirm_name: String,
}

pub async fn delete(
    State(state): State<AppState>,
    signed: Signed,
    origin: Origin,
    Path(id): Path<String>,
    Form(form): Form<DeleteForm>,
) -> Result<Response, Failure> {
    let environment = environment_for(&state, &signed.member, &id, Intent::Manage).await?;
    let expected = if environment.name.is_empty() {
        &environment.id
    } else {
        &environment.name
    };
    if form.confirm_name.trim() != expected {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            format!("Type the environment's name ({expected}) to delete it."),
        ));
    }
    environments::delete(
        State(state),
        Caller(signed.member.clone()),
        origin,
        Path(environment.id.clone()),
    )
    .await?;
    Ok(Redirect::to("/console/environments").into_response())
}
