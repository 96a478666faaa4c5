//! Sandboxes for sessions (docs/sandboxes.md): starting one on the least
//! loaded sandbox host when a session asks for `sandbox` (or `auto` finds
//! no runner), destroying it when the session ends, and `GET /sandboxes`.
//!
//! A sandbox is an environment (role [`SANDBOX_ROLE`]) with a single-use
//! registration token; the host starts a runner inside the isolation that
//! connects with it. The relay calls the host's `sandbox_start` and
//! `sandbox_destroy` tools through the router, so a host connected to any
//! relay of a cluster serves a session on any other. Those calls are not
//! audited as tool calls and their arguments (which carry the token) are
//! never journalled or logged.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use runner_proto::api::Tier;
use runner_proto::audit::{AuditAction, AuditActor, AuditDecision};
use runner_proto::sandbox::{
    Deploy, DestroySandbox, Destroyed, SandboxInfo, SandboxList, SandboxState, SandboxToken,
    StartSandbox, Started, DESTROY_TOOL, HOST_ROLE, SANDBOX_ROLE, START_TOOL,
};
use runner_proto::ws::{Call, CallResult};
use serde::Deserialize;

use super::auth::{environment_for, Caller, Intent};
use super::error::{ApiError, ApiJson, ApiQuery};
use crate::access;
use crate::audit::AuditRecord;
use crate::clock::rfc3339;
use crate::environment::{default_policy, EnvironmentRecord, Scope};
use crate::registration;
use crate::routing::CallRouter;
use crate::sandboxes::placement::{self, HostCandidate};
use crate::sandboxes::{
    new_sandbox_id, SandboxRecord, SandboxSettings, CONNECT_TIMEOUT, DESTROY_TIMEOUT_S,
    START_TIMEOUT_S,
};
use crate::sessions::WorkSession;
use crate::state::AppState;
use crate::store::Member;
use runner_proto::sessions::SessionState;

/// Most sandboxes one `GET /sandboxes` lists.
const LIST_LIMIT: u32 = 500;

/// The audit actor of a sandbox started or stopped for `member`.
fn actor(member: &Member) -> AuditActor {
    AuditActor {
        member_id: Some(member.id.clone()),
        name: Some(member.name.clone()),
        kind: Some(member.kind.as_str().to_owned()),
        ..AuditActor::default()
    }
}

/// 503 `no_sandbox_host`.
fn no_host(why: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "no_sandbox_host",
        why.to_owned(),
    )
}

/// The online sandbox hosts, most suitable first. A host's slots in use
/// are the more of what its last heartbeat said and the live sandboxes
/// the store records on it: heartbeats are seconds apart, and every relay
/// of a cluster records the sandboxes it places at once.
async fn hosts_by_preference(state: &AppState) -> Result<Vec<EnvironmentRecord>, ApiError> {
    let mut placed: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for record in state.store.list_sandboxes(true, LIST_LIMIT).await? {
        *placed.entry(record.host_environment_id).or_default() += 1;
    }
    let mut online = Vec::new();
    for environment in state.store.list_environments().await? {
        if environment.env_type != HOST_ROLE {
            continue;
        }
        if let Some(presence) = state.router.presence(&environment.id).await {
            if let Some(mut capacity) = presence.heartbeat.sandbox_capacity {
                let recorded = placed.get(&environment.id).copied().unwrap_or(0);
                capacity.slots_used = capacity.slots_used.max(recorded);
                online.push((environment, capacity));
            }
        }
    }
    let candidates: Vec<HostCandidate<'_>> = online
        .iter()
        .map(|(environment, capacity)| HostCandidate {
            environment_id: &environment.id,
            capacity: *capacity,
        })
        .collect();
    let order: Vec<String> = placement::by_preference(&candidates)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut ordered = Vec::with_capacity(order.len());
    for id in order {
        if let Some(index) = online
            .iter()
            .position(|(environment, _)| environment.id == id)
        {
            ordered.push(online.swap_remove(index).0);
        }
    }
    Ok(ordered)
}

/// Whether any sandbox host is online with room (for `auto` with no
/// runner).
pub async fn any_host(state: &AppState) -> Result<bool, ApiError> {
    Ok(!hosts_by_preference(state).await?.is_empty())
}

