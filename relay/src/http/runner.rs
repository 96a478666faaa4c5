//! The runner's endpoints: `POST /runner/register` (check a token, as
//! `runner register`), `GET /runner/register` (the same check recording
//! nothing, as `runner doctor`) and
//! `GET /runner/connect` (the WebSocket, token checked before upgrading).
//!
//! Connects go through admission control ([`crate::admission`]): at most
//! `serve --max-handshakes` between their request and their `welcome`
//! (at most three quarters of them from one source address, a few for one
//! environment), others wait briefly for a slot or are answered 503 with
//! `Retry-After`, which the runner takes as "retry with backoff". In a
//! reconnect storm this keeps the relay from starting work the runners' own
//! timeouts would throw away, and one token holder's silent upgrades from
//! delaying everyone else's.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use runner_proto::api::{ConnectedRunner, RegisterResponse};
use runner_proto::ws::EnvironmentInfo;

use super::auth::bearer;
use super::error::ApiError;
use super::websocket::Upgrade;
use crate::admission::Refused;
use crate::audit::AuditRecord;
use crate::clock::rfc3339;
use crate::metrics::labels::AuthFailure;
use crate::peer::Peer;
use crate::ratelimit;
use crate::registration::{self, TokenError};
use crate::routing::CallRouter;
use crate::runner_connection::{self, ConnectionContext};
use crate::state::AppState;
use runner_proto::audit::{AuditAction, AuditDecision};

/// Capacity of a socket's read buffer, and its largest read. Small on
/// purpose: a relay holds thousands of mostly idle runner sockets. While
/// large frames arrive the fast path reads ahead in larger pieces instead
/// (`websocket::read_ahead`).
const READ_BUFFER_BYTES: usize = 4 * 1024;
/// Bytes collected before a write goes to the socket; small for the same
/// reason (frames are flushed one by one anyway).
const WRITE_BUFFER_BYTES: usize = 4 * 1024;
/// Most bytes a socket may hold unwritten (a runner that stops reading):
/// one largest frame plus a little, then writes fail and the session ends,
/// instead of the relay buffering without bound.
const MAX_WRITE_BUFFER_BYTES: usize = runner_proto::MAX_FRAME_BYTES + 64 * 1024;
/// `Retry-After` of a connect turned away because too many handshakes are
/// in progress; the runner's own jittered backoff spreads the retries.
const BUSY_RETRY_AFTER_S: u64 = 1;

fn token_error(error: TokenError) -> ApiError {
    match error {
        TokenError::Store(store) => store.into(),
        TokenError::Expired { .. } | TokenError::Replaced { .. } => {
            ApiError::new(StatusCode::UNAUTHORIZED, "token_expired", error.to_string())
        }
        TokenError::Missing | TokenError::Invalid | TokenError::EnvironmentGone => {
            ApiError::unauthorized(error.to_string())
        }
    }
}

/// Why a token is presented.
#[derive(Clone, Copy)]
enum Purpose {
    /// To register or connect: its use is recorded.
    Use,
    /// Only to ask whether it would be accepted (`runner doctor`): nothing
    /// is recorded, so checking does not count as the runner's activity.
    Check,
}

/// Checks a presented token under the failed-attempt limits. A valid token
/// always gets in, whatever others at its address did (behind NAT or a
/// load balancer every host shares one address, and guessing a 256-bit
/// token is hopeless anyway). A failed attempt from an address over its
/// limit is answered 429 and logged at debug only, so a guesser costs one
/// token lookup and no log line; every failure is counted.
async fn authenticate_limited(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
    purpose: Purpose,
) -> Result<
    (
        crate::store::TokenRecord,
        crate::environment::EnvironmentRecord,
    ),
    ApiError,
> {
    let now = state.clock.now();
    let address_key = peer.map(|addr| format!("ip:{}", addr.ip()));
    let checked = match purpose {
        Purpose::Use => {
            registration::authenticate(state.store.as_ref(), bearer(headers), now).await
        }
        Purpose::Check => registration::check(state.store.as_ref(), bearer(headers), now).await,
    };
    match checked {
        Ok(found) => Ok(found),
        Err(TokenError::Store(error)) => Err(error.into()),
        Err(error) => {
            state.metrics.auth_failure(match &error {
                TokenError::Expired { .. } | TokenError::Replaced { .. } => {
                    AuthFailure::ExpiredRunnerToken
                }
                _ => AuthFailure::InvalidRunnerToken,
            });
            if let Some(key) = &address_key {
                let limited = state.failures.check(key, ratelimit::PER_ADDRESS, now);
                state.failures.record_failure(key, now);
                if let Err(retry_after) = limited {
                    tracing::debug!(peer = peer.map(tracing::field::display), reason = %error, "registration token refused (address rate limited)");
                    return Err(too_many(retry_after));
                }
            }
            let environment = match &error {
                TokenError::Expired { environment_id }
                | TokenError::Replaced { environment_id } => Some(environment_id.clone()),
                _ => None,
            };
            tracing::warn!(
                peer = peer.map(tracing::field::display),
                environment_id = environment.as_deref().map(tracing::field::display),
                reason = %error,
                "registration token refused"
            );
            runner_auth_failed(state, headers, peer, environment.as_deref(), &error);
            if let Some(environment_id) = &environment {
                let key = format!("env:{environment_id}");
                state.failures.record_failure(&key, now);
                if let Err(retry_after) =
                    state.failures.check(&key, ratelimit::PER_ENVIRONMENT, now)
                {
                    // Only failures are refused here: the environment's own
                    // runner, with a valid token, still gets in.
                    return Err(too_many(retry_after));
                }
            }
            Err(token_error(error))
        }
    }
}

