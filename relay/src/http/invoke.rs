//! `invoke-tool`: check, relay one call to the environment's runner, wait
//! for its result, and cancel it on the runner when the wait ends early.
//!
//! Checks, in order: the policy (allow-list, approvals, file paths), a
//! connected runner offering the tool, and the arguments against the JSON
//! Schema the runner announced for it (400 naming the field at fault).
//!
//! Streamed calls, output as the tool produces it:
//!
//! * `Accept: application/vnd.runner.stream` ([`STREAM_MEDIA_TYPE`]): one
//!   binary body of frames, the output byte for byte, then the result (the
//!   usual [`InvokeResponse`]) or an error body: for bulk and binary output;
//! * `Accept: text/event-stream`: Server-Sent Events, `output` events
//!   (`{"stream","data"}`, the bytes decoded as UTF-8, invalid sequences
//!   replaced), then exactly one `result` event or one `error` event
//!   (timeout, runner gone): for text, and for clients that speak SSE.
//!
//! Errors found before the call is relayed are ordinary HTTP error answers
//! either way.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use futures_util::StreamExt;
use runner_proto::api::{
    stream_frame, ErrorBody, ErrorDetail, InvokeRequest, InvokeResponse, DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S, RUNNER_DISCONNECTED, STREAM_MEDIA_TYPE,
};
use runner_proto::approvals::{OnApproval, MAX_APPROVAL_WAIT_S};
use runner_proto::audit::{AuditAction, AuditDecision};
use runner_proto::ws::{utf8_boundary, Call, CallResult, Stream, DENIED_BY_RUNNER_POLICY};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use super::approvals;
use super::auth::{environment_for, Caller, Intent};
use super::call_audit::CallAudit;
use super::error::{ApiError, RawBody};
use super::origin::Origin;
use crate::enforcement::{self, Refusal};
use crate::environment::EnvironmentRecord;
use crate::metrics::labels::Outcome;
use crate::metrics::CallMetrics;
use crate::routing::{
    CallRouter, JournaledRouter, OutputChunk, Presence, RouteError, DISCONNECTED_MESSAGE,
};
use crate::state::AppState;
use crate::store::Member;

/// Bound on the journal read of a repeated call id while no runner is
/// connected.
const JOURNAL_LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// The tracing target of the access log: the `request` and `call` spans
/// and their lines ("answered", "call finished"), at info, only with
/// `--access-log`.
pub const ACCESS_LOG: &str = "runner_relay::access";

/// The filter directive that turns the access log on or off.
pub fn access_log_directive(on: bool) -> tracing_subscriber::filter::Directive {
    let level = if on { "info" } else { "off" };
    // A constant target and level: the directive always parses.
    format!("{ACCESS_LOG}={level}")
        .parse()
        .expect("a constant filter directive parses")
}

/// Parses the body by hand so that every shape error names its field.
pub fn parse_request(body: &[u8]) -> Result<InvokeRequest, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        ApiError::bad_request(format!("request body is not valid JSON: {error}"))
    })?;
    let Value::Object(mut fields) = value else {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    };
    let tool_name = match fields.remove("tool_name") {
        Some(Value::String(name)) => match runner_proto::fields::TOOL_NAME.check(&name) {
            Ok(()) => name,
            Err(why) => return Err(ApiError::bad_request(format!("field \"tool_name\" {why}"))),
        },
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
    let call_id = match fields.remove("call_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if valid_call_id(&id) => Some(id),
        Some(value) => {
            return Err(ApiError::bad_request(format!(
                "field \"call_id\" must be 1 to 128 of A-Z a-z 0-9 . _ : - (got {value})"
            )))
        }
    };
    let on_approval = match fields.remove("on_approval") {
        None | Some(Value::Null) => OnApproval::Refuse,
        Some(Value::String(text)) if text == "refuse" => OnApproval::Refuse,
        Some(Value::String(text)) if text == "wait" => OnApproval::Wait,
        Some(value) => {
            return Err(ApiError::bad_request(format!(
                "field \"on_approval\" must be \"refuse\" or \"wait\" (got {value})"
            )))
        }
    };
    let approval_wait_s = match fields.remove("approval_wait_s") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .filter(|seconds| (1..=MAX_APPROVAL_WAIT_S).contains(seconds))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "field \"approval_wait_s\" must be an integer from 1 to {MAX_APPROVAL_WAIT_S} (got {value})"
                    ))
                })?,
        ),
    };
    if approval_wait_s.is_some() && on_approval != OnApproval::Wait {
        return Err(ApiError::bad_request(
            "field \"approval_wait_s\" needs \"on_approval\": \"wait\"",
        ));
    }
    if let Some(unknown) = fields.keys().next() {
        return Err(ApiError::bad_request(format!(
            "unknown field {unknown:?}; expected \"tool_name\", \"args\", \"timeout_s\", \"call_id\", \"on_approval\", \"approval_wait_s\""
        )));
    }
    Ok(InvokeRequest {
        tool_name,
        args,
        timeout_s: Some(timeout_s),
        call_id,
        on_approval,
        approval_wait_s,
    })
}