/// Calls a tool of a sandbox host and waits for its result. Errors are the
/// host's words, for the caller's message.
async fn call_host(
    state: &AppState,
    host_id: &str,
    tool: &str,
    args: serde_json::Value,
    timeout_s: u64,
) -> Result<CallResult, String> {
    let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());
    let call = Call {
        call_id: call_id.clone(),
        tool: tool.to_owned(),
        args,
        timeout_s,
        epoch: 0,
        stream: false,
        approval_id: None,
    };
    let handle = state
        .router
        .start_call(host_id, call)
        .await
        .map_err(|error| error.to_string())?;
    match tokio::time::timeout(Duration::from_secs(timeout_s), handle.result).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(_)) => Err("the sandbox host disconnected".to_owned()),
        Err(_) => {
            state.router.cancel(host_id, &call_id).await;
            Err(format!(
                "the sandbox host did not answer within {timeout_s} s"
            ))
        }
    }
}

/// The output of a host's tool as `T`: the call's JSON result.
fn host_output<T: serde::de::DeserializeOwned>(result: &CallResult) -> Result<T, String> {
    if let Some(error) = &result.error {
        return Err(error.clone());
    }
    T::deserialize(&result.result).map_err(|error| format!("unreadable answer: {error}"))
}

/// What a sandbox is started for.
#[derive(Clone, Copy)]
pub enum Purpose<'a> {
    /// A session's own sandbox: a new environment with a single-use token.
    Session(&'a WorkSession),
    /// The managed runner of an existing environment (Deploy): a new token
    /// the user never sees; the previous one keeps working for
    /// `grace_hours`.
    Deployment {
        environment: &'a EnvironmentRecord,
        grace_hours: i64,
    },
}

impl Purpose<'_> {
    fn session_id(&self) -> &str {
        match self {
            Self::Session(session) => &session.id,
            Self::Deployment { .. } => "",
        }
    }
}

/// Starts a sandbox on the least loaded host with room and waits until its
/// runner is connected; returns the environment it serves. On failure
/// nothing of it is left but its record.
pub async fn provision(
    state: &AppState,
    caller: &Member,
    purpose: Purpose<'_>,
    settings: SandboxSettings,
) -> Result<Arc<EnvironmentRecord>, ApiError> {
    let started = std::time::Instant::now();
    let result = provision_on_a_host(state, caller, purpose, settings).await;
    let outcome = match &result {
        Ok(_) => "ready",
        Err(error) => match error.code {
            "sandbox_setup_failed" => "setup_failed",
            "sandbox_not_connected" => "not_connected",
            _ => "no_host",
        },
    };
    state.metrics.sandbox_start(outcome, started.elapsed());
    result
}

async fn provision_on_a_host(
    state: &AppState,
    caller: &Member,
    purpose: Purpose<'_>,
    settings: SandboxSettings,
) -> Result<Arc<EnvironmentRecord>, ApiError> {
    let hosts = hosts_by_preference(state).await?;
    if hosts.is_empty() {
        let error = no_host(
            "no sandbox host with room is online (start one with `runner sandbox-host`; see \
             docs/sandboxes.md)",
        );
        record_start_failure(state, caller, purpose, None, "no_sandbox_host");
        return Err(error);
    }
    let mut last_refusal = String::new();
    for host in &hosts {
        match start_on(state, caller, purpose, &settings, host).await {
            Ok(environment) => return Ok(environment),
            // A full host (it filled up since its last heartbeat) or one
            // that went away: the next one may take it.
            Err(Attempt::Refused(why)) => last_refusal = why,
            Err(Attempt::Failed(error)) => return Err(error),
        }
    }
    Err(no_host(&format!(
        "no sandbox host could start a sandbox: {last_refusal}"
    )))
}

/// How one host's attempt went wrong.
enum Attempt {
    /// The host did not take it: try another.
    Refused(String),
    /// The sandbox failed (its setup, its runner): the caller is told.
    Failed(ApiError),
}

