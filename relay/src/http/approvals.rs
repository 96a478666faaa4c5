//! `/approvals`: asking for a person's approval of a call, deciding it, and
//! running the approved call exactly once (docs/approvals.md).
//!
//! * An `invoke-tool` of a tool that needs approval, with
//!   `"on_approval": "wait"`, stores the call and answers `202` with an
//!   [`ApprovalTicket`] ([`ask`]); with `approval_wait_s` it first waits that
//!   long for the decision and the call's end, and answers as an ordinary
//!   invoke when both come in time.
//! * `POST /approvals/{id}/approve` decides it: one conditional update in
//!   the store, so of any number of approvals (on any relay) exactly one
//!   wins and sends the stored call, under the approval's call id; the
//!   others are no-ops.
//! * `GET /approvals/{id}?wait=N` answers when the approval is settled
//!   (refused, or approved and its call ended) or after N seconds.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use runner_proto::api::{InvocationState, InvokeRequest, InvokeResponse, DEFAULT_TIMEOUT_S};
use runner_proto::approvals::{
    Approval, ApprovalList, ApprovalOutcome, ApprovalStatus, ApprovalTicket, Decide, DeliveryState,
    Notification, MAX_APPROVAL_WAIT_S,
};
use runner_proto::audit::{AuditAction, AuditActor, AuditDecision};
use runner_proto::sessions::MemberRef;
use runner_proto::ws::Call;
use serde::Deserialize;
use time::OffsetDateTime;

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ApiQuery};
use super::invoke::{not_connected, refusal_error, start_relayed};
use super::origin::{entry, Origin};
use crate::approvals::{self, ApprovalRecord, Decision};
use crate::audit::AuditRecord;
use crate::canonical;
use crate::clock::rfc3339;
use crate::enforcement;
use crate::environment::EnvironmentRecord;
use crate::metrics::labels::ApprovalDecision;
use crate::routing::CallRouter;
use crate::sessions::MemberName;
use crate::state::AppState;
use crate::store::{DecidedApproval, Member};

/// Most approvals one `GET /approvals` lists.
const MAX_LIST: u32 = 500;
/// How long after its approval a call with no recorded end is taken for
/// one that never started (its relay stopped between the decision and the
/// send), beyond its own timeout.
const NEVER_STARTED_AFTER: time::Duration = time::Duration::seconds(60);

/// A call that needs approval, as `invoke-tool` checked it.
pub(super) struct Ask<'a> {
    pub environment: &'a EnvironmentRecord,
    pub session_id: Option<&'a str>,
    pub request: InvokeRequest,
    pub rule: String,
}

/// The answer to a call that asked for an approval, and that approval.
pub(super) struct Asked {
    pub response: Response,
    pub approval_id: String,
}

/// Stores the call as a pending approval (or finds the one a repeated
/// request with the same `call_id` made) and answers 202, or, with
/// `approval_wait_s`, the call's answer if it is decided and ends in time.
pub(super) async fn ask(
    state: &AppState,
    caller: &Member,
    ask: Ask<'_>,
) -> Result<Asked, ApiError> {
    let Ask {
        environment,
        session_id,
        request,
        rule,
    } = ask;
    let now = state.clock.now();
    let call_id = request
        .call_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let timeout_s = request.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    let call_sha256 = approvals::call_hash(
        &environment.id,
        &request.tool_name,
        &request.args,
        timeout_s,
        &call_id,
    );
    let record = ApprovalRecord {
        id: format!("apr_{}", uuid::Uuid::new_v4().simple()),
        call_id: call_id.clone(),
        stored_status: ApprovalStatus::Pending,
        environment_id: environment.id.clone(),
        environment_name: environment.name.clone(),
        session_id: session_id.map(str::to_owned),
        tool: request.tool_name.clone(),
        args: request.args.clone(),
        timeout_s,
        call_sha256,
        rule,
        requested_by: MemberName {
            id: caller.id.clone(),
            name: caller.name.clone(),
        },
        requested_at: now,
        expires_at: now + state.approval_ttl,
        decided_by: None,
        decided_at: None,
        comment: None,
        outcome: None,
        notification: state.webhook.as_ref().map(|_| Notification {
            state: DeliveryState::Pending,
            attempts: 0,
            last_error: None,
        }),
    };
    let stored = state.store.insert_approval(&record).await?;
    if stored.id == record.id {
        tracing::info!(approval_id = %stored.id, environment_id = %stored.environment_id, tool = %stored.tool, "approval requested");
        state.approvals.notify();
        state.metrics.approval_requested();
        if let Some(webhook) = &state.webhook {
            webhook.announce(
                state.store.clone(),
                state.approvals.clone(),
                &stored,
                &state.approval_link(&stored.id),
            );
        }
    } else if stored.requested_by.id != caller.id || stored.call_sha256 != record.call_sha256 {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "call_id_conflict",
            format!("call id {call_id:?} was used for another call"),
        )
        .with_call_id(&call_id));
    }
    if let Some(wait_s) = request.approval_wait_s.filter(|seconds| *seconds > 0) {
        let wait = Duration::from_secs(wait_s.min(MAX_APPROVAL_WAIT_S));
        let settled = wait_settled(state, &stored.id, wait).await?;
        if let Some(answer) = settled_answer(&settled, state.clock.now()) {
            return answer.map(|response| Asked {
                response,
                approval_id: stored.id.clone(),
            });
        }
    }
    let status = stored.status(state.clock.now());
    if status.refused() {
        return Err(refused(&stored, status));
    }
    let ticket = ApprovalTicket {
        approval_id: stored.id.clone(),
        call_id: stored.call_id.clone(),
        status,
        expires_at: rfc3339(stored.expires_at),
        message: format!(
            "tool {:?} needs a person's approval; waiting: `runner approvals approve {}` \
             (someone else who may manage environment {:?})",
            stored.tool, stored.id, stored.environment_name
        ),
    };
    Ok(Asked {
        response: (StatusCode::ACCEPTED, Json(ticket)).into_response(),
        approval_id: stored.id,
    })
}