/// A caller's idempotency key: short, and safe in logs and subjects.
fn valid_call_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The API error of a policy refusal.
pub(super) fn refusal_error(refusal: Refusal) -> ApiError {
    let code = match refusal {
        Refusal::ToolNotAllowed(_) => "tool_not_allowed",
        Refusal::ApprovalRequired(_) => {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "approval_required",
                format!(
                    "{refusal}; to ask a person for it, send \"on_approval\": \"wait\" \
                     (`runner invoke --wait-approval`)"
                ),
            )
        }
        Refusal::PathNotAllowed(_) | Refusal::NoFilePaths => "path_not_allowed",
        Refusal::MissingPath(_) => return ApiError::bad_request(refusal.to_string()),
    };
    ApiError::new(StatusCode::FORBIDDEN, code, refusal.to_string())
}

pub(super) fn not_connected(environment_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "runner_not_connected",
        format!("no runner is connected to environment {environment_id:?}"),
    )
}

/// Cancels the call on the runner if the handler stops waiting for any
/// reason other than a result (timeout, or the HTTP client went away and
/// axum dropped this future).
pub(super) struct CancelOnDrop {
    router: Arc<JournaledRouter>,
    environment_id: String,
    call_id: String,
    armed: bool,
    /// The client chose the call id (journalled before sending).
    keyed: bool,
}

impl CancelOnDrop {
    /// The call ended: nothing to cancel.
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
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

/// Whether the caller asked for a streamed call, and in which form. The
/// binary form wins when both are acceptable (it loses nothing).
fn stream_format(headers: &HeaderMap) -> Option<StreamFormat> {
    let accepted = || {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|value| value.to_str().ok())
    };
    if accepted().any(|value| value.contains(STREAM_MEDIA_TYPE)) {
        Some(StreamFormat::Binary)
    } else if accepted().any(|value| value.contains("text/event-stream")) {
        Some(StreamFormat::ServerSentEvents)
    } else {
        None
    }
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
    let environment = environment_for(&state, &caller, &id, Intent::Use).await?;
    let destination = Destination {
        presence: state.router.presence(&environment.id).await,
        environment: &environment,
        notice: None,
        session_id: None,
        audit: CallAudit::start(&state, &origin, &caller, &environment.id, None),
    };
    run_call(&state, &caller, destination, &headers, &body, started).await
}

/// Where a checked call goes: an environment the caller may use, and its
/// runner's presence if connected, as the caller looked them up.
pub(super) struct Destination<'a> {
    pub environment: &'a EnvironmentRecord,
    pub presence: Option<Arc<Presence>>,
    /// For the answer (a session's degraded environment): see
    /// [`InvokeResponse::notice`].
    pub notice: Option<Arc<str>>,
    /// The work session the call came through, if any.
    pub session_id: Option<&'a str>,
    /// The call's audit entry, recorded once whatever the outcome.
    pub audit: CallAudit,
}

/// Checks and relays one call.
pub(super) async fn run_call(
    state: &AppState,
    caller: &Member,
    mut destination: Destination<'_>,
    headers: &HeaderMap,
    body: &[u8],
    started: Instant,
) -> Result<Response, ApiError> {
    let mut audit = destination.audit.take();
    let result = check_and_relay(
        state,
        caller,
        destination,
        headers,
        body,
        started,
        &mut audit,
    )
    .await;
    if let Err(error) = &result {
        audit.failed(error);
    }
    result
}