/// The environment a new session sandbox serves.
fn sandbox_environment(
    id: &str,
    session: &WorkSession,
    now: time::OffsetDateTime,
) -> EnvironmentRecord {
    EnvironmentRecord {
        id: id.to_owned(),
        name: format!("sandbox-{}", id.get(4..16).unwrap_or(id)),
        description: format!("sandbox of session {}", session.id),
        env_type: SANDBOX_ROLE.to_owned(),
        tags: Vec::new(),
        scope: Scope::Shared,
        tier: Tier::Development,
        install_browser_tools: false,
        policy: default_policy(Tier::Development),
        created_at: now,
        last_seen: None,
        runner: None,
    }
}

async fn start_on(
    state: &AppState,
    caller: &Member,
    purpose: Purpose<'_>,
    settings: &SandboxSettings,
    host: &EnvironmentRecord,
) -> Result<Arc<EnvironmentRecord>, Attempt> {
    let now = state.clock.now();
    let id = new_sandbox_id();
    let (environment, grace_hours) = match purpose {
        Purpose::Session(session) => (sandbox_environment(&id, session, now), 0),
        Purpose::Deployment {
            environment,
            grace_hours,
        } => (environment.clone(), grace_hours),
    };
    let mut record = SandboxRecord {
        id: id.clone(),
        session_id: purpose.session_id().to_owned(),
        deployment_of: matches!(purpose, Purpose::Deployment { .. })
            .then(|| environment.id.clone()),
        host_environment_id: host.id.clone(),
        host_name: host.name.clone(),
        template_id: settings.template_id.clone(),
        state: SandboxState::Provisioning,
        reason: None,
        setup: None,
        created_by: caller.id.clone(),
        created_at: now,
        ready_at: None,
        ended_at: None,
    };
    // A session's sandbox has an environment of its own, gone with it.
    let own_environment = matches!(purpose, Purpose::Session(_));
    let stored = async {
        if own_environment {
            state.store.insert_environment(&environment).await?;
        }
        state.store.insert_sandbox(&record).await?;
        registration::generate(state.store.as_ref(), &environment.id, grace_hours, now).await
    }
    .await;
    let (secret, _) = match stored {
        Ok(stored) => stored,
        Err(error) => {
            if own_environment {
                forget_environment(state, &environment.id).await;
            }
            return Err(Attempt::Failed(error.into()));
        }
    };
    let token_hash = secret.hash();
    let start = StartSandbox {
        sandbox_id: id.clone(),
        session_id: purpose.session_id().to_owned(),
        relay_url: String::new(),
        token: SandboxToken(secret.expose().to_owned()),
        network: settings.network,
        allowed_domains: settings.allowed_domains.clone(),
        env: settings.env.clone(),
        setup_script: settings.setup_script.clone(),
        idle_timeout_s: settings.idle_timeout_s,
        max_lifetime_s: settings.max_lifetime_s,
        limits: Default::default(),
    };
    drop(secret);
    let args = serde_json::to_value(&start);
    drop(start);
    let cleanup = |record: SandboxRecord| async move {
        if own_environment {
            forget_environment(state, &record.id).await;
        }
        record
    };
    let args = match args {
        Ok(args) => args,
        Err(error) => {
            tracing::error!(%error, "could not encode a sandbox start");
            let mut record = cleanup(record).await;
            finish(
                state,
                &mut record,
                SandboxState::Failed,
                Some("internal error".into()),
            )
            .await;
            return Err(Attempt::Failed(ApiError::internal()));
        }
    };
    tracing::info!(sandbox_id = %id, session_id = %record.session_id, environment_id = %environment.id, host = %host.name, "starting a sandbox");
    let answer = call_host(state, &host.id, START_TOOL, args, START_TIMEOUT_S)
        .await
        .and_then(|result| host_output::<Started>(&result));
    let started = match answer {
        Ok(started) => started,
        Err(why) => {
            let mut record = cleanup(record).await;
            finish(state, &mut record, SandboxState::Failed, Some(why.clone())).await;
            return Err(Attempt::Refused(format!("host {:?}: {why}", host.name)));
        }
    };
    record.setup = started.setup.clone();
    if started.state != SandboxState::Ready {
        let reason = started
            .reason
            .clone()
            .unwrap_or_else(|| "the sandbox host gave no reason".to_owned());
        let mut record = cleanup(record).await;
        finish(
            state,
            &mut record,
            SandboxState::Failed,
            Some(reason.clone()),
        )
        .await;
        let Some(setup) = &started.setup else {
            return Err(Attempt::Refused(format!("host {:?}: {reason}", host.name)));
        };
        record_start_failure(state, caller, purpose, Some(host), "sandbox_setup_failed");
        let exit = setup
            .exit_code
            .map_or_else(|| "was killed".to_owned(), |code| format!("exited {code}"));
        return Err(Attempt::Failed(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "sandbox_setup_failed",
            format!(
                "the sandbox's setup script {exit}: {reason}; the end of its log:\n{}",
                setup.log_tail
            ),
        )));
    }
    // The host answered once the runner was started; it connects now (a
    // deployed environment's manual runner may be connected already: the
    // new token tells the managed one apart).
    let deadline = tokio::time::Instant::now() + CONNECT_TIMEOUT;
    loop {
        let connected = state
            .router
            .presence(&environment.id)
            .await
            .is_some_and(|presence| own_environment || presence.token_hash == token_hash);
        if connected {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            destroy_on_host(state, &record).await;
            let why = format!(
                "its runner did not connect within {} s",
                CONNECT_TIMEOUT.as_secs()
            );
            let mut record = cleanup(record).await;
            finish(state, &mut record, SandboxState::Failed, Some(why.clone())).await;
            record_start_failure(state, caller, purpose, Some(host), "sandbox_not_connected");
            return Err(Attempt::Failed(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "sandbox_not_connected",
                format!("the sandbox on host {:?} started but {why}", host.name),
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    record.state = SandboxState::Ready;
    record.ready_at = Some(state.clock.now());
    if let Err(error) = state.store.update_sandbox(&record).await {
        tracing::warn!(%error, sandbox_id = %id, "could not record the sandbox as ready");
    }
    tracing::info!(sandbox_id = %id, host = %host.name, elapsed_ms = started.elapsed_ms, "sandbox ready");
    let mut entry = AuditRecord::new(state.clock.now(), actor(caller), AuditAction::SandboxStart)
        .environment(&environment.id)
        .target(&host.name);
    if let Purpose::Session(session) = purpose {
        entry = entry.session(&session.id);
    }
    state.audit.record(entry);
    Ok(Arc::new(environment))
}

fn record_start_failure(
    state: &AppState,
    caller: &Member,
    purpose: Purpose<'_>,
    host: Option<&EnvironmentRecord>,
    code: &str,
) {
    let mut entry = AuditRecord::new(state.clock.now(), actor(caller), AuditAction::SandboxStart)
        .decided(AuditDecision::Error, code);
    match purpose {
        Purpose::Session(session) => entry = entry.session(&session.id),
        Purpose::Deployment { environment, .. } => entry = entry.environment(&environment.id),
    }
    if let Some(host) = host {
        entry = entry.target(&host.name);
    }
    state.audit.record(entry);
}

/// Records a sandbox's end.
async fn finish(
    state: &AppState,
    record: &mut SandboxRecord,
    end: SandboxState,
    reason: Option<String>,
) {
    record.state = end;
    record.reason = reason;
    record.ended_at = Some(state.clock.now());
    if let Err(error) = state.store.update_sandbox(record).await {
        tracing::warn!(%error, sandbox_id = %record.id, "could not record the sandbox's end");
    }
}

/// Deletes a sandbox's environment (and its token), disconnecting its
/// runner.
async fn forget_environment(state: &AppState, id: &str) {
    if let Err(error) = state.store.delete_environment(id).await {
        tracing::warn!(%error, sandbox_id = %id, "could not delete the sandbox's environment");
    }
    state.reads.forget_environment(id);
    state
        .router
        .disconnect(id, runner_proto::close::DELETED, "sandbox destroyed")
        .await;
    state.health.forget(id);
    state.seen.forget(id);
}

/// Asks the sandbox's host to destroy it; a host that is gone took it with
/// it.
async fn destroy_on_host(state: &AppState, record: &SandboxRecord) {
    let args = match serde_json::to_value(DestroySandbox {
        sandbox_id: record.id.clone(),
    }) {
        Ok(args) => args,
        Err(_) => return,
    };
    match call_host(
        state,
        &record.host_environment_id,
        DESTROY_TOOL,
        args,
        DESTROY_TIMEOUT_S,
    )
    .await
    .and_then(|result| host_output::<Destroyed>(&result))
    {
        Ok(destroyed) => {
            tracing::info!(sandbox_id = %record.id, existed = destroyed.existed, "sandbox destroyed")
        }
        Err(why) => {
            tracing::warn!(sandbox_id = %record.id, host = %record.host_name, %why, "the sandbox host did not destroy the sandbox (it destroys idle ones itself)")
        }
    }
}

/// Ends a live sandbox: its host destroys it (when `host_online`; a host
/// that is gone took it with it), a session's sandbox loses its
/// environment (a deployment's environment is the user's and stays), the
/// record says how and why, and the audit log records the stop.
async fn end(
    state: &AppState,
    record: &mut SandboxRecord,
    ended: SandboxState,
    reason: String,
    code: &str,
    by: AuditActor,
    host_online: bool,
) {
    if host_online {
        destroy_on_host(state, record).await;
    }
    if record.deployment_of.is_none() {
        forget_environment(state, &record.id).await;
    }
    finish(state, record, ended, Some(reason)).await;
    let mut entry = AuditRecord::new(state.clock.now(), by, AuditAction::SandboxStop)
        .environment(record.deployment_of.as_deref().unwrap_or(&record.id))
        .target(&record.host_name)
        .decided(AuditDecision::Allowed, code);
    if !record.session_id.is_empty() {
        entry = entry.session(&record.session_id);
    }
    state.audit.record(entry);
}

/// The audit actor of a stop nobody asked for: the sandbox's creator's.
fn on_behalf_of_creator(record: &SandboxRecord) -> AuditActor {
    AuditActor {
        member_id: Some(record.created_by.clone()),
        ..AuditActor::default()
    }
}

/// Destroys a sandbox nobody will use (it lost a race for its session).
pub async fn discard(state: &AppState, caller: &Member, sandbox_id: &str) {
    let Ok(Some(mut record)) = state.store.sandbox(sandbox_id).await else {
        return;
    };
    let reason = "another first call of its session got a sandbox first".to_owned();
    end(
        state,
        &mut record,
        SandboxState::Stopped,
        reason,
        "unused",
        actor(caller),
        true,
    )
    .await;
}

/// Destroys the sandboxes of a session that ended.
pub async fn session_ended(state: &AppState, caller: &Member, session_id: &str) {
    let sandboxes = match state.store.session_sandboxes(session_id).await {
        Ok(sandboxes) => sandboxes,
        Err(error) => {
            tracing::warn!(%error, %session_id, "could not read the session's sandboxes");
            return;
        }
    };
    for mut record in sandboxes {
        if record.state.is_final() {
            continue;
        }
        let reason = "its session ended".to_owned();
        let by = actor(caller);
        end(
            state,
            &mut record,
            SandboxState::Stopped,
            reason,
            "session_ended",
            by,
            true,
        )
        .await;
    }
}

/// Brings a live sandbox's record up to date with what is true now, and
/// says why it is gone when it is: its session ended or expired (it is
/// destroyed), its host went away (it went with it: failed), or its runner
/// left while its host stayed (it stopped on the host: idle timeout,
/// maximum lifetime). `None`: it still serves, or is still starting.
pub async fn reconcile(state: &AppState, record: &mut SandboxRecord) -> Option<String> {
    if record.state.is_final() {
        return Some(
            record
                .reason
                .clone()
                .unwrap_or_else(|| format!("it is {}", record.state.as_str())),
        );
    }
    if record.deployment_of.is_some() {
        return reconcile_deployment(state, record).await;
    }
    let now = state.clock.now();
    let session_open = match state.store.work_session(&record.session_id).await {
        Ok(Some(mut session)) => {
            state.sessions.apply(&mut session);
            let open = session.state(now);
            (open != SessionState::Open).then(|| format!("its session is {}", open.as_str()))
        }
        Ok(None) => Some("its session was deleted".to_owned()),
        Err(_) => None,
    };
    if let Some(why) = session_open {
        let by = on_behalf_of_creator(record);
        end(
            state,
            record,
            SandboxState::Stopped,
            why.clone(),
            "session_closed",
            by,
            true,
        )
        .await;
        return Some(why);
    }
    let starting = matches!(
        record.state,
        SandboxState::Provisioning | SandboxState::SettingUp
    );
    if starting {
        let abandoned = now - record.created_at
            > time::Duration::seconds(i64::try_from(START_TIMEOUT_S).unwrap_or(i64::MAX) + 60);
        if !abandoned {
            return None;
        }
        let why = "its start was abandoned (the relay starting it went away)".to_owned();
        let by = on_behalf_of_creator(record);
        end(
            state,
            record,
            SandboxState::Failed,
            why.clone(),
            "abandoned",
            by,
            true,
        )
        .await;
        return Some(why);
    }
    if state.router.presence(&record.id).await.is_some() {
        return None;
    }
    let host_online = state
        .router
        .presence(&record.host_environment_id)
        .await
        .is_some();
    let (ended, why, code) = if host_online {
        (
            SandboxState::Stopped,
            "it stopped on its host (idle timeout or maximum lifetime), or its runner exited"
                .to_owned(),
            "stopped",
        )
    } else {
        (
            SandboxState::Failed,
            format!(
                "its sandbox host {:?} went away, and its sandboxes with it",
                record.host_name
            ),
            "host_lost",
        )
    };
    let by = on_behalf_of_creator(record);
    end(state, record, ended, why.clone(), code, by, host_online).await;
    Some(why)
}

/// A deployed runner reconnects like any runner (relay restarts, network
/// blips): only the loss of its host ends it.
async fn reconcile_deployment(state: &AppState, record: &mut SandboxRecord) -> Option<String> {
    if matches!(
        record.state,
        SandboxState::Provisioning | SandboxState::SettingUp
    ) || state
        .router
        .presence(&record.host_environment_id)
        .await
        .is_some()
    {
        return None;
    }
    let why = format!(
        "its sandbox host {:?} went away, and the managed runner with it",
        record.host_name
    );
    let by = on_behalf_of_creator(record);
    end(
        state,
        record,
        SandboxState::Failed,
        why.clone(),
        "host_lost",
        by,
        false,
    )
    .await;
    Some(why)
}

/// How often every relay checks the live sandboxes' records.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(10);

/// Reconciles every live sandbox, every [`SWEEP_INTERVAL`], until
/// `shutdown`: sandboxes of sessions nobody ends are destroyed when the
/// session expires, and the records of sandboxes that stopped on their own
/// say so. Relays sharing a database may both do it: every step is
/// idempotent.
pub fn sweep_periodically(
    state: AppState,
    shutdown: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The first sweep waits an interval: a relay that just started has
        // its hosts and sandboxes still reconnecting.
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + SWEEP_INTERVAL, SWEEP_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => sweep(&state).await,
            }
        }
    })
}