/// The answer of an invoke whose approval settled while it waited: the
/// call's answer, or the refusal. `None` while not settled.
fn settled_answer(
    approval: &ApprovalRecord,
    now: OffsetDateTime,
) -> Option<Result<Response, ApiError>> {
    let status = approval.status(now);
    if status.refused() {
        return Some(Err(refused(approval, status)));
    }
    let outcome = approval.outcome.as_ref()?;
    Some(match &outcome.error_code {
        None => Ok(Json(InvokeResponse {
            call_id: approval.call_id.clone(),
            result: outcome.result.clone(),
            exit_code: outcome.exit_code,
            error: outcome.error.clone(),
            error_code: None,
            notice: None,
        })
        .into_response()),
        Some(code) => Err(outcome_error(approval, code, outcome)),
    })
}

/// An approved call that ended without the runner's answer, as the error
/// an ordinary invoke would have got.
fn outcome_error(approval: &ApprovalRecord, code: &str, outcome: &ApprovalOutcome) -> ApiError {
    let message = outcome
        .error
        .clone()
        .unwrap_or_else(|| format!("the approved call failed: {code}"));
    let (status, code) = match code {
        "timeout" => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
        "runner_disconnected" => (StatusCode::SERVICE_UNAVAILABLE, "runner_disconnected"),
        "runner_not_connected" => (StatusCode::SERVICE_UNAVAILABLE, "runner_not_connected"),
        "tool_not_allowed" => (StatusCode::FORBIDDEN, "tool_not_allowed"),
        "path_not_allowed" => (StatusCode::FORBIDDEN, "path_not_allowed"),
        "denied_by_runner_policy" => (StatusCode::FORBIDDEN, "denied_by_runner_policy"),
        "unknown_tool" => (StatusCode::NOT_FOUND, "unknown_tool"),
        "invalid_arguments" => (StatusCode::BAD_REQUEST, "invalid_arguments"),
        _ => (StatusCode::BAD_GATEWAY, "approved_call_failed"),
    };
    ApiError::new(status, code, message).with_call_id(&approval.call_id)
}

/// 403 for a denied or expired approval: the call never ran.
fn refused(approval: &ApprovalRecord, status: ApprovalStatus) -> ApiError {
    let (code, message) = if status == ApprovalStatus::Expired {
        (
            "approval_expired",
            format!(
                "approval {} expired at {} without a decision; the call never ran",
                approval.id,
                rfc3339(approval.expires_at)
            ),
        )
    } else {
        let by = approval
            .decided_by
            .as_ref()
            .map_or_else(String::new, |by| format!(" by {}", by.name));
        let why = approval
            .comment
            .as_ref()
            .map_or_else(String::new, |comment| format!(": {comment}"));
        (
            "approval_denied",
            format!(
                "approval {} was denied{by}{why}; the call never ran",
                approval.id
            ),
        )
    };
    ApiError::new(StatusCode::FORBIDDEN, code, message).with_call_id(&approval.call_id)
}