async fn check_and_relay(
    state: &AppState,
    caller: &Member,
    destination: Destination<'_>,
    headers: &HeaderMap,
    body: &[u8],
    started: Instant,
    audit: &mut CallAudit,
) -> Result<Response, ApiError> {
    let Destination {
        environment,
        presence,
        notice,
        session_id,
        audit: _,
    } = destination;
    let request = parse_request(body)?;
    audit.request(&request);
    // Counted under its own name only if the runner offers it (a caller
    // may send any name): see `metrics::tools`.
    let offered = state.metrics.enabled()
        && presence.as_ref().is_some_and(|presence| {
            presence
                .tools
                .iter()
                .any(|tool| tool.name == request.tool_name)
        });
    let mut metrics = state.metrics.call(&request.tool_name, offered, started);
    let workspace = presence
        .as_ref()
        .map(|presence| presence.host.workspace.as_str())
        .filter(|workspace| !workspace.is_empty());
    enforcement::check_approved(
        &environment.policy,
        environment.tier,
        &request.tool_name,
        &request.args,
        workspace,
    )
    .map_err(|refused| metrics.refused(refusal_error(refused)))?;
    let approval = enforcement::approval_rule(&environment.policy, &request.tool_name);
    if approval.is_some() && request.on_approval != OnApproval::Wait {
        return Err(metrics.refused(refusal_error(Refusal::ApprovalRequired(
            request.tool_name.clone(),
        ))));
    }
    let ask = |request, rule| approvals::Ask {
        environment,
        session_id,
        request,
        rule,
    };
    let (presence, approval) = match (presence, approval) {
        (Some(presence), approval) => (presence, approval),
        // Asked while the runner is away: the approval can wait for it.
        (None, Some(rule)) => {
            let asked = approvals::ask(state, caller, ask(request, rule)).await;
            return approval_asked(&mut metrics, audit, asked);
        }
        (None, None) => {
            // A call id the journal knows is answered from there (its
            // result, its failure, or the wait for a runner that may come
            // back with it): a caller repeating a call after losing its
            // connection must not be told "no runner" for a call that ran.
            if journalled(state, &environment.id, request.call_id.as_deref()).await {
                let stream = stream_format(headers);
                let relay = Relay {
                    environment,
                    caller,
                    notice,
                    started,
                    metrics,
                };
                return relay_checked(state, relay, request, stream, audit).await;
            }
            return Err(metrics.refused(not_connected(&environment.id)));
        }
    };
    let Some(tool) = presence
        .tools
        .iter()
        .find(|tool| tool.name == request.tool_name)
    else {
        return Err(metrics.refused(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_tool",
            format!(
                "the runner of environment {:?} does not offer tool {:?}",
                environment.id, request.tool_name
            ),
        )));
    };
    enforcement::schema::validate(&tool.input_schema, &request.args).map_err(|error| {
        metrics.refused(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_arguments",
            format!("{} (tool {:?})", error, request.tool_name),
        ))
    })?;
    let stream = stream_format(headers);
    // Checked against the runner's schema first: nobody is asked to approve
    // a call that cannot run.
    if let Some(rule) = approval {
        let asked = approvals::ask(state, caller, ask(request, rule)).await;
        return approval_asked(&mut metrics, audit, asked);
    }

    let relay = Relay {
        environment,
        caller,
        notice,
        started,
        metrics,
    };
    relay_checked(state, relay, request, stream, audit).await
}

/// A checked call, ready to go: where, for whom, and its counters.
struct Relay<'a> {
    environment: &'a EnvironmentRecord,
    caller: &'a Member,
    notice: Option<Arc<str>>,
    started: Instant,
    metrics: CallMetrics,
}

/// Whether `call_id` (the caller's) is in the journal, for this
/// environment or another (the router answers that one with 409).
async fn journalled(state: &AppState, environment_id: &str, call_id: Option<&str>) -> bool {
    let Some(call_id) = call_id else {
        return false;
    };
    match tokio::time::timeout(JOURNAL_LOOKUP_TIMEOUT, state.store.invocation(call_id)).await {
        Ok(Ok(entry)) => entry.is_some(),
        Ok(Err(error)) => {
            tracing::warn!(%error, %environment_id, %call_id, "could not read the call journal");
            false
        }
        Err(_elapsed) => {
            tracing::warn!(%environment_id, %call_id, "reading the call journal timed out");
            false
        }
    }
}