async fn sweep(state: &AppState) {
    let live = match state.store.list_sandboxes(true, LIST_LIMIT).await {
        Ok(live) => live,
        Err(error) => {
            tracing::warn!(%error, "could not list the live sandboxes");
            return;
        }
    };
    let mut still_live = live.len();
    for mut record in live {
        if let Some(why) = reconcile(state, &mut record).await {
            still_live -= 1;
            tracing::info!(sandbox_id = %record.id, %why, "sandbox ended");
        }
    }
    state.metrics.set_sandboxes_live(still_live);
}

/// A sandbox as the API shows it.
pub fn view(record: &SandboxRecord) -> SandboxInfo {
    SandboxInfo {
        id: record.id.clone(),
        session_id: record.session_id.clone(),
        host_id: record.host_environment_id.clone(),
        host_name: record.host_name.clone(),
        deployment_of: record.deployment_of.clone(),
        template_id: record.template_id.clone(),
        state: record.state,
        reason: record.reason.clone(),
        setup: record.setup.clone(),
        created_at: rfc3339(record.created_at),
        ready_at: record.ready_at.map(rfc3339),
        ended_at: record.ended_at.map(rfc3339),
    }
}

/// `GET /sandboxes` filters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only sandboxes not ended.
    #[serde(default)]
    pub live: bool,
}