/// Re-reads the approval until it is settled or `wait` has passed; then
/// answers its latest state.
async fn wait_settled(
    state: &AppState,
    id: &str,
    wait: Duration,
) -> Result<ApprovalRecord, ApiError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let mut changes = state.approvals.subscribe();
        let approval = load(state, id).await?;
        let now = state.clock.now();
        if approval.settled(now) || tokio::time::Instant::now() >= deadline {
            return Ok(approval);
        }
        let until_expiry = (approval.expires_at - now).unsigned_abs();
        let _ = tokio::time::timeout_at(
            deadline.min(tokio::time::Instant::now() + until_expiry),
            state.approvals.next_change(&mut changes),
        )
        .await;
    }
}

/// An approval from the store, with the end of an approved call filled in
/// from the journal when the relay that ran it could not record it.
async fn load(state: &AppState, id: &str) -> Result<ApprovalRecord, ApiError> {
    let mut approval = state
        .store
        .approval(id)
        .await?
        .ok_or_else(|| not_found(id))?;
    if approval.stored_status == ApprovalStatus::Approved && approval.outcome.is_none() {
        if let Some(outcome) = journal_outcome(state, &approval).await? {
            state.store.finish_approval(&approval.id, &outcome).await?;
            approval.outcome = Some(outcome);
        }
    }
    Ok(approval)
}

/// The end of an approved call the journal knows of, or a failure when the
/// call can no longer be running.
async fn journal_outcome(
    state: &AppState,
    approval: &ApprovalRecord,
) -> Result<Option<ApprovalOutcome>, ApiError> {
    let now = state.clock.now();
    let entry = state.store.invocation(&approval.call_id).await?;
    if let Some(entry) = entry.filter(|entry| entry.state == InvocationState::Done) {
        return Ok(Some(ApprovalOutcome {
            result: entry.result,
            exit_code: entry.exit_code,
            error: entry.error,
            error_code: entry.error_code,
            finished_at: rfc3339(entry.finished_at.unwrap_or(now)),
        }));
    }
    let timeout = time::Duration::seconds(i64::try_from(approval.timeout_s).unwrap_or(i64::MAX));
    let overdue = approval
        .decided_at
        .is_some_and(|at| now > at + timeout + NEVER_STARTED_AFTER);
    Ok(overdue.then(|| failed("runner_disconnected",
        "the approved call has no result: the relay running it stopped, or its runner left, before it ended",
        now,
    )))
}

fn failed(code: &str, message: impl Into<String>, at: OffsetDateTime) -> ApprovalOutcome {
    ApprovalOutcome {
        result: serde_json::Value::Null,
        exit_code: None,
        error: Some(message.into()),
        error_code: Some(code.to_owned()),
        finished_at: rfc3339(at),
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("approval {id:?} not found"),
    )
}

/// The approval's environment when the caller may see the approval: its
/// requester, or a member who may see the environment. Everyone else gets
/// the same 404 as for an approval that does not exist.
async fn visible(
    state: &AppState,
    caller: &Member,
    approval: &ApprovalRecord,
) -> Result<Option<EnvironmentRecord>, ApiError> {
    let environment = state.store.environment(&approval.environment_id).await?;
    let sees = approval.requested_by.id == caller.id
        || environment
            .as_ref()
            .is_some_and(|environment| crate::access::can_see(caller, environment));
    if !sees {
        return Err(not_found(&approval.id));
    }
    Ok(environment)
}