/// Relays a checked call, streamed or not.
async fn relay_checked(
    state: &AppState,
    relay: Relay<'_>,
    request: InvokeRequest,
    stream: Option<StreamFormat>,
    audit: &mut CallAudit,
) -> Result<Response, ApiError> {
    let Relay {
        environment,
        caller,
        notice,
        started,
        metrics,
    } = relay;
    let timeout_s = request.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    let call_id = request
        .call_id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    audit.call_id(&call_id);
    // Off by default (`--access-log`), and then never built: with the
    // fmt layer a span formats its fields as it opens, a cost the
    // benchmarks show per `ping` (BENCHMARKS.md).
    let span = tracing::info_span!(
        target: ACCESS_LOG,
        "call",
        environment_id = %environment.id,
        %call_id,
        tool = %request.tool_name,
        member = %caller.id,
        timeout_s
    );
    let call = Relayed {
        environment_id: &environment.id,
        call_id: &call_id,
        timeout_s,
        started,
        notice,
        metrics,
    };
    if let Some(format) = stream {
        return stream_call(state, call, request, format, audit.take())
            .instrument(span)
            .await;
    }
    relay_call(state, call, request, audit)
        .instrument(span)
        .await
        .map(IntoResponse::into_response)
}

/// Counts and records a call that asked for an approval: under `approval`
/// (the audit entry becomes the approval's request), as its refusal when
/// it was refused (the caller's `run_call` records that).
fn approval_asked(
    metrics: &mut CallMetrics,
    audit: &mut CallAudit,
    asked: Result<approvals::Asked, ApiError>,
) -> Result<Response, ApiError> {
    match asked {
        Ok(asked) => {
            metrics.finish(Outcome::Approval);
            audit.became(AuditAction::ApprovalRequest, &asked.approval_id);
            Ok(asked.response)
        }
        Err(error) => Err(metrics.refused(error)),
    }
}

/// Sends the call to the runner; the guard cancels it there unless disarmed.
/// A call id the client chose goes through the journal first (idempotency
/// key); one the relay generated is sent at once.
async fn start(
    state: &AppState,
    environment_id: &str,
    call_id: &str,
    request: InvokeRequest,
    timeout_s: u64,
    stream: bool,
) -> Result<(crate::routing::CallHandle, CancelOnDrop), ApiError> {
    let keyed = request.call_id.is_some();
    let call = Call {
        call_id: call_id.to_owned(),
        tool: request.tool_name,
        args: request.args,
        timeout_s,
        epoch: 0,
        stream,
        approval_id: None,
    };
    start_relayed(state, environment_id, call, keyed).await
}

/// Sends a checked call to the environment's runner, through the journal
/// first when `keyed` (its id is an idempotency key).
pub(super) async fn start_relayed(
    state: &AppState,
    environment_id: &str,
    call: Call,
    keyed: bool,
) -> Result<(crate::routing::CallHandle, CancelOnDrop), ApiError> {
    let call_id = call.call_id.clone();
    let stream = call.stream;
    let started = if keyed {
        state.router.start_keyed_call(environment_id, call).await
    } else {
        state.router.start_call(environment_id, call).await
    };
    let handle = started.map_err(|error| match error {
        RouteError::NotConnected(_) => not_connected(environment_id),
        RouteError::Disconnected(_) => disconnected(&call_id),
        RouteError::CallIdTaken(_) => {
            ApiError::new(StatusCode::CONFLICT, "call_id_conflict", error.to_string())
                .with_call_id(&call_id)
        }
    })?;
    let guard = CancelOnDrop {
        router: state.router.clone(),
        environment_id: environment_id.to_owned(),
        call_id,
        armed: true,
        keyed,
    };
    // One info line per call is enough for an access log: "call finished".
    tracing::debug!(stream, "call relayed");
    Ok((handle, guard))
}

/// The caller is told the call id of a call whose end it will not see (504,
/// runner gone): that id must be findable at `GET /invocations/{call_id}`.
/// A client-chosen id is journalled already.
async fn journal_given_up(state: &AppState, guard: &CancelOnDrop, tool: &str) {
    if !guard.keyed {
        state
            .router
            .ensure_findable(&guard.environment_id, &guard.call_id, tool)
            .await;
    }
}