/// Audits a refused registration token (not those refused for the
/// address's rate limit: a guesser fills no audit log).
fn runner_auth_failed(
    state: &AppState,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
    environment_id: Option<&str>,
    error: &TokenError,
) {
    if !state.audit.enabled() {
        return;
    }
    let code = match error {
        TokenError::Missing => "missing_token",
        TokenError::Invalid => "invalid_token",
        TokenError::EnvironmentGone => "environment_gone",
        TokenError::Expired { .. } => "token_expired",
        TokenError::Replaced { .. } => "token_replaced",
        TokenError::Store(_) => "store_error",
    };
    let actor = super::origin::Origin::unauthenticated(headers, peer).anonymous();
    let mut record = AuditRecord::new(state.clock.now(), actor, AuditAction::RunnerAuthFailed)
        .decided(AuditDecision::Denied, code);
    record.environment_id = environment_id.map(str::to_owned);
    state.audit.record(record);
}

/// A connect turned away by admission control: 503, retry shortly.
fn busy(peer: Option<std::net::SocketAddr>, refused: Refused) -> Response {
    tracing::debug!(
        peer = peer.map(tracing::field::display),
        refused = %refused.as_str(),
        "too many runner handshakes in progress; asking to retry"
    );
    let message = match refused {
        Refused::EnvironmentBusy => {
            "too many runners of this environment are connecting at once; retry shortly"
        }
        Refused::QueueFull | Refused::Waited => {
            "too many runners are connecting at once; retry shortly"
        }
    };
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "relay_busy", message)
        .with_retry_after(BUSY_RETRY_AFTER_S)
        .into_response()
}

fn too_many(retry_after: u64) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_failed_attempts",
        format!("too many failed token attempts; retry in {retry_after} s"),
    )
    .with_retry_after(retry_after)
}

pub async fn register(
    State(state): State<AppState>,
    Peer(peer): Peer,
    headers: HeaderMap,
) -> Result<Json<RegisterResponse>, ApiError> {
    let (token, environment) = authenticate_limited(&state, &headers, peer, Purpose::Use).await?;
    tracing::info!(environment_id = %environment.id, token = %token.hint, "runner registered");
    Ok(Json(register_answer(&state, environment).await))
}

/// `GET /runner/register`: the answer `POST` gives, without registering:
/// the token's use is not recorded and nothing is logged at info. For
/// `runner doctor`, which must change nothing.
pub async fn check(
    State(state): State<AppState>,
    Peer(peer): Peer,
    headers: HeaderMap,
) -> Result<Json<RegisterResponse>, ApiError> {
    let (token, environment) = authenticate_limited(&state, &headers, peer, Purpose::Check).await?;
    tracing::debug!(environment_id = %environment.id, token = %token.hint, "registration token checked");
    Ok(Json(register_answer(&state, environment).await))
}

async fn register_answer(
    state: &AppState,
    environment: crate::environment::EnvironmentRecord,
) -> RegisterResponse {
    let connected_runner = state
        .router
        .presence(&environment.id)
        .await
        .map(|presence| ConnectedRunner {
            hostname: presence.host.hostname.clone(),
            connected_since: rfc3339(presence.connected_at),
        });
    RegisterResponse {
        environment: EnvironmentInfo {
            id: environment.id,
            name: environment.name,
            tags: environment.tags,
        },
        connected_runner,
    }
}

pub async fn connect(
    State(state): State<AppState>,
    Peer(peer): Peer,
    headers: HeaderMap,
    upgrade: Result<Upgrade, ApiError>,
) -> Response {
    // Before any work (the token check reads the store): held until the
    // runner is welcomed.
    let mut admission = match state.admission.admit(peer.map(|peer| peer.ip())).await {
        // Boxed for the session's sake (see `runner_connection::run`).
        Ok(admission) => Box::new(admission),
        Err(refused) => return busy(peer, refused),
    };
    // The token is checked before upgrading, so a bad one gets a plain 401
    // the runner can report, not a socket that closes at once.
    let (token, environment) =
        match authenticate_limited(&state, &headers, peer, Purpose::Use).await {
            Ok(found) => found,
            Err(error) => return error.into_response(),
        };
    if let Err(refused) = admission.claim_environment(&environment.id) {
        return busy(peer, refused);
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let context = Box::new(ConnectionContext {
        state: state.clone(),
        environment,
        token_hash: token.token_hash,
    });
    let in_flight = state.connections.token();
    let config = tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(runner_proto::MAX_FRAME_BYTES))
        .max_frame_size(Some(runner_proto::MAX_FRAME_BYTES))
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_write_buffer_size(MAX_WRITE_BUFFER_BYTES);
    upgrade.on_upgrade(config, move |socket| {
        // Boxed before the future captures it (see `runner_connection::run`).
        let socket = Box::new(socket);
        async move {
            // Held for the life of the connection, so shutdown can wait for it.
            let _in_flight = in_flight;
            runner_connection::run(socket, context, admission).await;
        }
    })
}