/// The API's view: arguments masked, whatever is stored.
pub fn view(approval: &ApprovalRecord, now: OffsetDateTime) -> Approval {
    let member = |member: &MemberName| MemberRef {
        id: member.id.clone(),
        name: member.name.clone(),
    };
    Approval {
        id: approval.id.clone(),
        call_id: approval.call_id.clone(),
        status: approval.status(now),
        environment_id: approval.environment_id.clone(),
        environment_name: approval.environment_name.clone(),
        session_id: approval.session_id.clone(),
        tool: approval.tool.clone(),
        args: canonical::mask_env(&approval.args),
        timeout_s: approval.timeout_s,
        call_sha256: approval.call_sha256.clone(),
        rule: approval.rule.clone(),
        requested_by: member(&approval.requested_by),
        requested_at: rfc3339(approval.requested_at),
        expires_at: rfc3339(approval.expires_at),
        decided_by: approval.decided_by.as_ref().map(member),
        decided_at: approval.decided_at.map(rfc3339),
        comment: approval.comment.clone(),
        outcome: approval.outcome.clone(),
        notification: approval.notification.clone(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// `pending`, `approved`, `denied`, `expired`; absent: all.
    pub(super) status: Option<String>,
    /// An environment id: only its approvals.
    pub(super) environment: Option<String>,
    pub(super) limit: Option<u32>,
}

/// `GET /approvals`, with a JSON error for a query that does not fit.
pub async fn list_api(
    state: State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    list(state, caller, Query(query)).await
}

/// `GET /approvals/{id}`, with a JSON error for a query that does not fit.
pub async fn get_api(
    state: State<AppState>,
    caller: Caller,
    id: Path<String>,
    ApiQuery(query): ApiQuery<GetQuery>,
) -> Result<Json<Approval>, ApiError> {
    get(state, caller, id, Query(query)).await
}

/// `GET /approvals`: the newest first, those the caller may see.
pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Query(query): Query<ListQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    let status = query
        .status
        .as_deref()
        .filter(|status| *status != "all")
        .map(|text| {
            ApprovalStatus::parse(text).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "status {text:?} must be pending, approved, denied, expired or all"
                ))
            })
        })
        .transpose()?;
    let limit = query.limit.unwrap_or(100);
    if !(1..=MAX_LIST).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be from 1 to {MAX_LIST} (got {limit})"
        )));
    }
    let now = state.clock.now();
    // Filtered after reading: ask for more so that a page is rarely short.
    let found = state.store.list_approvals(status, now, MAX_LIST).await?;
    let mut environments: HashMap<String, Option<Arc<EnvironmentRecord>>> = HashMap::new();
    let mut approvals = Vec::new();
    for approval in found {
        if query.environment.as_deref().is_some_and(|wanted| {
            wanted != approval.environment_id && wanted != approval.environment_name
        }) {
            continue;
        }
        if !environments.contains_key(&approval.environment_id) {
            let environment = state
                .store
                .environment(&approval.environment_id)
                .await?
                .map(Arc::new);
            environments.insert(approval.environment_id.clone(), environment);
        }
        let environment = environments
            .get(&approval.environment_id)
            .and_then(Option::as_ref);
        let sees = approval.requested_by.id == caller.id
            || environment.is_some_and(|environment| crate::access::can_see(&caller, environment));
        if sees {
            approvals.push(view(&approval, now));
            if approvals.len() >= limit as usize {
                break;
            }
        }
    }
    Ok(Json(ApprovalList { approvals }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetQuery {
    /// Seconds to wait for the approval to settle (at most 300).
    pub(super) wait: Option<u64>,
}

/// `GET /approvals/{id}`, with `?wait=N` to wait until it is settled.
pub async fn get(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
    Query(query): Query<GetQuery>,
) -> Result<Json<Approval>, ApiError> {
    if let Some(seconds) = query.wait.filter(|seconds| *seconds > MAX_APPROVAL_WAIT_S) {
        return Err(ApiError::bad_request(format!(
            "wait must be from 0 to {MAX_APPROVAL_WAIT_S} seconds (got {seconds})"
        )));
    }
    let approval = load(&state, &id).await?;
    visible(&state, &caller, &approval).await?;
    let approval = match query.wait.filter(|seconds| *seconds > 0) {
        Some(seconds) => {
            let wait = Duration::from_secs(seconds);
            wait_settled(&state, &id, wait).await?
        }
        None => approval,
    };
    Ok(Json(view(&approval, state.clock.now())))
}

/// `POST /approvals/{id}/approve`.
pub async fn approve(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Decide>,
) -> Result<Json<Approval>, ApiError> {
    decide(&state, &caller, &origin, &id, Decision::Approve, body).await
}

/// `POST /approvals/{id}/deny`.
pub async fn deny(
    State(state): State<AppState>,
    Caller(caller): Caller,
    origin: Origin,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Decide>,
) -> Result<Json<Approval>, ApiError> {
    decide(&state, &caller, &origin, &id, Decision::Deny, body).await
}

async fn decide(
    state: &AppState,
    caller: &Member,
    origin: &Origin,
    id: &str,
    decision: Decision,
    body: Decide,
) -> Result<Json<Approval>, ApiError> {
    let approval = load(state, id).await?;
    let environment = visible(state, caller, &approval).await?;
    let scope = match &environment {
        Some(environment) => environment.scope.clone(),
        // Deleted since: its approvals can only be denied, by an admin.
        None if decision == Decision::Deny && caller.is_admin => crate::environment::Scope::Shared,
        None => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "environment_deleted",
                format!(
                    "environment {:?} was deleted; its approvals can only be denied",
                    approval.environment_name
                ),
            ))
        }
    };
    // The audit entry of this decision, whatever becomes of it.
    let record = |decided: AuditDecision, code: &str| {
        let mut entry = entry(state, origin, caller, AuditAction::ApprovalDecide)
            .environment(&approval.environment_id)
            .target(&approval.id)
            .decided(decided, code);
        entry.tool = Some(approval.tool.clone());
        entry.call_id = Some(approval.call_id.clone());
        entry.session_id.clone_from(&approval.session_id);
        state.audit.record(entry);
    };
    if let Err(why) = crate::access::may_decide(caller, &scope, &approval.requested_by.id) {
        record(AuditDecision::Denied, "not_an_approver");
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_an_approver",
            why.to_string(),
        ));
    }
    let now = state.clock.now();
    let by = MemberName {
        id: caller.id.clone(),
        name: caller.name.clone(),
    };
    let comment = approvals::comment(body.comment.as_deref());
    let masked = canonical::mask_env(&approval.args);
    let won = state
        .store
        .decide_approval(&DecidedApproval {
            id,
            decision,
            by: &by,
            at: now,
            comment: comment.as_deref(),
            args: &masked,
        })
        .await?;
    if !won {
        // Decided before (here or on another relay), or expired.
        let current = load(state, id).await?;
        let status = current.status(now);
        if status == decision.status() {
            return Ok(Json(view(&current, now)));
        }
        let (code, message) = match status {
            ApprovalStatus::Expired => (
                "approval_expired",
                format!("approval {id} expired at {}", rfc3339(current.expires_at)),
            ),
            _ => (
                "approval_decided",
                format!(
                    "approval {id} was {} already{}",
                    status.as_str(),
                    current
                        .decided_by
                        .as_ref()
                        .map_or_else(String::new, |by| format!(" by {}", by.name))
                ),
            ),
        };
        return Err(ApiError::new(StatusCode::CONFLICT, code, message));
    }
    tracing::info!(approval_id = %id, decision = decision.as_str(), member = %caller.id, "approval decided");
    // Allowed: the decision was taken; `code` says which.
    record(AuditDecision::Allowed, decision.status().as_str());
    state.metrics.approval_decided(match decision {
        Decision::Approve => ApprovalDecision::Approved,
        Decision::Deny => ApprovalDecision::Denied,
    });
    if decision == Decision::Approve {
        // The stored call, with its full arguments as read before the
        // decision replaced them by their masked form.
        run_approved(state, approval, environment).await;
    }
    state.approvals.notify();
    let decided = load(state, id).await?;
    Ok(Json(view(&decided, now)))
}