/// A checked call on its way to the runner.
struct Relayed<'a> {
    environment_id: &'a str,
    call_id: &'a str,
    timeout_s: u64,
    started: Instant,
    /// For the answer: see [`InvokeResponse::notice`].
    notice: Option<Arc<str>>,
    metrics: CallMetrics,
}

/// How a call that came back with `result` counts.
fn outcome_of(result: &CallResult) -> Outcome {
    if result.error.is_some() {
        Outcome::Error
    } else {
        Outcome::Ok
    }
}

async fn relay_call(
    state: &AppState,
    call: Relayed<'_>,
    request: InvokeRequest,
    audit: &mut CallAudit,
) -> Result<Json<InvokeResponse>, ApiError> {
    let Relayed {
        environment_id,
        call_id,
        timeout_s,
        started,
        notice,
        mut metrics,
    } = call;
    let tool = request.tool_name.clone();
    let (handle, mut guard) = start(state, environment_id, call_id, request, timeout_s, false)
        .await
        .map_err(|error| metrics.refused(error))?;
    metrics.relayed();
    match tokio::time::timeout(Duration::from_secs(timeout_s), handle.result).await {
        Ok(Ok(result)) => {
            guard.armed = false;
            state.health.record_success(environment_id);
            finished(&result, started);
            if let Some(refused) = runner_refusal(&result, call_id) {
                audit.failed(&refused);
                return Err(metrics.refused(refused));
            }
            metrics.finish(outcome_of(&result));
            audit.completed(&result);
            Ok(Json(InvokeResponse {
                call_id: call_id.to_owned(),
                result: result.result,
                exit_code: result.exit_code,
                error: result.error,
                error_code: result.error_code,
                notice: notice.as_deref().map(str::to_owned),
            }))
        }
        Ok(Err(_closed)) => {
            guard.armed = false;
            metrics.finish(Outcome::Disconnected);
            tracing::warn!(%environment_id, %call_id, "runner disconnected during the call");
            journal_given_up(state, &guard, &tool).await;
            Err(disconnected(call_id))
        }
        Err(_elapsed) => {
            // The guard sends the cancel as it drops.
            metrics.finish(Outcome::Timeout);
            state
                .health
                .record_timeout(environment_id, timeout_s, state.clock.now());
            tracing::warn!(%environment_id, %call_id, timeout_s, "call timed out");
            journal_given_up(state, &guard, &tool).await;
            Err(ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "timeout",
                format!("the call did not finish within {timeout_s} s; the runner was told to cancel it"),
            )
            .with_call_id(call_id))
        }
    }
}

/// The 403 of a call the runner's permission file refused: a refusal like
/// the relay's own, not a tool that failed.
fn runner_refusal(result: &CallResult, call_id: &str) -> Option<ApiError> {
    (result.error_code.as_deref() == Some(DENIED_BY_RUNNER_POLICY)).then(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            DENIED_BY_RUNNER_POLICY,
            result
                .error
                .clone()
                .unwrap_or_else(|| "denied by the runner's permission file".to_owned()),
        )
        .with_call_id(call_id)
    })
}

/// A streamed call's state between events.
struct Streaming {
    output: mpsc::Receiver<OutputChunk>,
    result: oneshot::Receiver<CallResult>,
    guard: CancelOnDrop,
    deadline: tokio::time::Instant,
    state: AppState,
    environment_id: String,
    call_id: String,
    tool: String,
    timeout_s: u64,
    started: Instant,
    notice: Option<Arc<str>>,
    done: bool,
    metrics: CallMetrics,
    audit: CallAudit,
}

/// What a streamed call tells its caller, in order: output, then exactly
/// one result or error; keep-alives while nothing else happens.
enum StreamEvent {
    Output(OutputChunk),
    /// [`StreamTimings::keep_alive`](crate::state::StreamTimings) passed
    /// without another event, so that proxies keep a quiet call's
    /// connection open. Server-Sent Events get axum's comment lines instead.
    KeepAlive,
    Result(InvokeResponse),
    Error(ErrorBody),
}