/// `GET /sandboxes`, with a JSON error for a query that does not fit.
pub async fn list_api(
    state: State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SandboxList>, ApiError> {
    list(state, caller, Query(query)).await
}

/// `GET /sandboxes`: organisation admins see every sandbox; a member sees
/// those of sessions they created.
pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Query(query): Query<ListQuery>,
) -> Result<Json<SandboxList>, ApiError> {
    let sandboxes = state
        .store
        .list_sandboxes(query.live, LIST_LIMIT)
        .await?
        .iter()
        .filter(|record| caller.is_admin || record.created_by == caller.id)
        .map(view)
        .collect();
    Ok(Json(SandboxList { sandboxes }))
}

/// `GET /sandboxes/{id}`.
pub async fn get(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<SandboxInfo>, ApiError> {
    state
        .store
        .sandbox(&id)
        .await?
        .filter(|record| caller.is_admin || record.created_by == caller.id)
        .map(|record| Json(view(&record)))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "sandbox_not_found",
                format!("sandbox {id:?} not found"),
            )
        })
}

fn deployment_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "deployment_not_found",
        format!("environment {id:?} was never deployed"),
    )
}

/// The live deployment of an environment, if any.
async fn live_deployment(
    state: &AppState,
    environment_id: &str,
) -> Result<Option<SandboxRecord>, ApiError> {
    Ok(state
        .store
        .deployments(environment_id)
        .await?
        .into_iter()
        .find(|record| !record.state.is_final()))
}