/// Sends the approved call (checked again: the policy may have changed
/// since it was asked for) and records its end from a task of its own.
async fn run_approved(
    state: &AppState,
    approval: ApprovalRecord,
    environment: Option<EnvironmentRecord>,
) {
    let now = state.clock.now();
    let fail = |code: &str, message: String| failed(code, message, now);
    let started = match prepare(state, &approval, environment).await {
        Ok(call) => start_relayed(state, &approval.environment_id, call, true)
            .await
            .map_err(|error| fail(error.code, error.message)),
        Err(outcome) => Err(outcome),
    };
    match started {
        Err(outcome) => finish(state, &approval, &outcome).await,
        Ok((handle, mut guard)) => {
            let state = state.clone();
            let timeout = Duration::from_secs(approval.timeout_s);
            tokio::spawn(async move {
                let outcome = match tokio::time::timeout(timeout, handle.result).await {
                    Ok(Ok(result)) => {
                        guard.disarm();
                        ApprovalOutcome {
                            result: result.result,
                            exit_code: result.exit_code,
                            error: result.error,
                            error_code: result.error_code,
                            finished_at: rfc3339(state.clock.now()),
                        }
                    }
                    Ok(Err(_closed)) => {
                        guard.disarm();
                        failed(
                            "runner_disconnected",
                            "the runner disconnected before the approved call finished",
                            state.clock.now(),
                        )
                    }
                    // The guard cancels the call on the runner as it drops.
                    Err(_elapsed) => failed(
                        "timeout",
                        format!(
                            "the approved call did not finish within {} s; the runner was told to cancel it",
                            approval.timeout_s
                        ),
                        state.clock.now(),
                    ),
                };
                finish(&state, &approval, &outcome).await;
            });
        }
    }
}