impl Streaming {
    /// The next event; `None` after the result or error.
    async fn next(&mut self) -> Option<StreamEvent> {
        if self.done {
            return None;
        }
        let event = tokio::select! {
            // Output first: the runner sends every chunk before the result.
            biased;
            Some(output) = self.output.recv() => {
                self.audit.add_bytes(output.data.len());
                StreamEvent::Output(output)
            }
            () = tokio::time::sleep(self.state.streams.keep_alive) => StreamEvent::KeepAlive,
            result = &mut self.result => {
                self.done = true;
                self.guard.armed = false;
                match result {
                    Ok(result) => {
                        self.state.health.record_success(&self.environment_id);
                        finished(&result, self.started);
                        if let Some(refused) = runner_refusal(&result, &self.call_id) {
                            self.audit.failed(&refused);
                            let refused = self.metrics.refused(refused);
                            return Some(error_body(refused.code, &refused.message, &self.call_id));
                        }
                        self.metrics.finish(outcome_of(&result));
                        self.audit.completed(&result);
                        StreamEvent::Result(InvokeResponse {
                            call_id: self.call_id.clone(),
                            result: result.result,
                            exit_code: result.exit_code,
                            error: result.error,
                            error_code: result.error_code,
                            notice: self.notice.as_deref().map(str::to_owned),
                        })
                    }
                    Err(_closed) => {
                        self.metrics.finish(Outcome::Disconnected);
                        tracing::warn!(environment_id = %self.environment_id, call_id = %self.call_id, "runner disconnected during the call");
                        self.audit.ended(AuditDecision::Error, RUNNER_DISCONNECTED);
                        journal_given_up(&self.state, &self.guard, &self.tool).await;
                        error_body(RUNNER_DISCONNECTED, DISCONNECTED_MESSAGE, &self.call_id)
                    }
                }
            }
            () = tokio::time::sleep_until(self.deadline) => {
                // The guard stays armed: dropping the stream cancels the call.
                self.done = true;
                self.metrics.finish(Outcome::Timeout);
                self.state.health.record_timeout(
                    &self.environment_id,
                    self.timeout_s,
                    self.state.clock.now(),
                );
                tracing::warn!(environment_id = %self.environment_id, call_id = %self.call_id, timeout_s = self.timeout_s, "call timed out");
                self.audit.ended(AuditDecision::Timeout, "timeout");
                journal_given_up(&self.state, &self.guard, &self.tool).await;
                let message = format!(
                    "the call did not finish within {} s; the runner was told to cancel it",
                    self.timeout_s
                );
                error_body("timeout", &message, &self.call_id)
            }
        };
        Some(event)
    }
}

/// How the caller asked to receive a streamed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamFormat {
    /// `text/event-stream`: JSON events, output decoded as UTF-8 (lossily).
    ServerSentEvents,
    /// [`STREAM_MEDIA_TYPE`]: binary frames, output byte for byte.
    Binary,
}

/// Relays the call and answers with its output as it is produced. The
/// stream owns the cancel guard: a caller that goes away cancels the call.
async fn stream_call(
    state: &AppState,
    call: Relayed<'_>,
    request: InvokeRequest,
    format: StreamFormat,
    mut audit: CallAudit,
) -> Result<Response, ApiError> {
    let Relayed {
        environment_id,
        call_id,
        timeout_s,
        started,
        notice,
        mut metrics,
    } = call;
    let tool = request.tool_name.clone();
    let (handle, guard) =
        match start(state, environment_id, call_id, request, timeout_s, true).await {
            Ok(started) => started,
            Err(error) => {
                audit.failed(&error);
                return Err(metrics.refused(error));
            }
        };
    metrics.relayed();
    let streaming = Streaming {
        output: handle.output,
        result: handle.result,
        guard,
        deadline: tokio::time::Instant::now() + Duration::from_secs(timeout_s),
        state: state.clone(),
        environment_id: environment_id.to_owned(),
        call_id: call_id.to_owned(),
        tool,
        timeout_s,
        started,
        notice,
        done: false,
        metrics,
        audit,
    };
    Ok(match format {
        StreamFormat::ServerSentEvents => server_sent_events(streaming),
        StreamFormat::Binary => binary_stream(streaming),
    })
}

