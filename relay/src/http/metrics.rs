//! `GET /metrics`: on the API port behind the scrape token
//! (`--metrics-token-file`), or on its own listener (`--metrics-addr`)
//! without one; and the layer that counts API requests by route and
//! status. The choices are explained in docs/metrics.md.

use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::auth::bearer;
use super::error::ApiError;
use super::{METRICS, ROUTES};
use crate::metrics::labels::AuthFailure;
use crate::metrics::{Metrics, CONTENT_TYPE};
use crate::routing::CallRouter;
use crate::state::AppState;
use crate::status;

/// The `route` label of a request no route matched.
const UNMATCHED: &str = "unmatched";
/// Bound on reading the environments for the `environments` gauges.
const ENVIRONMENTS_TIMEOUT: Duration = Duration::from_secs(5);
/// In shared mode, the environments' statuses are read at most this often:
/// each needs the store (other relays hold the sockets).
const SHARED_ENVIRONMENTS_INTERVAL: Duration = Duration::from_secs(30);

/// Counts every answered API request by method, matched route (the
/// route's pattern from the router, never the path the client sent) and
/// status.
pub(super) async fn count_requests(
    State(metrics): State<Metrics>,
    request: Request,
    next: Next,
) -> Response {
    if !metrics.enabled() {
        return next.run(request).await;
    }
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, |matched| route_label(matched.as_str()));
    let response = next.run(request).await;
    metrics.http_request(method, route, response.status().as_u16());
    response
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// The router's own copy of a matched pattern (so the label is a
/// `'static` word from a closed set).
fn route_label(matched: &str) -> &'static str {
    ROUTES
        .iter()
        .map(|(_, path)| *path)
        .find(|path| *path == matched)
        .unwrap_or(UNMATCHED)
}

/// `GET /metrics` on the API port: only with the scrape token.
pub(super) async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let metrics = &state.metrics;
    if !metrics.enabled() {
        return disabled().into_response();
    }
    if !metrics.scrape_token_set() {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "metrics_not_served",
            "this relay serves /metrics on its API port only with a scrape token (serve --metrics-token-file), or on its own listener (serve --metrics-addr)",
        )
        .into_response();
    }
    match bearer(&headers) {
        None => {
            metrics.auth_failure(AuthFailure::MissingCredential);
            ApiError::unauthorized("missing scrape token: send `Authorization: Bearer <token>`")
                .into_response()
        }
        Some(token) if !metrics.scrape_token_matches(token) => {
            metrics.auth_failure(AuthFailure::InvalidMetricsToken);
            ApiError::unauthorized("invalid scrape token").into_response()
        }
        Some(_) => exposition(&state).await,
    }
}

/// `GET /metrics` on the `--metrics-addr` listener: no credential (it is
/// bound to loopback unless the operator said otherwise).
async fn open_scrape(State(state): State<AppState>) -> Response {
    if !state.metrics.enabled() {
        return disabled().into_response();
    }
    exposition(&state).await
}

fn disabled() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "metrics_disabled",
        "metrics are off on this relay (serve --no-metrics)",
    )
}

async fn exposition(state: &AppState) -> Response {
    refresh(state).await;
    let Some(text) = state.metrics.encode() else {
        return disabled().into_response();
    };
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The gauges read at scrape time: runners connected here, environments
/// by status.
async fn refresh(state: &AppState) {
    state.metrics.set_runners_connected(state.local.connected());
    // One relay: the store is local and presences are in memory, so every
    // scrape reads afresh.
    let interval = if state.cluster.is_some() {
        SHARED_ENVIRONMENTS_INTERVAL
    } else {
        Duration::ZERO
    };
    if !state.metrics.environments_due(interval) {
        return;
    }
    match tokio::time::timeout(ENVIRONMENTS_TIMEOUT, environment_statuses(state)).await {
        Ok(Ok(counts)) => state.metrics.set_environments(&counts),
        Ok(Err(error)) => tracing::warn!(%error, "metrics: cannot read the environments"),
        Err(_elapsed) => tracing::warn!("metrics: reading the environments timed out"),
    }
    // Pending approvals from the store: expiry and decisions made by other
    // relays change the count without an event here.
    let pending = state.store.list_approvals(
        Some(runner_proto::approvals::ApprovalStatus::Pending),
        state.clock.now(),
        MAX_PENDING_COUNTED,
    );
    match tokio::time::timeout(ENVIRONMENTS_TIMEOUT, pending).await {
        Ok(Ok(pending)) => state.metrics.set_approvals_pending(pending.len()),
        Ok(Err(error)) => tracing::warn!(%error, "metrics: cannot read the pending approvals"),
        Err(_elapsed) => tracing::warn!("metrics: reading the pending approvals timed out"),
    }
}

/// Pending approvals counted at a scrape, at most (a gauge that reads this
/// much says "at least").
const MAX_PENDING_COUNTED: u32 = 10_000;

async fn environment_statuses(
    state: &AppState,
) -> Result<Vec<(&'static str, usize)>, crate::store::StoreError> {
    let now = state.clock.now();
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for mut environment in state.store.list_environments().await? {
        state.seen.apply(&mut environment);
        let presence = state.router.presence(&environment.id).await;
        let (status, _) = status::compute(&environment, presence.as_deref(), &state.health, now);
        let name = status.as_str();
        match counts.iter_mut().find(|(known, _)| *known == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    Ok(counts)
}

/// Serves `GET /metrics` (no credential) on `listener` until `shutdown`.
pub async fn serve_metrics(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route(METRICS, get(open_scrape))
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "route_not_found",
                "this listener serves GET /metrics only",
            )
        })
        .with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_its_own_label_and_anything_else_is_unmatched() {
        for (_, path) in ROUTES {
            assert_eq!(route_label(path), *path);
        }
        assert_eq!(route_label("/execution-environments/env_123"), UNMATCHED);
        assert_eq!(
            method_label(&Method::from_bytes(b"BREW").expect("method")),
            "other"
        );
    }
}