/// The call to send for an approval, or why it cannot run any more.
async fn prepare(
    state: &AppState,
    approval: &ApprovalRecord,
    environment: Option<EnvironmentRecord>,
) -> Result<Call, ApprovalOutcome> {
    let now = state.clock.now();
    if !approval.hash_matches() {
        tracing::error!(approval_id = %approval.id, "stored call does not match its hash; not run");
        return Err(failed(
            "approval_tampered",
            "the stored call does not match the hash it was approved under; it was not run",
            now,
        ));
    }
    let Some(environment) = environment else {
        return Err(failed(
            "environment_deleted",
            "the environment was deleted",
            now,
        ));
    };
    let presence = state.router.presence(&environment.id).await;
    let workspace = presence
        .as_ref()
        .map(|presence| presence.host.workspace.as_str())
        .filter(|workspace| !workspace.is_empty());
    enforcement::check_approved(
        &environment.policy,
        environment.tier,
        &approval.tool,
        &approval.args,
        workspace,
    )
    .map_err(|refusal| {
        let error = refusal_error(refusal);
        failed(error.code, error.message, now)
    })?;
    let presence = presence.ok_or_else(|| {
        let error = not_connected(&environment.id);
        failed(error.code, error.message, now)
    })?;
    if let Some(tool) = presence
        .tools
        .iter()
        .find(|tool| tool.name == approval.tool)
    {
        enforcement::schema::validate(&tool.input_schema, &approval.args).map_err(|error| {
            failed(
                "invalid_arguments",
                format!("{error} (tool {:?})", approval.tool),
                now,
            )
        })?;
    } else {
        return Err(failed(
            "unknown_tool",
            format!(
                "the runner does not offer tool {:?} any more",
                approval.tool
            ),
            now,
        ));
    }
    Ok(Call {
        call_id: approval.call_id.clone(),
        tool: approval.tool.clone(),
        args: approval.args.clone(),
        timeout_s: approval.timeout_s,
        epoch: 0,
        stream: false,
        approval_id: Some(approval.id.clone()),
    })
}

async fn finish(state: &AppState, approval: &ApprovalRecord, outcome: &ApprovalOutcome) {
    let id = &approval.id;
    if let Err(error) = state.store.finish_approval(id, outcome).await {
        tracing::warn!(approval_id = %id, %error, "could not record the end of an approved call");
    }
    state.approvals.notify();
    state
        .audit
        .record(approved_call_entry(state, approval, outcome));
}

/// The approved call's `tool.invoke` entry: the requester's call, run on
/// a person's approval (the target names it), with how it ended.
fn approved_call_entry(
    state: &AppState,
    approval: &ApprovalRecord,
    outcome: &ApprovalOutcome,
) -> AuditRecord {
    let actor = AuditActor {
        member_id: Some(approval.requested_by.id.clone()),
        name: Some(approval.requested_by.name.clone()),
        ..AuditActor::default()
    };
    let (decision, code) = match outcome.error_code.as_deref() {
        None if outcome.error.is_none() => (AuditDecision::Allowed, None),
        None => (AuditDecision::Error, Some("runner_error")),
        Some("timeout") => (AuditDecision::Timeout, Some("timeout")),
        Some(code @ ("tool_not_allowed" | "path_not_allowed" | "denied_by_runner_policy")) => {
            (AuditDecision::Denied, Some(code))
        }
        Some(code) => (AuditDecision::Error, Some(code)),
    };
    let mut entry = AuditRecord::new(state.clock.now(), actor, AuditAction::ToolInvoke)
        .environment(&approval.environment_id)
        .target(&approval.id);
    entry.session_id.clone_from(&approval.session_id);
    entry.tool = Some(approval.tool.clone());
    entry.call_id = Some(approval.call_id.clone());
    // The stored arguments are masked by now; the digest is of the call as
    // asked, which its hash binds.
    entry.args_digest = Some(approval.call_sha256.clone());
    entry.exit_code = outcome.exit_code;
    entry.decision = decision;
    entry.code = code.map(str::to_owned);
    entry
}