/// `output` events (`{"stream","data"}`), then one `result` or `error`
/// event. A character split between two chunks is held back until whole.
fn server_sent_events(streaming: Streaming) -> Response {
    let carries = [Vec::new(), Vec::new()];
    let events = futures_util::stream::unfold(
        (streaming, carries),
        |(mut streaming, mut carries)| async move {
            let events = match streaming.next().await? {
                StreamEvent::KeepAlive => Vec::new(),
                StreamEvent::Output(chunk) => {
                    let carry = &mut carries[stream_index(chunk.stream)];
                    carry.extend_from_slice(&chunk.data);
                    let cut = utf8_boundary(carry);
                    let text: Vec<u8> = carry.drain(..cut).collect();
                    output_event(chunk.stream, &text).into_iter().collect()
                }
                StreamEvent::Result(response) => {
                    let mut events = flush_carries(&mut carries);
                    events.push(event("result", &response));
                    events
                }
                StreamEvent::Error(body) => {
                    let mut events = flush_carries(&mut carries);
                    events.push(event("error", &body));
                    events
                }
            };
            Some((events, (streaming, carries)))
        },
    )
    .flat_map(|events| futures_util::stream::iter(events.into_iter().map(Ok::<Event, Infallible>)));
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn stream_index(stream: Stream) -> usize {
    match stream {
        Stream::Stdout => 0,
        Stream::Stderr => 1,
    }
}

fn output_event(stream: Stream, bytes: &[u8]) -> Option<Event> {
    (!bytes.is_empty()).then(|| {
        event(
            "output",
            &json!({"stream": stream, "data": String::from_utf8_lossy(bytes)}),
        )
    })
}

/// What is held back at the end of the output (an incomplete character).
fn flush_carries(carries: &mut [Vec<u8>; 2]) -> Vec<Event> {
    [Stream::Stdout, Stream::Stderr]
        .into_iter()
        .filter_map(|stream| {
            let bytes = std::mem::take(&mut carries[stream_index(stream)]);
            output_event(stream, &bytes)
        })
        .collect()
}

/// [`STREAM_MEDIA_TYPE`] frames: output chunks as the runner sent them
/// (the bytes are not copied: header and data go out as two buffers), then
/// the result or error as JSON.
fn binary_stream(streaming: Streaming) -> Response {
    let frames = futures_util::stream::unfold(streaming, |mut streaming| async move {
        let buffers = match streaming.next().await? {
            StreamEvent::Output(chunk) => {
                let kind = match chunk.stream {
                    Stream::Stdout => stream_frame::STDOUT,
                    Stream::Stderr => stream_frame::STDERR,
                };
                frame_buffers(kind, chunk.data)
            }
            StreamEvent::KeepAlive => frame_buffers(stream_frame::KEEP_ALIVE, Bytes::new()),
            StreamEvent::Result(response) => {
                frame_buffers(stream_frame::RESULT, json_bytes(&response))
            }
            StreamEvent::Error(body) => frame_buffers(stream_frame::ERROR, json_bytes(&body)),
        };
        Some((buffers, streaming))
    })
    .flat_map(|buffers| {
        futures_util::stream::iter(buffers.into_iter().map(Ok::<Bytes, Infallible>))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, STREAM_MEDIA_TYPE)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(frames))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// A frame's header and payload. Chunks are bounded by the runner's frame
/// limit (16 MiB), so the length fits in the header's `u32`.
fn frame_buffers(kind: u8, payload: Bytes) -> [Bytes; 2] {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    [
        Bytes::copy_from_slice(&stream_frame::header(kind, len)),
        payload,
    ]
}

fn json_bytes(value: &impl serde::Serialize) -> Bytes {
    // Our own types with string keys: serialising cannot fail.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

fn event(name: &str, data: &impl serde::Serialize) -> Event {
    Event::default()
        .event(name)
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event(name).data("{}"))
}

fn error_body(code: &str, message: &str, call_id: &str) -> StreamEvent {
    StreamEvent::Error(ErrorBody {
        error: ErrorDetail {
            code: code.to_owned(),
            message: message.to_owned(),
            call_id: Some(call_id.to_owned()),
        },
    })
}

/// The access log's line for a call whose result came back (the span
/// around it names the call).
fn finished(result: &CallResult, started: Instant) {
    tracing::info!(
        target: ACCESS_LOG,
        exit_code = result.exit_code,
        failed = result.error.is_some(),
        ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "call finished"
    );
}

/// The 503 of a call whose runner's session ended before it answered;
/// its journal entry says the same (`failed`, [`RUNNER_DISCONNECTED`]).
fn disconnected(call_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        RUNNER_DISCONNECTED,
        DISCONNECTED_MESSAGE,
    )
    .with_call_id(call_id)
}