/// `POST /execution-environments/{id}/deploy`: starts a managed runner for
/// the environment on the least loaded sandbox host, with a new token
/// nobody sees (the previous one keeps working for the grace period), and
/// answers once it is connected (or failed).
pub async fn deploy(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<Deploy>,
) -> Result<Json<SandboxInfo>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Manage).await?;
    if access::is_machinery(&environment) {
        return Err(ApiError::bad_request(
            "sandbox hosts and sandboxes are not deployed: deploy an environment of your own",
        ));
    }
    let grace_hours = request
        .grace_hours
        .unwrap_or(registration::DEFAULT_GRACE_HOURS);
    if !(0..=registration::MAX_GRACE_HOURS).contains(&grace_hours) {
        return Err(ApiError::bad_request(format!(
            "grace_hours must be 0 to {}",
            registration::MAX_GRACE_HOURS
        )));
    }
    if let Some(live) = live_deployment(&state, &environment.id).await? {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_deployed",
            format!(
                "environment {:?} is deployed already (sandbox {} on host {:?}); undeploy it first",
                environment.name, live.id, live.host_name
            ),
        ));
    }
    let settings = SandboxSettings {
        network: runner_proto::sandbox::Network::AllowAll,
        idle_timeout_s: 0,
        max_lifetime_s: 0,
        ..SandboxSettings::default()
    };
    provision(
        &state,
        &caller,
        Purpose::Deployment {
            environment: &environment,
            grace_hours,
        },
        settings,
    )
    .await?;
    let record = state
        .store
        .deployments(&environment.id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| deployment_not_found(&id))?;
    tracing::info!(environment_id = %environment.id, sandbox_id = %record.id, host = %record.host_name, "environment deployed");
    Ok(Json(view(&record)))
}

/// `GET /execution-environments/{id}/deployment`: its newest deployment.
pub async fn deployment(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<SandboxInfo>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Read).await?;
    let mut record = state
        .store
        .deployments(&environment.id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| deployment_not_found(&id))?;
    reconcile(&state, &mut record).await;
    Ok(Json(view(&record)))
}

/// `POST /execution-environments/{id}/undeploy`: destroys the managed
/// runner (its host stops it and removes everything of it).
pub async fn undeploy(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<SandboxInfo>, ApiError> {
    let environment = environment_for(&state, &caller, &id, Intent::Manage).await?;
    let mut record = live_deployment(&state, &environment.id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::CONFLICT,
                "not_deployed",
                format!("environment {:?} is not deployed", environment.name),
            )
        })?;
    undeploy_record(&state, &caller, &mut record).await;
    Ok(Json(view(&record)))
}

async fn undeploy_record(state: &AppState, caller: &Member, record: &mut SandboxRecord) {
    let reason = "undeployed".to_owned();
    end(
        state,
        record,
        SandboxState::Stopped,
        reason,
        "undeployed",
        actor(caller),
        true,
    )
    .await;
}

/// Undeploys an environment that is being deleted.
pub async fn environment_deleted(state: &AppState, caller: &Member, environment_id: &str) {
    if let Ok(Some(mut record)) = live_deployment(state, environment_id).await {
        undeploy_record(state, caller, &mut record).await;
    }
}
